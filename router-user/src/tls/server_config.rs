//! The rustls server configurations of :443. The base configuration (versions, suites, client certificate
//! verifier, one session cache and one ticket key shared by every connection, so clients resume across
//! connections) is built once per policy; each connection gets a clone with its certificate fixed (picked from
//! the [`super::CertStore`] by SNI before the handshake) and its ALPN list: `h2, http/1.1` for a certificate
//! exactly one route uses unless ROUTER_DISABLE_HTTP2, else `http/1.1` only (the OpenShift router offers no h2
//! on the default certificate nor on a shared one, so browsers do not coalesce connections across routes).
//! With ROUTER_STRICT_SNI a connection for a name no route certificate and not the default certificate covers
//! (or without SNI) gets the base configuration, which has no certificate: rustls refuses the handshake.
//! The server's suite order is used, not the client's. With ROUTER_OCSP_STAPLING the certificate carries its
//! current OCSP response, when the stapler has one.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ClientHello, ResolvesServerCert, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{HandshakeKind, ServerConfig, ServerConnection, SupportedProtocolVersion};
use rustls_pki_types::UnixTime;

use super::client_verifier::SwappableVerifier;
use super::crl::CrlSource;
use super::crl_refresh::spawn_refresh;
use super::ocsp::Stapler;
use super::policy::{ClientAuth, MinVersion, TlsPolicy, TlsPolicyError};
use super::provider::chosen as chosen_provider;
use super::strict_sni::CertificateNames;

/// Sessions kept for TLS 1.2 session-id resumption (HAProxy's `tune.ssl.cachesize` default).
const SESSION_CACHE_SIZE: usize = 20_000;

pub struct ServerConfigs {
    base: ServerConfig,
    versions: Vec<&'static SupportedProtocolVersion>,
    /// `base` as it is: no certificate, so the handshake is refused (strict SNI).
    refusing: Arc<ServerConfig>,
    disable_http2: bool,
    /// With ROUTER_STRICT_SNI: the names the default certificate may be served for.
    strict_sni: Option<CertificateNames>,
    client_subject_filter: Option<regex::Regex>,
    /// With client certificates: the verifier whose revocation lists change, and where they come from.
    client_verifier: Option<(Arc<SwappableVerifier>, CrlSource)>,
    /// ROUTER_OCSP_STAPLING: the staples of the served certificates.
    stapler: Option<Arc<Stapler>>,
}

