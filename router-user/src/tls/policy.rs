//! The :443 TLS policy read from the router's settings: lowest protocol version (SSL_MIN_VERSION), cipher
//! suites (ROUTER_CIPHERS, ROUTER_CIPHERSUITES), client certificates (ROUTER_MUTUAL_TLS_AUTH with
//! ROUTER_MUTUAL_TLS_AUTH_CA) and ROUTER_DISABLE_HTTP2. rustls has no TLS 1.0 or 1.1: asking for them is
//! accepted with a warning and means TLS 1.2.

use std::sync::Arc;

use rustls::{RootCertStore, SupportedCipherSuite};

use super::cert_error::CertError;
use super::ciphers::{tls12_suites, tls13_suites};
use super::upstream_config::load_ca_bundle;
use crate::config::{MutualTls, TlsArgs};

#[derive(Debug, thiserror::Error)]
pub enum TlsPolicyError {
    #[error("SSL_MIN_VERSION {0:?}: expected TLSv1.2 or TLSv1.3")]
    MinVersion(String),
    #[error("{setting} {value:?}: no cipher suite supported by rustls")]
    NoCiphers { setting: &'static str, value: String },
    /// HAProxy refuses `verify` without a CA file too.
    #[error("ROUTER_MUTUAL_TLS_AUTH={0}: ROUTER_MUTUAL_TLS_AUTH_CA is required")]
    MissingClientCa(&'static str),
    #[error("ROUTER_MUTUAL_TLS_AUTH_CA: {0}")]
    ClientCa(#[source] CertError),
    #[error("client certificate verifier: {0}")]
    ClientVerifier(String),
    #[error("TLS server configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinVersion {
    Tls12,
    Tls13,
}

/// Client certificates on :443.
#[derive(Clone, Debug)]
pub enum ClientAuth {
    None,
    /// Asked for; a client without one is let in, one with a certificate must chain to the roots.
    Optional(Arc<RootCertStore>),
    /// Required, chaining to the roots.
    Required(Arc<RootCertStore>),
}

#[derive(Clone, Debug)]
pub struct TlsPolicy {
    pub min_version: MinVersion,
    /// Empty: TLS 1.2 is not offered (the `modern` profile).
    pub tls12_suites: Vec<SupportedCipherSuite>,
    pub tls13_suites: Vec<SupportedCipherSuite>,
    pub client_auth: ClientAuth,
    pub disable_http2: bool,
    /// Tickets and a session cache (`ROUTER_TLS_SESSION_RESUMPTION`).
    pub session_resumption: bool,
}

impl TlsPolicy {
    pub fn from_args(args: &TlsArgs) -> Result<TlsPolicy, TlsPolicyError> {
        let min_version = min_version(&args.ssl_min_version)?;
        let tls12_suites = tls12_suites(&args.ciphers)?;
        let tls13_suites = tls13_suites(args.ciphersuites.as_deref())?;
        let client_auth = match args.mutual_tls_auth {
            MutualTls::None => ClientAuth::None,
            MutualTls::Optional => ClientAuth::Optional(client_ca(args, "optional")?),
            MutualTls::Required => ClientAuth::Required(client_ca(args, "required")?),
        };
        Ok(TlsPolicy {
            min_version,
            tls12_suites,
            tls13_suites,
            client_auth,
            disable_http2: args.disable_http2,
            session_resumption: args.session_resumption,
        })
    }

    /// Whether TLS 1.2 is offered at all.
    pub fn offers_tls12(&self) -> bool {
        self.min_version == MinVersion::Tls12 && !self.tls12_suites.is_empty()
    }
}

fn min_version(value: &str) -> Result<MinVersion, TlsPolicyError> {
    match value.trim() {
        "TLSv1.2" | "" => Ok(MinVersion::Tls12),
        "TLSv1.3" => Ok(MinVersion::Tls13),
        "TLSv1.0" | "TLSv1.1" => {
            tracing::warn!(requested = value, "rustls does not implement TLS 1.0/1.1; the lowest version is TLS 1.2");
            Ok(MinVersion::Tls12)
        }
        other => Err(TlsPolicyError::MinVersion(other.to_string())),
    }
}

fn client_ca(args: &TlsArgs, mode: &'static str) -> Result<Arc<RootCertStore>, TlsPolicyError> {
    let path = args.mutual_tls_auth_ca.as_deref().ok_or(TlsPolicyError::MissingClientCa(mode))?;
    load_ca_bundle(path).map_err(TlsPolicyError::ClientCa)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
pub(crate) mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        tls: TlsArgs,
    }

    /// TlsArgs as the command line would give them (defaults for everything not in `args`).
    pub(crate) fn args(args: &[&str]) -> TlsArgs {
        let argv = std::iter::once("router").chain(args.iter().copied());
        Cli::try_parse_from(argv).unwrap().tls
    }

    #[test]
    fn defaults_are_tls12_intermediate_no_client_auth() {
        let policy = TlsPolicy::from_args(&args(&[])).unwrap();
        assert_eq!(policy.min_version, MinVersion::Tls12);
        assert_eq!(policy.tls12_suites.len(), 6);
        assert_eq!(policy.tls13_suites.len(), 3);
        assert!(matches!(policy.client_auth, ClientAuth::None));
        assert!(policy.offers_tls12());
        assert!(!policy.disable_http2);
    }

    #[test]
    fn versions() {
        let policy = TlsPolicy::from_args(&args(&["--ssl-min-version", "TLSv1.3"])).unwrap();
        assert_eq!(policy.min_version, MinVersion::Tls13);
        assert!(!policy.offers_tls12());
        let policy = TlsPolicy::from_args(&args(&["--ssl-min-version", "TLSv1.0"])).unwrap();
        assert_eq!(policy.min_version, MinVersion::Tls12);
        assert!(matches!(
            TlsPolicy::from_args(&args(&["--ssl-min-version", "SSLv3"])),
            Err(TlsPolicyError::MinVersion(_))
        ));
        let modern = TlsPolicy::from_args(&args(&["--ciphers", "modern"])).unwrap();
        assert!(!modern.offers_tls12());
    }

    #[test]
    fn client_certificates_need_a_ca() {
        assert!(matches!(
            TlsPolicy::from_args(&args(&["--mutual-tls-auth", "required"])),
            Err(TlsPolicyError::MissingClientCa("required"))
        ));
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, crate::tls::test_pki::Pki::new().ca.pem()).unwrap();
        let ca = ca.to_str().unwrap();
        let policy =
            TlsPolicy::from_args(&args(&["--mutual-tls-auth", "optional", "--mutual-tls-auth-ca", ca])).unwrap();
        assert!(matches!(policy.client_auth, ClientAuth::Optional(_)));
        let missing = dir.path().join("missing.pem");
        let missing = missing.to_str().unwrap();
        assert!(matches!(
            TlsPolicy::from_args(&args(&["--mutual-tls-auth", "required", "--mutual-tls-auth-ca", missing])),
            Err(TlsPolicyError::ClientCa(_))
        ));
    }
}
