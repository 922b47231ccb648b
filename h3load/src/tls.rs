//! The client's TLS: TLS 1.3 with one cipher suite (the bench offers every client the same one), ALPN `h3`,
//! trusting the bench's CA.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use quinn::crypto::rustls::QuicClientConfig;
use rustls::crypto::ring;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::CertificateDer;

/// The cipher suite every TLS client of the bench offers (as OPENSSL_CONF does for wrk, curl and h2load).
const CIPHERSUITE: &str = "TLS13_AES_256_GCM_SHA384";

/// A QUIC client configuration trusting the certificates in the PEM file `ca`.
pub fn quic_client_config(ca: &Path) -> anyhow::Result<quinn::ClientConfig> {
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_file_iter(ca).with_context(|| format!("reading {}", ca.display()))? {
        roots.add(certificate.with_context(|| format!("a certificate in {}", ca.display()))?)?;
    }
    let mut provider = ring::default_provider();
    provider.cipher_suites.retain(|suite| format!("{:?}", suite.suite()) == CIPHERSUITE);
    anyhow::ensure!(!provider.cipher_suites.is_empty(), "ring has no {CIPHERSUITE}");
    let mut tls = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    // QUIC protects its Initial packets with AES-128-GCM whatever the handshake negotiates (RFC 9001 section 5).
    let initial = match ring::cipher_suite::TLS13_AES_128_GCM_SHA256 {
        rustls::SupportedCipherSuite::Tls13(suite) => suite.quic_suite().context("AES-128-GCM for QUIC")?,
        rustls::SupportedCipherSuite::Tls12(_) => anyhow::bail!("TLS13_AES_128_GCM_SHA256 is a TLS 1.3 suite"),
    };
    let crypto = QuicClientConfig::with_initial(Arc::new(tls), initial).context("a QUIC client configuration")?;
    Ok(quinn::ClientConfig::new(Arc::new(crypto)))
}
