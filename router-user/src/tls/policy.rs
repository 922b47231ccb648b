//! The :443 TLS policy: lowest protocol version, TLS 1.2 and 1.3 cipher suites, client certificates and HTTP/2,
//! with the parsers of the values the router's settings give for them (SSL_MIN_VERSION, ROUTER_MUTUAL_TLS_AUTH_CA;
//! the cipher lists are in `ciphers`). rustls has no TLS 1.0 or 1.1: asking for them is accepted with a warning
//! and means TLS 1.2.

use std::path::Path;
use std::sync::Arc;

use rustls::{RootCertStore, SupportedCipherSuite};

use super::cert_error::CertError;
use super::upstream_config::load_ca_bundle;

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

impl MinVersion {
    /// An SSL_MIN_VERSION value: `TLSv1.2` (also empty, `TLSv1.0` and `TLSv1.1`, with a warning) or `TLSv1.3`.
    pub fn parse(value: &str) -> Result<MinVersion, TlsPolicyError> {
        match value.trim() {
            "TLSv1.2" | "" => Ok(MinVersion::Tls12),
            "TLSv1.3" => Ok(MinVersion::Tls13),
            "TLSv1.0" | "TLSv1.1" => {
                tracing::warn!(
                    requested = value,
                    "rustls does not implement TLS 1.0/1.1; the lowest version is TLS 1.2"
                );
                Ok(MinVersion::Tls12)
            }
            other => Err(TlsPolicyError::MinVersion(other.to_string())),
        }
    }
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

impl ClientAuth {
    /// Client certificates asked for (`required` false) or required, chaining to the CA bundle at `ca`
    /// (ROUTER_MUTUAL_TLS_AUTH_CA), which must be given.
    pub fn verified(required: bool, ca: Option<&Path>) -> Result<ClientAuth, TlsPolicyError> {
        let mode = if required { "required" } else { "optional" };
        let path = ca.ok_or(TlsPolicyError::MissingClientCa(mode))?;
        let roots = load_ca_bundle(path).map_err(TlsPolicyError::ClientCa)?;
        Ok(if required { ClientAuth::Required(roots) } else { ClientAuth::Optional(roots) })
    }
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
    /// Whether TLS 1.2 is offered at all.
    pub fn offers_tls12(&self) -> bool {
        self.min_version == MinVersion::Tls12 && !self.tls12_suites.is_empty()
    }
}
