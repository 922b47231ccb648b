//! Where the router's view of the world comes from: manifest files or the Kubernetes API.

pub mod kube;
pub mod manifest;

use std::path::PathBuf;

use crate::model;

/// Which source the router reads (`--source`); unset, it follows from the other settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceKind {
    /// Manifest files (`--manifests`), watched.
    Manifests,
    /// The Kubernetes API (`--kubeconfig`, or the pod's service account).
    Kube,
}

/// The source the router will read, resolved from the settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceChoice {
    Manifests(PathBuf),
    /// A kubeconfig file, or `None` for the pod's service account.
    Kube(Option<PathBuf>),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SourceChoiceError {
    #[error(
        "no source configured: give --manifests PATH, or --kubeconfig PATH (or run in a pod) for the Kubernetes API"
    )]
    None,
    #[error("--source manifests needs --manifests PATH")]
    NoManifests,
}

/// Picks the source: `--source` when given; else manifests when `--manifests` is set; else the Kubernetes API
/// when a kubeconfig is given or `in_cluster` (KUBERNETES_SERVICE_HOST is set).
pub fn choose_source(
    kind: Option<SourceKind>,
    manifests: Option<&PathBuf>,
    kubeconfig: Option<&PathBuf>,
    in_cluster: bool,
) -> Result<SourceChoice, SourceChoiceError> {
    match (kind, manifests) {
        (Some(SourceKind::Manifests), Some(path)) | (None, Some(path)) => Ok(SourceChoice::Manifests(path.clone())),
        (Some(SourceKind::Manifests), None) => Err(SourceChoiceError::NoManifests),
        (Some(SourceKind::Kube), _) => Ok(SourceChoice::Kube(kubeconfig.cloned())),
        (None, None) if kubeconfig.is_some() || in_cluster => Ok(SourceChoice::Kube(kubeconfig.cloned())),
        (None, None) => Err(SourceChoiceError::None),
    }
}

/// One complete view of the world, from any source.
#[derive(Clone, Debug, Default)]
pub struct SourceUpdate {
    /// The whole state: every object the source currently holds, never a delta.
    pub snapshot: model::Snapshot,
    /// Problems the source has with its input as it stands now (for manifests: every file currently
    /// broken).
    pub errors: Vec<manifest::ManifestError>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_follows_the_flags() {
        let files = PathBuf::from("/m");
        let config = PathBuf::from("/k");
        let manifests = Some(SourceChoice::Manifests(files.clone()));
        assert_eq!(choose_source(None, Some(&files), Some(&config), true).ok(), manifests);
        assert_eq!(choose_source(None, None, Some(&config), false), Ok(SourceChoice::Kube(Some(config.clone()))));
        assert_eq!(choose_source(None, None, None, true), Ok(SourceChoice::Kube(None)));
        assert_eq!(choose_source(None, None, None, false), Err(SourceChoiceError::None));
        assert_eq!(choose_source(Some(SourceKind::Kube), Some(&files), None, false), Ok(SourceChoice::Kube(None)));
        assert_eq!(choose_source(Some(SourceKind::Manifests), None, None, true), Err(SourceChoiceError::NoManifests));
    }
}
