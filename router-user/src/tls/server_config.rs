//! The rustls server configurations of :443. The base configuration (versions, suites, client certificate
//! verifier, one session cache and one ticket key shared by every connection, so clients resume across
//! connections) is built once per policy; each connection gets a clone with its certificate fixed (picked from
//! the [`super::CertStore`] by SNI before the handshake) and its ALPN list: `h2, http/1.1` for a certificate
//! exactly one route uses unless ROUTER_DISABLE_HTTP2, else `http/1.1` only (the OpenShift router offers no h2
//! on the default certificate nor on a shared one, so browsers do not coalesce connections across routes).

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ClientHello, ResolvesServerCert, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, SupportedProtocolVersion};

use super::policy::{ClientAuth, MinVersion, TlsPolicy, TlsPolicyError};
use super::provider::chosen as chosen_provider;

/// Sessions kept for TLS 1.2 session-id resumption (HAProxy's `tune.ssl.cachesize` default).
const SESSION_CACHE_SIZE: usize = 20_000;

pub struct ServerConfigs {
    base: ServerConfig,
    disable_http2: bool,
}

impl ServerConfigs {
    pub fn new(policy: &TlsPolicy) -> Result<ServerConfigs, TlsPolicyError> {
        let provider = Arc::new(provider(policy));
        let versions: Vec<&'static SupportedProtocolVersion> = match policy.offers_tls12() {
            true => vec![&rustls::version::TLS13, &rustls::version::TLS12],
            false => vec![&rustls::version::TLS13],
        };
        let mut base = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&versions)?
            .with_client_cert_verifier(client_verifier(&policy.client_auth, &provider)?)
            .with_cert_resolver(Arc::new(NoCertificate));
        if policy.session_resumption {
            base.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE_SIZE);
            base.ticketer = chosen_provider().ticketer()?;
        } else {
            base.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
            base.send_tls13_tickets = 0;
        }
        base.alpn_protocols = http11();
        Ok(ServerConfigs { base, disable_http2: policy.disable_http2 })
    }

    /// The configuration of one connection served with `key`; `offer_h2` when exactly one route uses `key`.
    pub fn for_connection(&self, key: Arc<CertifiedKey>, offer_h2: bool) -> Arc<ServerConfig> {
        let mut config = self.base.clone();
        config.cert_resolver = Arc::new(FixedCertificate(key));
        config.alpn_protocols = match offer_h2 && !self.disable_http2 {
            true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            false => http11(),
        };
        Arc::new(config)
    }
}

fn http11() -> Vec<Vec<u8>> {
    vec![b"http/1.1".to_vec()]
}

/// The chosen provider (ring unless ROUTER_TLS_PROVIDER) restricted to the policy's suites (TLS 1.3 first, as
/// rustls orders them).
fn provider(policy: &TlsPolicy) -> CryptoProvider {
    let mut cipher_suites = policy.tls13_suites.clone();
    if policy.min_version == MinVersion::Tls12 {
        cipher_suites.extend(policy.tls12_suites.iter().copied());
    }
    chosen_provider().with_suites(&cipher_suites)
}

fn client_verifier(
    auth: &ClientAuth,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, TlsPolicyError> {
    let built = match auth {
        ClientAuth::None => return Ok(WebPkiClientVerifier::no_client_auth()),
        ClientAuth::Optional(roots) => {
            WebPkiClientVerifier::builder_with_provider(Arc::clone(roots), Arc::clone(provider))
                .allow_unauthenticated()
                .build()
        }
        ClientAuth::Required(roots) => {
            WebPkiClientVerifier::builder_with_provider(Arc::clone(roots), Arc::clone(provider)).build()
        }
    };
    built.map_err(|e| TlsPolicyError::ClientVerifier(e.to_string()))
}

/// The base configuration's resolver: no certificate (every connection replaces it).
#[derive(Debug)]
struct NoCertificate;

impl ResolvesServerCert for NoCertificate {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        None
    }
}

/// The certificate chosen for this connection, whatever the ClientHello says.
#[derive(Debug)]
struct FixedCertificate(Arc<CertifiedKey>);

