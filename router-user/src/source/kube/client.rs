//! The Kubernetes client: from a kubeconfig file, or from the pod's service account when running in a cluster.

use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::KubeError;

/// A client for `kubeconfig` (its current context), or the in-cluster configuration when `None`.
pub async fn connect(kubeconfig: Option<&Path>) -> Result<Client, KubeError> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .map_err(|source| KubeError::Kubeconfig { path: path.to_path_buf(), source })?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|source| KubeError::Kubeconfig { path: path.to_path_buf(), source })?
        }
        None => Config::incluster()?,
    };
    // kube-client builds its TLS configuration on rustls's process default provider.
    crate::tls::install_process_default();
    Client::try_from(config).map_err(KubeError::Client)
}