impl ServerConfigs {
    /// The configurations of `policy`; `default_key` is the default certificate (strict SNI serves it only for
    /// the names it carries).
    pub fn new(policy: &TlsPolicy, default_key: &CertifiedKey) -> Result<ServerConfigs, TlsPolicyError> {
        let provider = Arc::new(provider(policy));
        let versions: Vec<&'static SupportedProtocolVersion> = match (policy.offers_tls13(), policy.offers_tls12()) {
            (true, true) => vec![&rustls::version::TLS13, &rustls::version::TLS12],
            (true, false) => vec![&rustls::version::TLS13],
            (false, true) => vec![&rustls::version::TLS12],
            (false, false) => return Err(TlsPolicyError::NoVersion),
        };
        let swappable = swappable_verifier(&policy.client_auth, &provider, &policy.client_crl)?;
        let verifier: Arc<dyn ClientCertVerifier> = match &swappable {
            Some(swappable) => Arc::clone(swappable) as Arc<dyn ClientCertVerifier>,
            None => WebPkiClientVerifier::no_client_auth(),
        };
        let mut base = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&versions)?
            .with_client_cert_verifier(verifier)
            .with_cert_resolver(Arc::new(NoCertificate));
        if policy.session_resumption {
            base.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE_SIZE);
            base.ticketer = chosen_provider().ticketer()?;
        } else {
            base.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
            base.send_tls13_tickets = 0;
        }
        // The server's suite order wins, as HAProxy's default (`prefer-server-ciphers`) has it; testssl.sh flags a
        // server without a cipher order.
        base.ignore_client_order = true;
        base.alpn_protocols = http11();
        let client_auth = !matches!(policy.client_auth, ClientAuth::None);
        Ok(ServerConfigs {
            refusing: Arc::new(base.clone()),
            base,
            versions,
            disable_http2: policy.disable_http2,
            strict_sni: policy.strict_sni.then(|| CertificateNames::of(default_key)),
            client_subject_filter: policy.client_subject_filter.clone().filter(|_| client_auth),
            client_verifier: swappable.map(|v| (v, policy.client_crl.clone())),
            stapler: None,
        })
    }

    /// Staples the OCSP responses `stapler` holds to the certificates served from now on.
    pub fn staple_with(&mut self, stapler: Arc<Stapler>) {
        self.stapler = Some(stapler);
    }

    /// Starts keeping the client certificates' revocation lists current (a file re-read when it changes, or
    /// the distribution points fetched again); the task ends when these configurations are dropped.
    pub fn spawn_crl_refresh(&self) {
        if let Some((verifier, source)) = &self.client_verifier {
            spawn_refresh(source.clone(), Arc::downgrade(verifier));
        }
    }

    /// Whether a connection for `sni` that found no route certificate may get the default certificate: always,
    /// unless ROUTER_STRICT_SNI, then only for a name the default certificate carries.
    pub fn serves_default_for(&self, sni: Option<&str>) -> bool {
        match &self.strict_sni {
            None => true,
            Some(names) => sni.is_some_and(|name| names.covers(name)),
        }
    }

    /// The configuration of a connection refused for want of a certificate (strict SNI).
    pub fn refusing(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.refusing)
    }

    /// Whether the client certificate of `connection` still verifies: a resumed session skips verification, so
    /// one whose certificate has been revoked since (newer lists) is caught here. Always true for a full
    /// handshake (just verified) and without client certificates.
    pub fn client_still_valid(&self, connection: &ServerConnection) -> bool {
        let Some((verifier, _)) = &self.client_verifier else { return true };
        if connection.handshake_kind() != Some(HandshakeKind::Resumed) {
            return true;
        }
        let Some((leaf, intermediates)) = connection.peer_certificates().and_then(<[_]>::split_first) else {
            return true;
        };
        verifier.verify_client_cert(leaf, intermediates, UnixTime::now()).is_ok()
    }

    /// ROUTER_MUTUAL_TLS_AUTH_FILTER, when client certificates are asked for.
    pub fn client_subject_filter(&self) -> Option<&regex::Regex> {
        self.client_subject_filter.as_ref()
    }

    /// The configuration of one connection served with `key`; `offer_h2` when exactly one route uses `key`.
    pub fn for_connection(&self, key: Arc<CertifiedKey>, offer_h2: bool) -> Arc<ServerConfig> {
        self.finish(self.base.clone(), key, offer_h2)
    }

    /// `for_connection` for an SNI whose route checks client certificates with `verifier` (a route's own
    /// check; there is no router-wide one then). rustls keeps the verifier private to a configuration, so this
    /// one is built anew, sharing the base's provider, versions, session cache and ticket key (rustls resumes a
    /// session only for the SNI it was made for).
    pub fn for_client_auth(
        &self,
        key: Arc<CertifiedKey>,
        offer_h2: bool,
        verifier: Arc<dyn ClientCertVerifier>,
    ) -> Arc<ServerConfig> {
        let builder = ServerConfig::builder_with_provider(Arc::clone(self.base.crypto_provider()))
            .with_protocol_versions(&self.versions);
        // The versions were accepted with this provider in `new`.
        let Ok(builder) = builder else { return self.refusing() };
        let mut config = builder.with_client_cert_verifier(verifier).with_cert_resolver(Arc::new(NoCertificate));
        config.session_storage = Arc::clone(&self.base.session_storage);
        config.ticketer = Arc::clone(&self.base.ticketer);
        config.send_tls13_tickets = self.base.send_tls13_tickets;
        config.ignore_client_order = self.base.ignore_client_order;
        self.finish(config, key, offer_h2)
    }

    /// The configuration of the HTTP/3 (QUIC) listener: the base (provider, suites, groups, router-wide client
    /// certificates, session cache and ticket key), TLS 1.3 only as QUIC has it, ALPN `h3`, and `resolver`
    /// choosing each connection's certificate from its ClientHello (QUIC gives no look at the ClientHello
    /// before the handshake, as :443's inspection does). With router-wide client certificates no tickets are
    /// issued: every handshake verifies the certificate against the current revocation lists, which a
    /// resumed session would skip (TCP checks again after resumption, see `client_still_valid`). No 0-RTT.
    pub fn for_quic(&self, resolver: Arc<dyn ResolvesServerCert>) -> ServerConfig {
        let mut config = self.base.clone();
        config.cert_resolver = resolver;
        config.alpn_protocols = vec![b"h3".to_vec()];
        config.max_early_data_size = 0;
        if self.client_verifier.is_some() {
            config.send_tls13_tickets = 0;
            config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        }
        config
    }

    /// `key` with its current OCSP staple (ROUTER_OCSP_STAPLING), else as it is.
    pub fn stapled(&self, key: Arc<CertifiedKey>) -> Arc<CertifiedKey> {
        match &self.stapler {
            Some(stapler) => stapler.staple(key),
            None => key,
        }
    }

    /// `config` with its certificate (stapled when there is a staple) and ALPN list.
    fn finish(&self, mut config: ServerConfig, key: Arc<CertifiedKey>, offer_h2: bool) -> Arc<ServerConfig> {
        let key = self.stapled(key);
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
    let mut provider = chosen_provider().with_suites(&cipher_suites);
    // ROUTER_CURVES names groups by ring's objects (the hybrid by aws-lc-rs's): the chosen provider's own
    // implementation runs each it has; the hybrid, which ring lacks, is aws-lc-rs's whatever the provider.
    let own = std::mem::take(&mut provider.kx_groups);
    provider.kx_groups = policy
        .kx_groups
        .iter()
        .map(|group| own.iter().find(|g| g.name() == group.name()).copied().unwrap_or(*group))
        .collect();
    provider
}

