//! The TLS side of compiling a route: its certificate (checked by the extended validation, memoised across
//! rebuilds) and, for reencrypt, the client configuration and pooled connections to its pods (kept across
//! rebuilds while the route and its destination CA stay the same, so a route change does not drop them), and
//! its client certificate check (`client_tls`).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::sign::CertifiedKey;
use rustls::RootCertStore;

use super::client_tls::client_auth;
use super::Termination;
use crate::admission::{Admitted, Rejection};
use crate::model::{ObjectKey, PemText, Snapshot, TlsConfig};
use crate::tls::{destination_ca, reencrypt_client, CertCache};
use crate::tls::{ReencryptClient, ReencryptTls, ReencryptUpstream, RouteClientAuth};

/// Router-wide TLS inputs of a table build.
#[derive(Clone, Default)]
pub struct TlsBuild {
    /// Served for unknown SNI and routes without a certificate; `None`: :443 is not served.
    pub default_certificate: Option<Arc<CertifiedKey>>,
    /// `DEFAULT_DESTINATION_CA_PATH`.
    pub default_destination_ca: Option<Arc<RootCertStore>>,
    pub connect_timeout: Duration,
    pub certs: Arc<CertCache>,
    /// ROUTER_MUTUAL_TLS_AUTH is not `none`: the router-wide check applies to every route, and the routes'
    /// own client certificate annotations are ignored (with a warning).
    pub global_client_auth: bool,
    reencrypt: Arc<Mutex<ReencryptCache>>,
}

impl fmt::Debug for TlsBuild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsBuild")
            .field("default_certificate", &self.default_certificate.is_some())
            .field("default_destination_ca", &self.default_destination_ca.is_some())
            .finish_non_exhaustive()
    }
}

/// What a route brings to :443.
#[derive(Default)]
pub struct RouteTls {
    pub termination: Option<Termination>,
    /// The route's own certificate (edge and reencrypt).
    pub certificate: Option<Arc<CertifiedKey>>,
    pub reencrypt: Option<Arc<ReencryptUpstream>>,
    /// The route's own client certificate check (edge and reencrypt).
    pub client_auth: Option<Arc<RouteClientAuth>>,
    /// Why the route's client certificate annotations are not used, when they are not.
    pub warning: Option<String>,
}

/// A reencrypt upstream's route, Service and destination CA.
type UpstreamKey = (String, String, Option<PemText>);

/// Reencrypt upstreams by route and destination CA, and their client configurations by destination CA;
/// entries not used by the last build are dropped.
#[derive(Default)]
struct ReencryptCache {
    entries: HashMap<UpstreamKey, (bool, Arc<ReencryptUpstream>)>,
    /// By the destination CA's PEM text. Thousands of routes usually share a handful of CAs (the
    /// cluster's service CA above all); one configuration with its session cache is about 8 KB.
    clients: HashMap<Option<PemText>, (bool, ReencryptClient)>,
}

impl TlsBuild {
    pub fn new(
        default_certificate: Option<Arc<CertifiedKey>>,
        default_destination_ca: Option<Arc<RootCertStore>>,
        connect_timeout: Duration,
    ) -> Self {
        Self { default_certificate, default_destination_ca, connect_timeout, ..Self::default() }
    }

    /// The route's TLS material, or its `ExtendedValidationFailed` (`ExternalCertificateValidationFailed`,
    /// `ClientTLSValidationFailed`) rejection.
    pub fn route(&self, admitted: &Admitted<'_>, snapshot: &Snapshot) -> Result<RouteTls, Rejection> {
        let invalid = |message: String| Rejection::new("ExtendedValidationFailed", message);
        let Some(tls) = &admitted.route.spec.tls else {
            client_auth(admitted, None, snapshot, self.global_client_auth)?;
            return Ok(RouteTls::default());
        };
        let with_external;
        let tls = match &tls.external_certificate {
            Some(reference) if tls.termination != "passthrough" => {
                with_external = external_certificate(tls, admitted.namespace(), &reference.name, snapshot)?;
                &with_external
            }
            _ => tls,
        };
        let termination = Termination::parse(&tls.termination);
        let (client_auth, warning) = client_auth(admitted, Some(tls), snapshot, self.global_client_auth)?;
        let mut material = RouteTls { termination, client_auth, warning, ..RouteTls::default() };
        if termination == Some(Termination::Passthrough) {
            return Ok(material);
        }
        material.certificate = self.certs.route_certificate(tls).map_err(|e| invalid(e.to_string()))?;
        if termination == Some(Termination::Reencrypt) {
            let destination = tls.destination_ca_certificate.as_ref().filter(|pem| !pem.trim().is_empty());
            let service = &admitted.route.spec.to.name;
            let key = (admitted.key.to_string(), service.clone(), destination.cloned());
            let mut cache = self.reencrypt.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let cache = &mut *cache;
            if let Some((used, upstream)) = cache.entries.get_mut(&key) {
                *used = true;
                material.reencrypt = Some(upstream.clone());
                return Ok(material);
            }
            let client = match cache.clients.get_mut(&key.2) {
                Some((used, client)) => {
                    *used = true;
                    client.clone()
                }
                None => {
                    let ca = match destination {
                        Some(pem) => Some(destination_ca(pem).map_err(|e| invalid(e.to_string()))?),
                        None => None,
                    };
                    let client = reencrypt_client(ca.as_ref(), self.default_destination_ca.as_ref());
                    cache.clients.insert(key.2.clone(), (true, client.clone()));
                    client
                }
            };
            let tls = ReencryptTls::new(client, service, admitted.namespace());
            let upstream = Arc::new(ReencryptUpstream::new(tls, self.connect_timeout));
            cache.entries.insert(key, (true, upstream.clone()));
            material.reencrypt = Some(upstream);
        }
        Ok(material)
    }
}

