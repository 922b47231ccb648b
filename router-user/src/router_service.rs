//! The router's own Service (`--router-service NAMESPACE/NAME`): its name as a setting, this node's name, and the
//! task that re-derives its view from this node ([`LocalService`]) from every snapshot, for the XDP nodePort sync
//! and the load-balancer probe.

use std::str::FromStr;
use std::sync::Arc;

use tokio::sync::watch;

use crate::model::{LocalService, ObjectKey, Snapshot};

/// `--router-service NAMESPACE/NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouterServiceName(pub ObjectKey);

impl FromStr for RouterServiceName {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once('/') {
            Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(RouterServiceName(ObjectKey::new(namespace, name)))
            }
            _ => Err(format!("expected NAMESPACE/NAME, got {text:?}")),
        }
    }
}

impl std::fmt::Display for RouterServiceName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Re-derives the router Service's local view from every snapshot `snapshots` sees and publishes
/// it on `out` when it changed. Runs until `snapshots`' sender or every receiver of `out` is gone.
pub async fn follow(
    mut snapshots: watch::Receiver<Arc<Snapshot>>,
    service: ObjectKey,
    node_name: String,
    out: watch::Sender<Option<LocalService>>,
) {
    loop {
        let snapshot = snapshots.borrow_and_update().clone();
        let local = LocalService::derive(&snapshot, &service, &node_name);
        out.send_if_modified(|current| {
            if current.as_ref() == Some(&local) {
                return false;
            }
            tracing::info!(
                service = %local.service,
                node = %node_name,
                found = local.found,
                node_ports = ?local.node_ports.iter().map(|p| p.node_port).collect::<Vec<_>>(),
                health_check_node_port = ?local.health_check_node_port,
                local_endpoints = local.local_endpoint_count(),
                "router service changed"
            );
            *current = Some(local);
            true
        });
        if out.is_closed() || snapshots.changed().await.is_err() {
            return;
        }
    }
}

/// This node's name: `configured` (`NODE_NAME`), else the host name (the kubelet's default).
#[allow(unsafe_code)] // gethostname(2)
pub fn node_name_or_hostname(configured: Option<&str>) -> String {
    if let Some(name) = configured.filter(|n| !n.is_empty()) {
        return name.to_owned();
    }
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its whole length, which is what is passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    if rc != 0 {
        return String::new();
    }
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_name_parses() {
        assert_eq!("ns/name".parse::<RouterServiceName>().map(|n| n.0), Ok(ObjectKey::new("ns", "name")));
        assert!("ns".parse::<RouterServiceName>().is_err());
        assert!("/name".parse::<RouterServiceName>().is_err());
        assert!("a/b/c".parse::<RouterServiceName>().is_err());
    }
}
