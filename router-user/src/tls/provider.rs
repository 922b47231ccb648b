//! The rustls crypto provider of the whole process: ring (the default) or aws-lc-rs, chosen once at start by the
//! hidden `--tls-provider` / ROUTER_TLS_PROVIDER setting. aws-lc-rs is compiled in only with the cargo feature
//! `aws-lc-rs` (off by default; its C build is one of the longest steps of a fresh build): `cargo xtask bench`
//! turns it on and measures both with one binary in the same run (same minutes of the same machine, the method's
//! rule for ratios). The default stays ring until such a run shows aws-lc-rs faster on full handshakes and not
//! slower elsewhere; so far it was not (bench/results, the crypto provider table).
//!
//! Whatever the provider, the router offers the same things: the policy's cipher suites (named by id, each run by
//! the chosen provider's own implementation) and the same key exchange groups: X25519, P-256, P-384 (each
//! provider's own) and on :443, with the `aws-lc-rs` feature, the post-quantum hybrid X25519MLKEM768, which ring
//! lacks: with ring, aws-lc-rs runs that one group (docs/tls-key-exchange.md).

use std::sync::{Arc, OnceLock};

use rustls::crypto::CryptoProvider;
use rustls::server::ProducesTickets;
use rustls::sign::SigningKey;
use rustls::SupportedCipherSuite;
use rustls_pki_types::PrivateKeyDer;

#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsProvider {
    #[default]
    Ring,
    #[cfg(feature = "aws-lc-rs")]
    #[value(name = "aws-lc-rs")]
    AwsLcRs,
}

#[derive(Debug, thiserror::Error)]
#[error("the TLS crypto provider is already {already:?}; {wanted:?} cannot be chosen in the same process")]
pub struct ProviderAlreadyChosen {
    pub already: TlsProvider,
    pub wanted: TlsProvider,
}

static CHOSEN: OnceLock<TlsProvider> = OnceLock::new();

/// Chooses the process's provider (once; choosing the same again is fine) and installs it as rustls's process
/// default, which libraries that build their own configurations (kube-client) need: with two providers compiled
/// in, rustls cannot pick one by itself.
pub fn choose(provider: TlsProvider) -> Result<(), ProviderAlreadyChosen> {
    let already = *CHOSEN.get_or_init(|| provider);
    if already != provider {
        return Err(ProviderAlreadyChosen { already, wanted: provider });
    }
    install_process_default();
    Ok(())
}

/// The chosen provider; ring when none was chosen (unit tests, library use).
pub fn chosen() -> TlsProvider {
    CHOSEN.get().copied().unwrap_or_default()
}

/// Makes the chosen provider rustls's process default unless one is installed already.
pub fn install_process_default() {
    // Err only when a default is installed already: that one stays.
    let _ = chosen().crypto_provider().install_default();
}

impl TlsProvider {
    /// The provider with its default suites and the classic key exchange groups (X25519, P-256, P-384, its own
    /// implementations). The router's clients (reencrypt to pods, the Kubernetes API) use it as it is: a hybrid
    /// key share sent first to a server without the hybrid costs a HelloRetryRequest round trip. :443 adds the
    /// hybrid (`server_config`).
    pub fn crypto_provider(self) -> CryptoProvider {
        let ring = rustls::crypto::ring::default_provider();
        match self {
            TlsProvider::Ring => ring,
            #[cfg(feature = "aws-lc-rs")]
            TlsProvider::AwsLcRs => {
                let mut provider = rustls::crypto::aws_lc_rs::default_provider();
                provider.kx_groups.retain(|group| ring.kx_groups.iter().any(|offered| offered.name() == group.name()));
                provider
            }
        }
    }