/// The route's TLS settings with certificate and key taken from its `externalCertificate` Secret (same
/// namespace, type kubernetes.io/tls).
fn external_certificate(
    tls: &TlsConfig,
    namespace: &str,
    name: &str,
    snapshot: &Snapshot,
) -> Result<TlsConfig, Rejection> {
    let failed = |message: String| Err(Rejection::new("ExternalCertificateValidationFailed", message));
    if tls.certificate.as_deref().is_some_and(|c| !c.trim().is_empty()) {
        return failed("spec.tls.certificate: Invalid value: cannot be set with spec.tls.externalCertificate".into());
    }
    let key = ObjectKey::new(namespace, name);
    if snapshot.unreadable_secrets.contains(&key) {
        return failed(
            "spec.tls.externalCertificate: Forbidden: router serviceaccount does not have permission to get this secret"
                .into(),
        );
    }
    let Some(secret) = snapshot.secrets.get(&key) else {
        return failed(format!("spec.tls.externalCertificate: Not found: secrets {name:?} not found"));
    };
    if secret.type_.as_deref() != Some("kubernetes.io/tls") {
        return failed(format!(
            "spec.tls.externalCertificate: Invalid value: secret {name:?} is not of type kubernetes.io/tls"
        ));
    }
    let text = |key: &str| {
        let bytes = secret.data.as_ref().and_then(|data| data.get(key))?;
        String::from_utf8(bytes.0.clone()).ok()
    };
    let (Some(certificate), Some(key)) = (text("tls.crt"), text("tls.key")) else {
        return failed(format!(
            "spec.tls.externalCertificate: Invalid value: secret {name:?} lacks tls.crt or tls.key"
        ));
    };
    Ok(TlsConfig { certificate: Some(certificate.into()), key: Some(key.into()), ..tls.clone() })
}

impl TlsBuild {
    /// Forgets what the build that just finished did not use, unless a table still holds it (a shard taken
    /// over from the previous table does not ask again for its routes' material).
    pub fn sweep(&self) {
        self.certs.sweep();
        let mut cache = self.reencrypt.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        cache.entries.retain(|_, (used, upstream)| std::mem::take(used) || Arc::strong_count(upstream) > 1);
        // A configuration is shared by the upstreams built from it, wherever they are still held.
        cache.clients.retain(|_, (used, client)| std::mem::take(used) || client.holders() > 1);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::model::Route;
    use crate::table::{build, BuildOptions};
    use crate::tls::default_certificate;
    use crate::tls::test_pki::Pki;

    fn reencrypt_route(name: &str, destination_ca: &str) -> Route {
        let indented: String = destination_ca.lines().map(|line| format!("      {line}\n")).collect();
        let yaml = format!(
            "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {{name: {name}, namespace: ns}}\nspec:\n  host: {name}.example.com\n  to: {{kind: Service, name: {name}}}\n  tls:\n    termination: reencrypt\n    destinationCACertificate: |\n{indented}"
        );
        serde_saphyr::from_str(&yaml).unwrap()
    }

    #[test]
    fn reencrypt_routes_with_one_destination_ca_share_a_client_configuration() {
        let (first, second) = (Pki::new(), Pki::named("Other CA"));
        let mut snapshot = Snapshot::default();
        for (name, pki) in [("one", &first), ("two", &first), ("three", &second)] {
            snapshot.routes.insert(ObjectKey::new("ns", name), Arc::new(reencrypt_route(name, &pki.ca.pem())));
        }
        let default = default_certificate(None, None).unwrap();
        let tls = TlsBuild::new(Some(default), None, Duration::from_secs(1));
        let options = BuildOptions { allow_loopback_endpoints: true, tls, ..Default::default() };
        let table = build(&snapshot, &options, 1);
        assert_eq!(table.routes_admitted(), 3);
        let counts = || {
            let cache = options.tls.reencrypt.lock().unwrap();
            let mut holders: Vec<usize> = cache.clients.values().map(|(_, client)| client.holders()).collect();
            holders.sort_unstable();
            (cache.entries.len(), holders)
        };
        // The cache's own handle and one per upstream: the first CA's configuration serves two routes.
        assert_eq!(counts(), (3, vec![2, 3]), "an upstream per route, a configuration per destination CA");
        drop(table);
        options.tls.sweep();
        options.tls.sweep();
        assert_eq!(counts(), (0, vec![]), "neither is kept once no table holds it");
    }
}
