//! rustls client configurations for reencrypt routes, the three cases of the OpenShift router: with a
//! `destinationCACertificate`, the pod's chain must verify against it and its name is not checked; else with
//! DEFAULT_DESTINATION_CA_PATH, the chain must verify against that bundle and the certificate must be valid for
//! `<service>.<namespace>.svc` (HAProxy `verifyhost`); else the pod's certificate is not verified at all. The
//! SNI sent is `<service>.<namespace>.svc` and ALPN offers `h2, http/1.1`, as the OpenShift router's reencrypt
//! servers do (`alpn h2,http/1.1`): the pod picks.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::ServerCertVerifier;
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::{CertificateDer, ServerName};

use super::cert_error::CertError;
use super::certs::roots;
use super::pem;
use super::pod_verifier::PodVerifier;
use super::provider;

/// How the pod's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verification {
    /// Chain verified against the route's `destinationCACertificate`; name not checked.
    DestinationCa,
    /// Chain verified against DEFAULT_DESTINATION_CA_PATH and valid for `<service>.<namespace>.svc`.
    DefaultCaWithHostname,
    /// Not verified (only the handshake signatures are checked).
    None,
}

#[derive(Clone)]
pub struct ReencryptTls {
    pub config: Arc<ClientConfig>,
    /// `<service>.<namespace>.svc`, sent as SNI.
    pub server_name: ServerName<'static>,
    pub verify: Verification,
}

impl std::fmt::Debug for ReencryptTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReencryptTls").field("server_name", &self.server_name).field("verify", &self.verify).finish()
    }
}

/// The client side of a reencrypt route to `service` in `namespace`.
pub fn reencrypt_tls(
    destination_ca: Option<&Arc<RootCertStore>>,
    default_ca: Option<&Arc<RootCertStore>>,
    service: &str,
    namespace: &str,
) -> ReencryptTls {
    ReencryptTls::new(reencrypt_client(destination_ca, default_ca), service, namespace)
}

/// A client configuration for reencrypt routes (`None` CA: the route has no `destinationCACertificate`).
/// It depends on the CA alone, so routes with the same destination CA share one, with its session cache
/// (sessions are kept per `<service>.<namespace>.svc` name, checked against that same CA).
#[derive(Clone)]
pub struct ReencryptClient {
    config: Arc<ClientConfig>,
    verify: Verification,
}

impl ReencryptClient {
    /// How many hold this configuration: each copy of this handle and each upstream built from it.
    pub fn holders(&self) -> usize {
        Arc::strong_count(&self.config)
    }
}

impl ReencryptTls {
    pub fn new(client: ReencryptClient, service: &str, namespace: &str) -> ReencryptTls {
        ReencryptTls { config: client.config, server_name: service_name(service, namespace), verify: client.verify }
    }
}

pub fn reencrypt_client(
    destination_ca: Option<&Arc<RootCertStore>>,
    default_ca: Option<&Arc<RootCertStore>>,
) -> ReencryptClient {
    let provider = Arc::new(provider::chosen().crypto_provider());
    let algorithms = provider.signature_verification_algorithms;
    let (verifier, verify): (Arc<dyn ServerCertVerifier>, Verification) = match (destination_ca, default_ca) {
        (Some(roots), _) => {
            (Arc::new(PodVerifier::chain_only(Arc::clone(roots), algorithms)), Verification::DestinationCa)
        }
        (None, Some(roots)) => {
            match WebPkiServerVerifier::builder_with_provider(Arc::clone(roots), Arc::clone(&provider)).build() {
                Ok(verifier) => (verifier, Verification::DefaultCaWithHostname),
                // Only an empty root store fails to build; checking the chain alone then fails every handshake too.
                Err(e) => {
                    tracing::warn!(error = %e, "default destination CA unusable; reencrypt pods will fail verification");
                    (
                        Arc::new(PodVerifier::chain_only(Arc::clone(roots), algorithms)),
                        Verification::DefaultCaWithHostname,
                    )
                }
            }
        }
        (None, None) => (Arc::new(PodVerifier::any_certificate(algorithms)), Verification::None),
    };
    let mut config =
        client_builder(provider).dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    ReencryptClient { config: Arc::new(config), verify }
}

/// A PEM bundle of CA certificates from a file (DEFAULT_DESTINATION_CA_PATH, ROUTER_MUTUAL_TLS_AUTH_CA).
pub fn load_ca_bundle(path: &Path) -> Result<Arc<RootCertStore>, CertError> {
    let certs = load_ca_certificates(path)?;
    roots(&certs).map(Arc::new).map_err(|detail| CertError::File { path: path.to_path_buf(), detail })
}

/// The certificates of a PEM bundle file (at least one).
pub fn load_ca_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, CertError> {
    let file_error = |detail: String| CertError::File { path: path.to_path_buf(), detail };
    let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
    let certs = pem::certificates(&text).map_err(file_error)?;
    if certs.is_empty() {
        return Err(file_error("no certificates found".to_string()));
    }
    Ok(certs)
}