    /// The provider offering exactly `suites` (matched by id, in their order), each run by this provider's own
    /// code; a suite it does not implement is left out.
    pub fn with_suites(self, suites: &[SupportedCipherSuite]) -> CryptoProvider {
        let base = self.crypto_provider();
        let all: Vec<SupportedCipherSuite> = match self {
            TlsProvider::Ring => rustls::crypto::ring::ALL_CIPHER_SUITES.to_vec(),
            #[cfg(feature = "aws-lc-rs")]
            TlsProvider::AwsLcRs => rustls::crypto::aws_lc_rs::ALL_CIPHER_SUITES.to_vec(),
        };
        let cipher_suites =
            suites.iter().filter_map(|wanted| all.iter().find(|own| own.suite() == wanted.suite()).copied()).collect();
        CryptoProvider { cipher_suites, ..base }
    }

    /// The session ticket key (rotated) for TLS 1.3 tickets and TLS 1.2 session tickets.
    pub fn ticketer(self) -> Result<Arc<dyn ProducesTickets>, rustls::Error> {
        match self {
            TlsProvider::Ring => rustls::crypto::ring::Ticketer::new(),
            #[cfg(feature = "aws-lc-rs")]
            TlsProvider::AwsLcRs => rustls::crypto::aws_lc_rs::Ticketer::new(),
        }
    }