impl ResolvesServerCert for FixedCertificate {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.0))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::certs::certified_key;
    use crate::tls::ciphers::{tls12_suites, tls13_suites};
    use crate::tls::test_pki::{Leaf, Pki};
    use rustls::{ClientConfig, HandshakeKind, RootCertStore};
    use rustls_pki_types::{PrivateKeyDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The policy of the default settings: TLS 1.2 and 1.3, the intermediate ciphers, no client certificates,
    /// HTTP/2 and session resumption.
    fn default_policy() -> TlsPolicy {
        TlsPolicy {
            min_version: MinVersion::Tls12,
            tls12_suites: tls12_suites("intermediate").unwrap(),
            tls13_suites: tls13_suites(None).unwrap(),
            client_auth: ClientAuth::None,
            disable_http2: false,
            session_resumption: true,
        }
    }

    struct Setup {
        pki: Pki,
        key: Arc<CertifiedKey>,
    }

    fn setup() -> Setup {
        let pki = Pki::new();
        let leaf = pki.leaf("a.example.com");
        let key = Arc::new(certified_key(vec![leaf.cert.der().clone()], &pkcs8(&leaf)).unwrap());
        Setup { pki, key }
    }

    fn pkcs8(leaf: &Leaf) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(leaf.key.serialize_der().into())
    }

    fn client(
        pki: &Pki,
        versions: &[&'static SupportedProtocolVersion],
        client_cert: Option<&Leaf>,
    ) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        roots.add(pki.ca.der().clone()).unwrap();
        let builder = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots);
        let mut config = match client_cert {
            Some(leaf) => builder.with_client_auth_cert(vec![leaf.cert.der().clone()], pkcs8(leaf)).unwrap(),
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Arc::new(config)
    }

    struct Outcome {
        alpn: Option<Vec<u8>>,
        kind: Option<HandshakeKind>,
        peer_certs: usize,
    }

    /// One connection over a duplex pipe; the server writes a byte after the handshake so that the client
    /// reads the TLS 1.3 session tickets. Err when either side's handshake fails.
    async fn handshake(server: Arc<ServerConfig>, client: Arc<ClientConfig>) -> Result<Outcome, String> {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let server_side = tokio::spawn(async move {
            let mut stream =
                tokio_rustls::TlsAcceptor::from(server).accept(server_io).await.map_err(|e| e.to_string())?;
            let (_, conn) = stream.get_ref();
            let outcome = Outcome {
                alpn: conn.alpn_protocol().map(<[u8]>::to_vec),
                kind: conn.handshake_kind(),
                peer_certs: conn.peer_certificates().map_or(0, <[_]>::len),
            };
            stream.write_all(b"x").await.map_err(|e| e.to_string())?;
            stream.shutdown().await.map_err(|e| e.to_string())?;
            Ok::<Outcome, String>(outcome)
        });
        let name = ServerName::try_from("a.example.com").unwrap();
        let client_side = async {
            let mut stream = tokio_rustls::TlsConnector::from(client).connect(name, client_io).await?;
            let mut buf = Vec::new();
            stream.read_to_end(&mut buf).await?;
            Ok::<Vec<u8>, std::io::Error>(buf)
        }
        .await;
        let server_outcome = server_side.await.unwrap();
        let read = client_side.map_err(|e| e.to_string())?;
        let outcome = server_outcome?;
        assert_eq!(read, b"x");
        Ok(outcome)
    }

    #[tokio::test]
    async fn alpn_offers_h2_only_for_own_certificates_and_not_when_disabled() {
        let s = setup();
        let configs = ServerConfigs::new(&default_policy()).unwrap();
        let client = client(&s.pki, &[&rustls::version::TLS13], None);
        let own = handshake(configs.for_connection(Arc::clone(&s.key), true), Arc::clone(&client)).await.unwrap();
        assert_eq!(own.alpn.as_deref(), Some(&b"h2"[..]));
        let default = handshake(configs.for_connection(Arc::clone(&s.key), false), Arc::clone(&client)).await.unwrap();
        assert_eq!(default.alpn.as_deref(), Some(&b"http/1.1"[..]));

        let no_h2 = TlsPolicy { disable_http2: true, ..default_policy() };
        let configs = ServerConfigs::new(&no_h2).unwrap();
        let out = handshake(configs.for_connection(Arc::clone(&s.key), true), client).await.unwrap();
        assert_eq!(out.alpn.as_deref(), Some(&b"http/1.1"[..]));
    }

    #[tokio::test]
    async fn min_version_13_refuses_a_tls12_only_client() {
        let s = setup();
        let tls12_client = client(&s.pki, &[&rustls::version::TLS12], None);
        let configs = ServerConfigs::new(&default_policy()).unwrap();
        assert!(handshake(configs.for_connection(Arc::clone(&s.key), false), Arc::clone(&tls12_client)).await.is_ok());

        let tls13 = TlsPolicy { min_version: MinVersion::Tls13, ..default_policy() };
        let configs = ServerConfigs::new(&tls13).unwrap();
        assert!(handshake(configs.for_connection(Arc::clone(&s.key), false), tls12_client).await.is_err());
    }

    #[tokio::test]
    async fn tls12_cipher_list_is_enforced() {
        let s = setup();
        // The test certificate is ECDSA: an RSA-only suite list leaves nothing usable for it.
        let rsa_only =
            TlsPolicy { tls12_suites: tls12_suites("ECDHE-RSA-AES128-GCM-SHA256").unwrap(), ..default_policy() };
        let configs = ServerConfigs::new(&rsa_only).unwrap();
        let tls12_client = client(&s.pki, &[&rustls::version::TLS12], None);
        assert!(handshake(configs.for_connection(Arc::clone(&s.key), false), tls12_client).await.is_err());
    }

    #[tokio::test]
    async fn sessions_resume_across_connections_for_tls13_and_tls12() {
        let s = setup();
        let configs = ServerConfigs::new(&default_policy()).unwrap();
        for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
            let client = client(&s.pki, &[version], None);
            let first = handshake(configs.for_connection(Arc::clone(&s.key), true), Arc::clone(&client)).await.unwrap();
            assert_eq!(first.kind, Some(HandshakeKind::Full));
            let second = handshake(configs.for_connection(Arc::clone(&s.key), true), client).await.unwrap();
            assert_eq!(second.kind, Some(HandshakeKind::Resumed), "{version:?}");
        }
    }

    #[tokio::test]
    async fn without_resumption_every_handshake_is_full() {
        let s = setup();
        let policy = TlsPolicy { session_resumption: false, ..default_policy() };
        let configs = ServerConfigs::new(&policy).unwrap();
        for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
            let client = client(&s.pki, &[version], None);
            for _ in 0..2 {
                let outcome =
                    handshake(configs.for_connection(Arc::clone(&s.key), true), Arc::clone(&client)).await.unwrap();
                assert_eq!(outcome.kind, Some(HandshakeKind::Full), "{version:?}");
            }
        }
    }

    #[tokio::test]
    async fn required_client_certificate() {
        let s = setup();
        let dir = tempfile::tempdir().unwrap();
        let ca_path = dir.path().join("clients.pem");
        let clients = Pki::named("Client CA");
        std::fs::write(&ca_path, clients.ca.pem()).unwrap();
        let policy = TlsPolicy { client_auth: ClientAuth::verified(true, Some(&ca_path)).unwrap(), ..default_policy() };
        let configs = ServerConfigs::new(&policy).unwrap();

        let anonymous = client(&s.pki, &[&rustls::version::TLS13], None);
        assert!(handshake(configs.for_connection(Arc::clone(&s.key), false), anonymous).await.is_err());
        let stranger = Pki::named("Stranger CA").leaf("client");
        let wrong = client(&s.pki, &[&rustls::version::TLS13], Some(&stranger));
        assert!(handshake(configs.for_connection(Arc::clone(&s.key), false), wrong).await.is_err());
        let good_cert = clients.leaf("client");
        let good = client(&s.pki, &[&rustls::version::TLS13], Some(&good_cert));
        let out = handshake(configs.for_connection(Arc::clone(&s.key), false), good).await.unwrap();
        assert_eq!(out.peer_certs, 1);
    }

    #[tokio::test]
    async fn optional_client_certificate_lets_anonymous_clients_in() {
        let s = setup();
        let dir = tempfile::tempdir().unwrap();
        let ca_path = dir.path().join("clients.pem");
        std::fs::write(&ca_path, Pki::named("Client CA").ca.pem()).unwrap();
        let policy =
            TlsPolicy { client_auth: ClientAuth::verified(false, Some(&ca_path)).unwrap(), ..default_policy() };
        let configs = ServerConfigs::new(&policy).unwrap();
        let anonymous = client(&s.pki, &[&rustls::version::TLS13], None);
        let out = handshake(configs.for_connection(Arc::clone(&s.key), false), anonymous).await.unwrap();
        assert_eq!(out.peer_certs, 0);
    }
}
