//! What can go wrong when the Kubernetes source starts or writes status, with the object or resource named.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error("reading kubeconfig {path}: {source}")]
    Kubeconfig { path: PathBuf, source: kube::config::KubeconfigError },
    #[error("no kubeconfig given and not running in a pod: {0}")]
    InCluster(#[from] kube::config::InClusterError),
    #[error("building the Kubernetes client: {0}")]
    Client(#[source] kube::Error),
    #[error("RBAC: the router may not {verb} {resource} cluster-wide ({message}); apply deploy/rbac.yaml")]
    Forbidden { verb: &'static str, resource: String, message: String },
    #[error("the API server does not serve {resource}: apply deploy/crd.yaml")]
    MissingCrd { resource: String },
    #[error("cannot {verb} {resource} at start: {source}")]
    Preflight { verb: &'static str, resource: String, source: kube::Error },
    #[error("writing the status of route {route}: {source}")]
    Status { route: String, source: kube::Error },
}
