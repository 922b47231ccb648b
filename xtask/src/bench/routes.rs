//! The route sets every contender serves, from the workspace's one manifest generator (`manifest-gen`): routes,
//! their Services and EndpointSlices (4 pods each), written as the router's manifests. The HAProxy configuration
//! is generated from the same `RouteSet` (see `haproxy.rs`), so both proxies see the same hosts, paths, pods and
//! order. A scenario's target route may get a certificate of its own (HTTP/2 is offered only on such a one).

use std::path::Path;

use anyhow::Context as _;

pub use manifest_gen::{BenchRoute, Certificates, Manifest, Pod, RouteSet, Termination, DOMAIN, NAMESPACE};

/// Gives the target route of `termination` (the one the scenarios of that kind load) the certificate `own`.
pub fn give_own_certificate(set: &mut RouteSet, termination: Termination, own: Certificates) {
    let Some(target) = set.target_of(termination).map(|route| route.key()) else { return };
    if let Some(route) = set.routes.iter_mut().find(|route| route.key() == target) {
        route.certificates = Some(own);
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn certificates(name: &str) -> Certificates {
        Certificates {
            certificate: name.into(),
            key: format!("{name}-key"),
            ca_certificate: None,
            destination_ca: None,
        }
    }

    #[test]
    fn only_the_target_of_the_termination_gets_its_own_certificate() {
        let pods = [Pod { name: "pod".into(), ip: std::net::Ipv4Addr::LOCALHOST, port: 8080 }];
        let mut set = RouteSet::mixed(3, &pods, &pods, &certificates("shared"), &certificates("shared-re"));
        let target = set.target_of(Termination::Edge).expect("an edge target").host.clone();
        give_own_certificate(&mut set, Termination::Edge, certificates("own"));
        let own: Vec<&str> = set
            .routes
            .iter()
            .filter(|route| route.certificates.as_ref().is_some_and(|tls| tls.certificate == "own"))
            .map(|route| route.host.as_str())
            .collect();
        assert_eq!(own, [target.as_str()]);
        let shared = set
            .routes
            .iter()
            .filter(|route| route.certificates.as_ref().is_some_and(|tls| tls.certificate == "shared"));
        assert_eq!(shared.count(), 2, "the other edge routes keep the shared certificate");
    }
}