fn client_builder(provider: Arc<CryptoProvider>) -> rustls::ConfigBuilder<ClientConfig, rustls::WantsVerifier> {
    match ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions() {
        Ok(builder) => builder,
        // Both providers always offer suites for the default versions; fall back to the process default.
        Err(e) => {
            tracing::error!(error = %e, "the crypto provider refused the default TLS versions");
            ClientConfig::builder()
        }
    }
}

/// `<service>.<namespace>.svc`; Kubernetes names are DNS labels, so this is always a DNS name in practice.
fn service_name(service: &str, namespace: &str) -> ServerName<'static> {
    let name = format!("{service}.{namespace}.svc");
    match ServerName::try_from(name) {
        Ok(name) => name,
        Err(e) => {
            tracing::warn!(service, namespace, error = %e, "service name is not a DNS name; no SNI sent");
            ServerName::IpAddress(IpAddr::V4(Ipv4Addr::UNSPECIFIED).into())
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::test_pki::{self, Leaf, Pki};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn store(pki: &Pki) -> Arc<RootCertStore> {
        let mut roots = RootCertStore::empty();
        roots.add(pki.ca.der().clone()).unwrap();
        Arc::new(roots)
    }

    /// Runs a TLS pod serving `leaf` and connects with `tls`; returns the client's handshake result.
    async fn connect(tls: &ReencryptTls, leaf: &Leaf) -> Result<Option<Vec<u8>>, std::io::Error> {
        let key = rustls_pki_types::PrivateKeyDer::Pkcs8(leaf.key.serialize_der().into());
        let mut server =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![leaf.cert.der().clone()], key)
                .unwrap();
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let pod = tokio::spawn(async move {
            if let Ok(mut stream) = acceptor.accept(server_io).await {
                let sni = stream.get_ref().1.server_name().map(str::to_string);
                let _ = stream.write_all(sni.unwrap_or_default().as_bytes()).await;
                let _ = stream.shutdown().await;
            }
        });
        let connector = tokio_rustls::TlsConnector::from(Arc::clone(&tls.config));
        let result = connector.connect(tls.server_name.clone(), client_io).await;
        let out = match result {
            Ok(mut stream) => {
                let alpn = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
                let mut sni = String::new();
                stream.read_to_string(&mut sni).await?;
                assert_eq!(sni, "web.shop.svc", "SNI sent to the pod");
                Ok(alpn)
            }
            Err(e) => Err(e),
        };
        pod.await.unwrap();
        out
    }

    #[tokio::test]
    async fn destination_ca_verifies_the_chain_but_not_the_name() {
        let pki = Pki::new();
        let pod = pki.leaf("some-other-name.example");
        let tls = reencrypt_tls(Some(&store(&pki)), None, "web", "shop");
        assert_eq!(tls.verify, Verification::DestinationCa);
        let alpn = connect(&tls, &pod).await.unwrap();
        assert_eq!(alpn.as_deref(), Some(&b"h2"[..]), "h2 offered, and the pod picked it");

        let wrong = Pki::named("Wrong CA");
        let tls = reencrypt_tls(Some(&store(&wrong)), Some(&store(&pki)), "web", "shop");
        assert_eq!(tls.verify, Verification::DestinationCa, "the route's CA wins over the default");
        assert!(connect(&tls, &pod).await.is_err());
    }

    #[tokio::test]
    async fn default_ca_checks_chain_and_service_host_name() {
        let pki = Pki::new();
        let tls = reencrypt_tls(None, Some(&store(&pki)), "web", "shop");
        assert_eq!(tls.verify, Verification::DefaultCaWithHostname);
        assert!(connect(&tls, &pki.leaf("web.shop.svc")).await.is_ok());
        assert!(connect(&tls, &pki.leaf("other.shop.svc")).await.is_err(), "wrong host name");
        assert!(connect(&tls, &Pki::named("Other").leaf("web.shop.svc")).await.is_err(), "wrong CA");
    }

    #[tokio::test]
    async fn without_any_ca_a_self_signed_pod_is_accepted() {
        let tls = reencrypt_tls(None, None, "web", "shop");
        assert_eq!(tls.verify, Verification::None);
        assert!(connect(&tls, &test_pki::self_signed("whatever")).await.is_ok());
        assert_eq!(tls.server_name, ServerName::try_from("web.shop.svc").unwrap());
    }

    #[test]
    fn loads_a_ca_bundle_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, format!("{}{}", Pki::new().ca.pem(), Pki::named("Two").ca.pem())).unwrap();
        assert_eq!(load_ca_bundle(&path).unwrap().len(), 2);
        std::fs::write(&path, "no certificates").unwrap();
        assert!(load_ca_bundle(&path).unwrap_err().to_string().contains("no certificates found"));
        assert!(load_ca_bundle(&dir.path().join("missing.pem")).is_err());
    }
}
