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
    #[error("the API server did not answer the access checks within {after:?}")]
    Unanswered { after: std::time::Duration },
    #[error("writing the status of route {route}: {source}")]
    Status { route: String, source: kube::Error },
}

impl KubeError {
    /// True when the API server could not be reached or answered with a server-side error (5xx, 429): worth
    /// retrying. RBAC denial, a missing CRD or a bad kubeconfig are not: they need an operator.
    pub fn is_transient(&self) -> bool {
        match self {
            KubeError::Preflight { source: kube::Error::Api(status), .. } => status.code >= 500 || status.code == 429,
            KubeError::Preflight { .. } | KubeError::Unanswered { .. } => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn preflight(source: kube::Error) -> KubeError {
        KubeError::Preflight { verb: "list", resource: "routes.route.openshift.io/v1".into(), source }
    }

    #[test]
    fn only_an_unreachable_or_failing_server_is_retried() {
        let api = |code| kube::Error::Api(Status::failure("x", "y").with_code(code).boxed());
        assert!(preflight(api(503)).is_transient(), "server not ready");
        assert!(preflight(api(429)).is_transient(), "throttled");
        assert!(preflight(kube::Error::Service("connection refused".into())).is_transient(), "unreachable");
        assert!(KubeError::Unanswered { after: std::time::Duration::from_secs(1) }.is_transient());
        assert!(!preflight(api(401)).is_transient(), "bad credentials need an operator");
        let forbidden = KubeError::Forbidden { verb: "list", resource: "routes".into(), message: String::new() };
        assert!(!forbidden.is_transient());
        assert!(!KubeError::MissingCrd { resource: "routes".into() }.is_transient());
    }
}