    /// A serving key from a private key (RSA, ECDSA or Ed25519).
    pub fn signing_key(self, key: &PrivateKeyDer<'_>) -> Result<Arc<dyn SigningKey>, rustls::Error> {
        match self {
            TlsProvider::Ring => rustls::crypto::ring::sign::any_supported_type(key),
            #[cfg(feature = "aws-lc-rs")]
            TlsProvider::AwsLcRs => rustls::crypto::aws_lc_rs::sign::any_supported_type(key),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::pem;
    use crate::tls::test_pki::Pki;
    use rustls::server::{ClientHello, ResolvesServerCert};
    use rustls::sign::CertifiedKey;
    use rustls::{ClientConfig, HandshakeKind, RootCertStore, ServerConfig};
    use rustls_pki_types::{CertificateDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Every provider this build has.
    const PROVIDERS: &[TlsProvider] = &[
        TlsProvider::Ring,
        #[cfg(feature = "aws-lc-rs")]
        TlsProvider::AwsLcRs,
    ];

    #[cfg(feature = "aws-lc-rs")]
    #[test]
    fn both_offer_the_same_suites_and_groups() {
        let ring = TlsProvider::Ring.crypto_provider();
        let aws = TlsProvider::AwsLcRs.crypto_provider();
        let groups = |p: &CryptoProvider| p.kx_groups.iter().map(|g| g.name()).collect::<Vec<_>>();
        assert_eq!(groups(&ring), groups(&aws));
        let ids = |p: &CryptoProvider| p.cipher_suites.iter().map(|s| s.suite()).collect::<Vec<_>>();
        let wanted = &ring.cipher_suites[..2];
        let aws_limited = TlsProvider::AwsLcRs.with_suites(wanted);
        assert_eq!(ids(&aws_limited), wanted.iter().map(|s| s.suite()).collect::<Vec<_>>());
        // The suites are aws-lc-rs's own code, not ring's: the same id, another implementation.
        let implementation = |s: &SupportedCipherSuite| s.tls13().map(|t| t as *const _);
        let (ring_first, aws_first) = (implementation(&wanted[0]), implementation(&aws_limited.cipher_suites[0]));
        assert!(ring_first.is_some() && aws_first.is_some());
        assert_ne!(ring_first, aws_first);
        assert_eq!(
            aws_first,
            aws.cipher_suites.iter().find(|s| s.suite() == wanted[0].suite()).and_then(implementation)
        );
    }

    #[test]
    fn the_process_choice_is_made_once() {
        // The process's choice is ring in unit tests; another choice is refused.
        choose(TlsProvider::Ring).unwrap();
        assert_eq!(chosen(), TlsProvider::Ring);
        #[cfg(feature = "aws-lc-rs")]
        assert!(choose(TlsProvider::AwsLcRs).is_err());
        assert!(CryptoProvider::get_default().is_some(), "installed for libraries using rustls's default");
    }

    /// The server side of a test: a certificate with its key, and the root a client trusts it by.
    struct Serving {
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        root: CertificateDer<'static>,
    }

    /// An ECDSA P-256 leaf of a test CA (rcgen), and an RSA-2048 leaf of an RSA CA (openssl, in testdata: the leaf,
    /// the CA, the leaf's key; rcgen on ring cannot make RSA keys).
    fn ecdsa_and_rsa() -> [Serving; 2] {
        let pki = Pki::new();
        let leaf = pki.leaf("a.example.com");
        let ecdsa = Serving {
            chain: vec![leaf.cert.der().clone()],
            key: PrivateKeyDer::Pkcs8(leaf.key.serialize_der().into()),
            root: pki.ca.der().clone(),
        };
        let mut chain = pem::certificates(RSA_PEM).unwrap();
        let root = chain.pop().unwrap();
        let key = pem::private_keys(RSA_PEM).unwrap().remove(0);
        let rsa = Serving { chain, key, root };
        [ecdsa, rsa]
    }

    const RSA_PEM: &str = include_str!("testdata/rsa2048-a.example.com.pem");

    /// The server's certificate, whatever the ClientHello says.
    #[derive(Debug)]
    struct Fixed(Arc<CertifiedKey>);

    impl ResolvesServerCert for Fixed {
        fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
            Some(Arc::clone(&self.0))
        }
    }

    /// A server on each provider (ECDSA and RSA keys) handshakes with a ring client, and a second connection
    /// resumes with the provider's tickets.
    #[tokio::test]
    async fn each_provider_serves_ecdsa_and_rsa_and_resumes() {
        for &provider in PROVIDERS {
            for (serving, kind) in ecdsa_and_rsa().into_iter().zip(["ECDSA", "RSA"]) {
                let certified = CertifiedKey::new(serving.chain, provider.signing_key(&serving.key).unwrap());
                certified.keys_match().unwrap();
                let mut server = ServerConfig::builder_with_provider(Arc::new(provider.crypto_provider()))
                    .with_safe_default_protocol_versions()
                    .unwrap()
                    .with_no_client_auth()
                    .with_cert_resolver(Arc::new(Fixed(Arc::new(certified))));
                server.ticketer = provider.ticketer().unwrap();
                let server = Arc::new(server);
                let mut roots = RootCertStore::empty();
                roots.add(serving.root).unwrap();
                let client = Arc::new(
                    ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                        .with_protocol_versions(&[&rustls::version::TLS13])
                        .unwrap()
                        .with_root_certificates(roots)
                        .with_no_client_auth(),
                );
                let first = handshake(Arc::clone(&server), Arc::clone(&client)).await;
                assert_eq!(first, HandshakeKind::Full, "{provider:?} {kind}");
                let second = handshake(server, client).await;
                assert_eq!(second, HandshakeKind::Resumed, "{provider:?} {kind}");
            }
        }
    }

    async fn handshake(server: Arc<ServerConfig>, client: Arc<ClientConfig>) -> HandshakeKind {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let server_side = tokio::spawn(async move {
            let mut stream = tokio_rustls::TlsAcceptor::from(server).accept(server_io).await.unwrap();
            let kind = stream.get_ref().1.handshake_kind().unwrap();
            stream.write_all(b"x").await.unwrap();
            stream.shutdown().await.unwrap();
            kind
        });
        let name = ServerName::try_from("a.example.com").unwrap();
        let mut stream = tokio_rustls::TlsConnector::from(client).connect(name, client_io).await.unwrap();
        let mut read = Vec::new();
        stream.read_to_end(&mut read).await.unwrap();
        assert_eq!(read, b"x");
        server_side.await.unwrap()
    }
}