fn swappable_verifier(
    auth: &ClientAuth,
    provider: &Arc<CryptoProvider>,
    crl: &CrlSource,
) -> Result<Option<Arc<SwappableVerifier>>, TlsPolicyError> {
    let (roots, required) = match auth {
        ClientAuth::None => return Ok(None),
        ClientAuth::Optional(roots) => (roots, false),
        ClientAuth::Required(roots) => (roots, true),
    };
    let verifier =
        SwappableVerifier::new(Arc::clone(roots), required, Arc::clone(provider), crl).map_err(|e| match crl {
            CrlSource::File(_) => TlsPolicyError::Crl(e),
            _ => TlsPolicyError::ClientVerifier(e),
        })?;
    Ok(Some(Arc::new(verifier)))
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
    use crate::tls::policy::MaxVersion;
    use crate::tls::test_pki::{Leaf, Pki};
    use rustls::{ClientConfig, RootCertStore};
    use rustls_pki_types::{PrivateKeyDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The policy of the default settings: TLS 1.2 and 1.3, the intermediate ciphers, no client certificates,
    /// HTTP/2 and session resumption.
    fn default_policy() -> TlsPolicy {
        TlsPolicy {
            min_version: MinVersion::Tls12,
            max_version: MaxVersion::Tls13,
            tls12_suites: tls12_suites("intermediate").unwrap(),
            tls13_suites: tls13_suites(None).unwrap(),
            kx_groups: crate::tls::curves::kx_groups(None).unwrap(),
            client_auth: ClientAuth::None,
            client_crl: CrlSource::None,
            client_subject_filter: None,
            strict_sni: false,
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
        let configs = ServerConfigs::new(&default_policy(), &s.key).unwrap();
        let client = client(&s.pki, &[&rustls::version::TLS13], None);
        let own = handshake(configs.for_connection(Arc::clone(&s.key), true), Arc::clone(&client)).await.unwrap();
        assert_eq!(own.alpn.as_deref(), Some(&b"h2"[..]));
        let default = handshake(configs.for_connection(Arc::clone(&s.key), false), Arc::clone(&client)).await.unwrap();
        assert_eq!(default.alpn.as_deref(), Some(&b"http/1.1"[..]));

        let no_h2 = TlsPolicy { disable_http2: true, ..default_policy() };
        let configs = ServerConfigs::new(&no_h2, &s.key).unwrap();
        let out = handshake(configs.for_connection(Arc::clone(&s.key), true), client).await.unwrap();
        assert_eq!(out.alpn.as_deref(), Some(&b"http/1.1"[..]));
    }

    #[tokio::test]
    async fn min_version_13_refuses_a_tls12_only_client() {
        let s = setup();
        let tls12_client = client(&s.pki, &[&rustls::version::TLS12], None);
        let configs = ServerConfigs::new(&default_policy(), &s.key).unwrap();
        assert!(handshake(configs.for_connection(Arc::clone(&s.key), false), Arc::clone(&tls12_client)).await.is_ok());

        let tls13 = TlsPolicy { min_version: MinVersion::Tls13, ..default_policy() };
        let configs = ServerConfigs::new(&tls13, &s.key).unwrap();
        assert!(handshake(configs.for_connection(Arc::clone(&s.key), false), tls12_client).await.is_err());
    }

    #[tokio::test]
    async fn tls12_cipher_list_is_enforced() {
        let s = setup();
        // The test certificate is ECDSA: an RSA-only suite list leaves nothing usable for it.
        let rsa_only =
            TlsPolicy { tls12_suites: tls12_suites("ECDHE-RSA-AES128-GCM-SHA256").unwrap(), ..default_policy() };
        let configs = ServerConfigs::new(&rsa_only, &s.key).unwrap();
        let tls12_client = client(&s.pki, &[&rustls::version::TLS12], None);
        assert!(handshake(configs.for_connection(Arc::clone(&s.key), false), tls12_client).await.is_err());
    }

    #[tokio::test]
    async fn sessions_resume_across_connections_for_tls13_and_tls12() {
        let s = setup();
        let configs = ServerConfigs::new(&default_policy(), &s.key).unwrap();
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
        let configs = ServerConfigs::new(&policy, &s.key).unwrap();
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
        let configs = ServerConfigs::new(&policy, &s.key).unwrap();

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
        let configs = ServerConfigs::new(&policy, &s.key).unwrap();
        let anonymous = client(&s.pki, &[&rustls::version::TLS13], None);
        let out = handshake(configs.for_connection(Arc::clone(&s.key), false), anonymous).await.unwrap();
        assert_eq!(out.peer_certs, 0);
    }

    #[tokio::test]
    async fn revoked_client_certificates_are_refused_and_new_lists_apply() {
        let s = setup();
        let dir = tempfile::tempdir().unwrap();
        let clients = Pki::named("Client CA");
        let ca_path = dir.path().join("clients.pem");
        std::fs::write(&ca_path, clients.ca.pem()).unwrap();
        let (good, revoked) = (clients.leaf("good"), clients.leaf("revoked"));
        let crl_path = dir.path().join("crl.pem");
        std::fs::write(&crl_path, clients.crl(&[&revoked]).pem().unwrap()).unwrap();
        let policy = TlsPolicy {
            client_auth: ClientAuth::verified(true, Some(&ca_path)).unwrap(),
            client_crl: CrlSource::File(crl_path),
            ..default_policy()
        };
        let configs = ServerConfigs::new(&policy, &s.key).unwrap();
        let connect = |leaf: &Leaf| {
            handshake(
                configs.for_connection(Arc::clone(&s.key), false),
                client(&s.pki, &[&rustls::version::TLS13], Some(leaf)),
            )
        };
        assert!(connect(&good).await.is_ok());
        assert!(connect(&revoked).await.is_err(), "revoked");

        let (verifier, _) = configs.client_verifier.as_ref().unwrap();
        verifier.use_crls(vec![clients.crl(&[]).der().clone()]).unwrap();
        assert!(connect(&revoked).await.is_ok(), "a list that no longer revokes it");
        // A list from another CA says nothing about these certificates: their status is unknown, refused.
        verifier.use_crls(vec![Pki::named("Other CA").crl(&[]).der().clone()]).unwrap();
        assert!(connect(&good).await.is_err());
    }

    #[tokio::test]
    async fn a_resumed_session_of_a_since_revoked_certificate_is_caught() {
        let s = setup();
        let dir = tempfile::tempdir().unwrap();
        let clients = Pki::named("Client CA");
        let ca_path = dir.path().join("clients.pem");
        std::fs::write(&ca_path, clients.ca.pem()).unwrap();
        let crl_path = dir.path().join("crl.pem");
        std::fs::write(&crl_path, clients.crl(&[]).pem().unwrap()).unwrap();
        let policy = TlsPolicy {
            client_auth: ClientAuth::verified(true, Some(&ca_path)).unwrap(),
            client_crl: CrlSource::File(crl_path),
            ..default_policy()
        };
        let configs = Arc::new(ServerConfigs::new(&policy, &s.key).unwrap());
        let leaf = clients.leaf("client");
        let client = client(&s.pki, &[&rustls::version::TLS13], Some(&leaf));
        let key = &s.key;
        let checked = |configs: Arc<ServerConfigs>, client: Arc<ClientConfig>| async move {
            let (client_io, server_io) = tokio::io::duplex(64 * 1024);
            let server_config = configs.for_connection(Arc::clone(key), false);
            let server = tokio::spawn(async move {
                let mut stream = tokio_rustls::TlsAcceptor::from(server_config).accept(server_io).await.unwrap();
                let (_, conn) = stream.get_ref();
                let verdict = (conn.handshake_kind(), configs.client_still_valid(conn));
                stream.write_all(b"x").await.unwrap();
                stream.shutdown().await.unwrap();
                verdict
            });
            let name = ServerName::try_from("a.example.com").unwrap();
            let mut stream = tokio_rustls::TlsConnector::from(client).connect(name, client_io).await.unwrap();
            let mut buf = Vec::new();
            stream.read_to_end(&mut buf).await.unwrap();
            server.await.unwrap()
        };
        let first = checked(Arc::clone(&configs), Arc::clone(&client)).await;
        assert_eq!(first, (Some(HandshakeKind::Full), true));
        configs.client_verifier.as_ref().unwrap().0.use_crls(vec![clients.crl(&[&leaf]).der().clone()]).unwrap();
        let resumed = checked(Arc::clone(&configs), client).await;
        assert_eq!(resumed, (Some(HandshakeKind::Resumed), false), "resumed, and refused after the check");
    }

    #[tokio::test]
    async fn client_certificates_wait_for_lists_from_distribution_points() {
        let s = setup();
        let dir = tempfile::tempdir().unwrap();
        let clients = Pki::with_crl_url("http://127.0.0.1:9/never.crl");
        let ca_path = dir.path().join("clients.pem");
        std::fs::write(&ca_path, clients.ca.pem()).unwrap();
        let policy = TlsPolicy {
            client_auth: ClientAuth::verified(false, Some(&ca_path)).unwrap(),
            client_crl: CrlSource::DistributionPoints(vec![vec!["http://127.0.0.1:9/never.crl".into()]]),
            ..default_policy()
        };
        let configs = ServerConfigs::new(&policy, &s.key).unwrap();
        let config = || configs.for_connection(Arc::clone(&s.key), false);
        let leaf = clients.leaf("client");
        assert!(handshake(config(), client(&s.pki, &[&rustls::version::TLS13], Some(&leaf))).await.is_err());
        let anonymous = handshake(config(), client(&s.pki, &[&rustls::version::TLS13], None)).await.unwrap();
        assert_eq!(anonymous.peer_certs, 0, "optional: anonymous clients still served");
        configs.client_verifier.as_ref().unwrap().0.use_crls(vec![clients.crl(&[]).der().clone()]).unwrap();
        assert!(handshake(config(), client(&s.pki, &[&rustls::version::TLS13], Some(&leaf))).await.is_ok());
    }

    #[tokio::test]
    async fn strict_sni_serves_the_default_only_for_its_names_and_curves_limit_groups() {
        let s = setup();
        let strict = TlsPolicy { strict_sni: true, ..default_policy() };
        let configs = ServerConfigs::new(&strict, &s.key).unwrap();
        assert!(configs.serves_default_for(Some("a.example.com")));
        assert!(!configs.serves_default_for(Some("b.example.com")) && !configs.serves_default_for(None));
        let client = client(&s.pki, &[&rustls::version::TLS13], None);
        assert!(handshake(configs.refusing(), Arc::clone(&client)).await.is_err());
        let lax = ServerConfigs::new(&default_policy(), &s.key).unwrap();
        assert!(lax.serves_default_for(None));

        let p384 = TlsPolicy { kx_groups: crate::tls::curves::kx_groups(Some("P-384")).unwrap(), ..default_policy() };
        let configs = ServerConfigs::new(&p384, &s.key).unwrap();
        assert_eq!(configs.base.crypto_provider().kx_groups.len(), 1);
        assert!(configs.base.ignore_client_order, "the server's cipher order");
        assert!(handshake(configs.for_connection(Arc::clone(&s.key), false), client).await.is_ok());
    }

    #[tokio::test]
    async fn max_version_12_refuses_a_tls13_only_client() {
        let s = setup();
        let tls12 = TlsPolicy { max_version: MaxVersion::Tls12, ..default_policy() };
        let configs = ServerConfigs::new(&tls12, &s.key).unwrap();
        let tls13_client = client(&s.pki, &[&rustls::version::TLS13], None);
        assert!(handshake(configs.for_connection(Arc::clone(&s.key), false), tls13_client).await.is_err());
        let both = client(&s.pki, &[&rustls::version::TLS13, &rustls::version::TLS12], None);
        assert!(handshake(configs.for_connection(Arc::clone(&s.key), false), both).await.is_ok());
    }
}
