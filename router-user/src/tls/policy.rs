//! The :443 TLS policy: protocol versions, TLS 1.2 and 1.3 cipher suites, key exchange groups, client
//! certificates (with their subject filter and revocation lists), strict SNI and HTTP/2, with the parsers of the
//! values the router's settings give for them (SSL_MIN_VERSION, SSL_MAX_VERSION, ROUTER_MUTUAL_TLS_AUTH_CA,
//! ROUTER_MUTUAL_TLS_AUTH_FILTER; the cipher lists are in `ciphers`, the groups in `curves`, the revocation lists
//! in `crl`). rustls has no TLS 1.0 or 1.1: a lowest version of 1.0 or 1.1 is accepted with a warning and means
//! TLS 1.2; a highest version below 1.2 is an error.

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::SupportedKxGroup;
use rustls::{RootCertStore, SupportedCipherSuite};

use super::cert_error::CertError;
use super::crl::CrlSource;
use super::upstream_config::load_ca_bundle;

#[derive(Debug, thiserror::Error)]
pub enum TlsPolicyError {
    #[error("SSL_MIN_VERSION {0:?}: expected TLSv1.2 or TLSv1.3")]
    MinVersion(String),
    #[error("SSL_MAX_VERSION {0:?}: expected TLSv1.2 or TLSv1.3 (rustls has no version below TLS 1.2)")]
    MaxVersion(String),
    #[error("SSL_MIN_VERSION and SSL_MAX_VERSION (with ROUTER_CIPHERS) leave no TLS version to offer")]
    NoVersion,
    #[error("{setting}: {name:?} is not a name OpenSSL knows")]
    UnknownName { setting: &'static str, name: String },
    #[error("ROUTER_CURVES {0:?}: no key exchange group supported by rustls")]
    NoCurves(String),
    #[error("ROUTER_MUTUAL_TLS_AUTH_FILTER {value:?}: {detail}")]
    SubjectFilter { value: String, detail: String },
    #[error("ROUTER_MUTUAL_TLS_AUTH_CRL: {0}")]
    Crl(String),
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

/// The highest TLS version offered (SSL_MAX_VERSION).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxVersion {
    Tls12,
    Tls13,
}

impl MaxVersion {
    /// An SSL_MAX_VERSION value: `TLSv1.2`, `TLSv1.3`, or empty (unset: TLS 1.3).
    pub fn parse(value: &str) -> Result<MaxVersion, TlsPolicyError> {
        match value.trim() {
            "TLSv1.3" | "" => Ok(MaxVersion::Tls13),
            "TLSv1.2" => Ok(MaxVersion::Tls12),
            other => Err(TlsPolicyError::MaxVersion(other.to_string())),
        }
    }
}

/// ROUTER_MUTUAL_TLS_AUTH_FILTER: a regular expression the client certificate's subject, in HAProxy's one-line
/// form (`/C=US/O=Acme/CN=client`), must match somewhere; a request that does not (or has no certificate) is
/// refused with 403, as HAProxy's `http-request deny unless { ssl_c_s_dn -m reg ... }`.
pub fn subject_filter(value: Option<&str>) -> Result<Option<regex::Regex>, TlsPolicyError> {
    let Some(value) = value.filter(|v| !v.is_empty()) else { return Ok(None) };
    regex::Regex::new(value)
        .map(Some)
        .map_err(|e| TlsPolicyError::SubjectFilter { value: value.to_string(), detail: e.to_string() })
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
    pub max_version: MaxVersion,
    /// Empty: TLS 1.2 is not offered (the `modern` profile).
    pub tls12_suites: Vec<SupportedCipherSuite>,
    pub tls13_suites: Vec<SupportedCipherSuite>,
    /// ROUTER_CURVES (unset: `curves::DEFAULT_CURVES`).
    pub kx_groups: Vec<&'static dyn SupportedKxGroup>,
    pub client_auth: ClientAuth,
    /// Where the revocation lists of client certificates come from (with client certificates only).
    pub client_crl: CrlSource,
    /// ROUTER_MUTUAL_TLS_AUTH_FILTER (with client certificates only).
    pub client_subject_filter: Option<regex::Regex>,
    /// ROUTER_STRICT_SNI: no default certificate for a name it does not cover, nor without SNI.
    pub strict_sni: bool,
    pub disable_http2: bool,
    /// Tickets and a session cache (`ROUTER_TLS_SESSION_RESUMPTION`).
    pub session_resumption: bool,
}

impl TlsPolicy {
    /// Whether TLS 1.2 is offered at all.
    pub fn offers_tls12(&self) -> bool {
        self.min_version == MinVersion::Tls12 && !self.tls12_suites.is_empty()
    }

    /// Whether TLS 1.3 is offered.
    pub fn offers_tls13(&self) -> bool {
        self.max_version == MaxVersion::Tls13
    }
}
