//! The route sets every contender serves, from the workspace's one manifest generator (`manifest-gen`): routes,
//! their Services and EndpointSlices (4 pods each), written as the router's manifests. The HAProxy configuration
//! is generated from the same `RouteSet` (see `haproxy.rs`), so both proxies see the same hosts, paths, pods and
//! order.

use std::path::Path;

use anyhow::Context as _;

pub use manifest_gen::{BenchRoute, Certificates, Manifest, Pod, RouteSet, Termination, DOMAIN, NAMESPACE};

/// Writes `set` as one multi-document manifest file, atomically (temp name, then rename).
pub fn write_manifests(set: &RouteSet, file: &Path) -> anyhow::Result<()> {
    write_atomically(file, &set.to_yaml())
}

/// Writes `contents` to `file` through a hidden temp file in the same directory and a rename, so a watcher
/// never reads a half-written file.
pub fn write_atomically(file: &Path, contents: &str) -> anyhow::Result<()> {
    let name = file.file_name().and_then(|n| n.to_str()).context("manifest file name")?;
    let staging = file.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&staging, contents).with_context(|| format!("writing {}", staging.display()))?;
    std::fs::rename(&staging, file).with_context(|| format!("renaming to {}", file.display()))
}
