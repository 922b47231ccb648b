//! Where the router's view of the world comes from: manifest files or the Kubernetes API.

pub mod manifest;

use crate::model;

/// One complete view of the world, from any source.
#[derive(Clone, Debug, Default)]
pub struct SourceUpdate {
    /// The whole state: every object the source currently holds, never a delta.
    pub snapshot: model::Snapshot,
    /// Problems the source has with its input as it stands now (for manifests: every file currently
    /// broken).
    pub errors: Vec<manifest::ManifestError>,
}
