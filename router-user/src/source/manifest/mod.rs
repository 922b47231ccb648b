//! The manifest source: Kubernetes objects from YAML/JSON files (`--manifests PATH`), watched.
//!
//! - `yaml`: the YAML reader's options, and an error's line and reason.
//! - `block_yaml`: a fast reader for plain block-style documents; anything else goes to `yaml`.
//! - `document`: splits a file into YAML documents with their first file line, and locates nodes
//!   (list items, the field a path names) in them.
//! - `parse`: turns one file's text into a per-file `Snapshot` plus `ManifestError`s.
//! - `keep`: what is kept of each decoded object (Services and endpoints as the few fields the router reads).
//! - `tree`: lists the manifest files under a path and fingerprints them for the poll fallback.
//! - `store`: `ManifestSource`, the per-file last-good cache merged into one `SourceUpdate`.
//! - `watch`: `spawn_watch`, notify events plus a slow poll, debounced, sending a `SourceUpdate`
//!   per change.

// pub(crate) for `crate::fuzzing`, which checks it against the full reader.
pub(crate) mod block_yaml;
mod document;
mod error;
mod keep;
// pub(crate) for `crate::fuzzing`, which reads manifest files with it.
pub(crate) mod parse;
mod store;
mod tree;
mod watch;
mod yaml;

pub use error::ManifestError;
pub use store::ManifestSource;
pub use watch::spawn_watch;
#[cfg(test)]
mod churn_tests;
