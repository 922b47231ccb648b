//! Settings of the :443 listener (the OpenShift router's TLS variables): certificates, strict SNI, protocol
//! versions, ciphers and key exchange groups, HTTP/2, client certificates (CA, subject filter, revocation
//! lists), ClientHello inspection and the PROXY protocol; and the TLS policy they give. A value naming something
//! unknown is an error that stops the start.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::duration::parse_haproxy_duration;
use crate::tls::{
    kx_groups, load_ca_certificates, subject_filter, tls12_suites, tls13_suites, ClientAuth, CrlSource, MaxVersion,
    MinVersion, TlsPolicy, TlsPolicyError, TlsProvider,
};

#[derive(Args, Clone, Debug)]
pub struct TlsArgs {
    /// The default certificate itself: PEM with the certificate, its chain and key (wins over the path and
    /// directory settings).
    #[arg(long, env = "DEFAULT_CERTIFICATE", hide_env_values = true)]
    pub default_certificate: Option<String>,

    /// PEM file with the default certificate, its key and chain (served for unknown SNI, no SNI, and routes
    /// without a certificate). Unset: one is generated at start and its fingerprint logged.
    #[arg(long, env = "DEFAULT_CERTIFICATE_PATH")]
    pub default_certificate_path: Option<PathBuf>,

    /// Directory holding `tls.crt` and `tls.key` of the default certificate (a mounted Secret).
    #[arg(long, env = "DEFAULT_CERTIFICATE_DIR")]
    pub default_certificate_dir: Option<PathBuf>,

    /// PEM bundle of CAs that verify reencrypt pods which have no `destinationCACertificate`; the pod must then
    /// present a certificate for `<service>.<namespace>.svc`.
    #[arg(long, env = "DEFAULT_DESTINATION_CA_PATH")]
    pub default_destination_ca_path: Option<PathBuf>,

    /// Lowest TLS version offered to clients: `TLSv1.2` or `TLSv1.3`.
    #[arg(long, env = "SSL_MIN_VERSION", default_value = "TLSv1.2")]
    pub ssl_min_version: String,

    /// Highest TLS version offered to clients: `TLSv1.2` or `TLSv1.3` (unset: TLS 1.3).
    #[arg(long, env = "SSL_MAX_VERSION")]
    pub ssl_max_version: Option<String>,

    /// Key exchange groups offered, OpenSSL names separated by `:` (`X25519:P-256:P-384`); unset:
    /// X25519MLKEM768 (post-quantum hybrid, built with the default `aws-lc-rs` feature), X25519, P-256, P-384.
    #[arg(long, env = "ROUTER_CURVES")]
    pub curves: Option<String>,

    /// No default certificate for a name it does not carry, nor without SNI: such handshakes are refused.
    #[arg(long, env = "ROUTER_STRICT_SNI", default_value_t = false, action = clap::ArgAction::Set)]
    pub strict_sni: bool,

    /// TLS 1.2 cipher list: a profile name (`modern`, `intermediate`, `old`) or OpenSSL cipher names
    /// separated by `:`.
    #[arg(long, env = "ROUTER_CIPHERS", default_value = "intermediate")]
    pub ciphers: String,

    /// TLS 1.3 cipher suites, OpenSSL names separated by `:`; unset: all that rustls offers.
    #[arg(long, env = "ROUTER_CIPHERSUITES")]
    pub ciphersuites: Option<String>,

    /// Never offer HTTP/2 (ALPN `h2`) to clients.
    #[arg(long, env = "ROUTER_DISABLE_HTTP2", default_value_t = false, action = clap::ArgAction::Set)]
    pub disable_http2: bool,

    /// Client certificates on :443: `none`, `optional` or `required`.
    #[arg(long, env = "ROUTER_MUTUAL_TLS_AUTH", value_enum, default_value_t = MutualTls::None)]
    pub mutual_tls_auth: MutualTls,

    /// PEM bundle of CAs that client certificates must chain to (with ROUTER_MUTUAL_TLS_AUTH).
    #[arg(long, env = "ROUTER_MUTUAL_TLS_AUTH_CA")]
    pub mutual_tls_auth_ca: Option<PathBuf>,

    /// Regular expression the client certificate's subject (`/C=US/O=Acme/CN=client`) must match; requests
    /// of other clients get 403 (with ROUTER_MUTUAL_TLS_AUTH).
    #[arg(long, env = "ROUTER_MUTUAL_TLS_AUTH_FILTER")]
    pub mutual_tls_auth_filter: Option<String>,

    /// File of certificate revocation lists (PEM or DER) for client certificates, re-read when it changes.
    /// Unset: the lists are fetched from the CRL distribution points the client CA certificates name.
    #[arg(long, env = "ROUTER_MUTUAL_TLS_AUTH_CRL")]
    pub mutual_tls_auth_crl: Option<PathBuf>,

    /// How long :443 waits for a complete ClientHello before closing the connection.
    #[arg(long, env = "ROUTER_INSPECT_DELAY", default_value = "5s", value_parser = parse_haproxy_duration)]
    pub inspect_delay: Duration,

    /// Expect a PROXY protocol (v1 or v2) header on every :80 and :443 connection, as a load balancer sends it,
    /// and take the client address from it.
    #[arg(long, env = "ROUTER_USE_PROXY_PROTOCOL", default_value_t = false, action = clap::ArgAction::Set)]
    pub use_proxy_protocol: bool,

    /// Balancing of passthrough routes without a balance annotation: `source` (consistent hash of the
    /// client address) or `roundrobin`.
    #[arg(long, env = "ROUTER_TCP_BALANCE_SCHEME", default_value = "source")]
    pub tcp_balance_scheme: String,

    /// Relay passthrough connections in the kernel (an `sk_skb` program on a SOCKHASH) once the pod is bound,
    /// when the kernel and privileges allow; otherwise, or when false, relay with splice(2) in userspace.
    /// Off by default: on loopback it measured slower than the splice(2) relay (bench/passthrough-sockmap.sh).
    #[arg(long, env = "ROUTER_PASSTHROUGH_SOCKMAP", default_value_t = false, action = clap::ArgAction::Set)]
    pub passthrough_sockmap: bool,

    /// Staple OCSP responses to the served certificates (default, edge, reencrypt) whose leaf names an `http:`
    /// responder and whose issuer is in the chain; off by default (route certificates name the URLs fetched).
    #[arg(long, env = "ROUTER_OCSP_STAPLING", default_value_t = false, action = clap::ArgAction::Set)]
    pub ocsp_stapling: bool,

    /// Longest wait between two fetches of a certificate's OCSP response (sooner: halfway to its nextUpdate).
    #[arg(long, env = "ROUTER_OCSP_REFRESH_INTERVAL", default_value = "1h", value_parser = parse_haproxy_duration)]
    pub ocsp_refresh_interval: Duration,

    /// Let clients resume TLS sessions (tickets and a session cache). Off only to measure full handshakes.
    #[arg(long, env = "ROUTER_TLS_SESSION_RESUMPTION", default_value_t = true, action = clap::ArgAction::Set)]
    pub session_resumption: bool,

    /// The rustls crypto provider: `ring` or `aws-lc-rs`. Hidden: it exists so that the bench can measure both
    /// with one binary in one run (see `tls::provider`); the default is the one measured faster.
    #[arg(long, env = "ROUTER_TLS_PROVIDER", value_enum, default_value_t = TlsProvider::Ring, hide = true)]
    pub tls_provider: TlsProvider,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MutualTls {
    None,
    Optional,
    Required,
}

impl TlsArgs {
    /// The :443 TLS policy these settings ask for.
    pub fn policy(&self) -> Result<TlsPolicy, TlsPolicyError> {
        let min_version = MinVersion::parse(&self.ssl_min_version)?;
        let max_version = MaxVersion::parse(self.ssl_max_version.as_deref().unwrap_or(""))?;
        let tls12_suites = tls12_suites(&self.ciphers)?;
        let tls13_suites = tls13_suites(self.ciphersuites.as_deref())?;
        let kx_groups = kx_groups(self.curves.as_deref())?;
        let client_subject_filter = subject_filter(self.mutual_tls_auth_filter.as_deref())?;
        let client_auth = match self.mutual_tls_auth {
            MutualTls::None => ClientAuth::None,
            MutualTls::Optional => ClientAuth::verified(false, self.mutual_tls_auth_ca.as_deref())?,
            MutualTls::Required => ClientAuth::verified(true, self.mutual_tls_auth_ca.as_deref())?,
        };
        let client_crl = match (&client_auth, self.mutual_tls_auth_ca.as_deref()) {
            (ClientAuth::None, _) | (_, None) => {
                if self.mutual_tls_auth_filter.is_some() || self.mutual_tls_auth_crl.is_some() {
                    tracing::warn!("ROUTER_MUTUAL_TLS_AUTH_FILTER and _CRL apply only with ROUTER_MUTUAL_TLS_AUTH");
                }
                CrlSource::None
            }
            (_, Some(ca)) => {
                let ca_certs = load_ca_certificates(ca).map_err(TlsPolicyError::ClientCa)?;
                CrlSource::new(self.mutual_tls_auth_crl.as_deref(), &ca_certs)
            }
        };
        let policy = TlsPolicy {
            min_version,
            max_version,
            tls12_suites,
            tls13_suites,
            kx_groups,
            client_auth,
            client_crl,
            client_subject_filter,
            strict_sni: self.strict_sni,
            disable_http2: self.disable_http2,
            session_resumption: self.session_resumption,
        };
        if !policy.offers_tls12() && !policy.offers_tls13() {
            return Err(TlsPolicyError::NoVersion);
        }
        Ok(policy)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        tls: TlsArgs,
    }

    /// The policy of a command line of only `args` (defaults for everything else).
    fn tls_policy(args: &[&str]) -> Result<TlsPolicy, TlsPolicyError> {
        use clap::Parser;
        let argv = std::iter::once("router").chain(args.iter().copied());
        Cli::try_parse_from(argv).unwrap().tls.policy()
    }

    #[test]
    fn defaults_are_tls12_intermediate_no_client_auth() {
        let policy = tls_policy(&[]).unwrap();
        assert_eq!(policy.min_version, MinVersion::Tls12);
        assert_eq!(policy.tls12_suites.len(), 6);
        assert_eq!(policy.tls13_suites.len(), 3);
        assert!(matches!(policy.client_auth, ClientAuth::None));
        assert!(policy.offers_tls12());
        assert!(!policy.disable_http2);
    }

    #[test]
    fn versions() {
        let tls13 = tls_policy(&["--ssl-min-version", "TLSv1.3"]).unwrap();
        assert_eq!(tls13.min_version, MinVersion::Tls13);
        assert!(!tls13.offers_tls12());
        let tls10 = tls_policy(&["--ssl-min-version", "TLSv1.0"]).unwrap();
        assert_eq!(tls10.min_version, MinVersion::Tls12);
        assert!(matches!(tls_policy(&["--ssl-min-version", "SSLv3"]), Err(TlsPolicyError::MinVersion(_))));
        let modern = tls_policy(&["--ciphers", "modern"]).unwrap();
        assert!(!modern.offers_tls12());
    }

    #[test]
    fn client_certificates_need_a_ca() {
        assert!(matches!(
            tls_policy(&["--mutual-tls-auth", "required"]),
            Err(TlsPolicyError::MissingClientCa("required"))
        ));
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, crate::tls::test_pki::Pki::new().ca.pem()).unwrap();
        let ca = ca.to_str().unwrap();
        let optional = tls_policy(&["--mutual-tls-auth", "optional", "--mutual-tls-auth-ca", ca]).unwrap();
        assert!(matches!(optional.client_auth, ClientAuth::Optional(_)));
        let missing = dir.path().join("missing.pem");
        let missing = missing.to_str().unwrap();
        assert!(matches!(
            tls_policy(&["--mutual-tls-auth", "required", "--mutual-tls-auth-ca", missing]),
            Err(TlsPolicyError::ClientCa(_))
        ));
    }

    #[test]
    fn max_version_curves_and_strict_sni() {
        let policy = tls_policy(&["--ssl-max-version", "TLSv1.2", "--curves", "P-256:X25519", "--strict-sni", "true"]);
        let policy = policy.unwrap();
        assert_eq!(policy.max_version, MaxVersion::Tls12);
        assert!(policy.offers_tls12() && !policy.offers_tls13());
        assert_eq!(policy.kx_groups.len(), 2);
        assert!(policy.strict_sni);
        assert!(matches!(tls_policy(&["--ssl-max-version", "TLSv1.1"]), Err(TlsPolicyError::MaxVersion(_))));
        assert!(matches!(
            tls_policy(&["--ssl-max-version", "TLSv1.2", "--ssl-min-version", "TLSv1.3"]),
            Err(TlsPolicyError::NoVersion)
        ));
        assert!(matches!(
            tls_policy(&["--ssl-max-version", "TLSv1.2", "--ciphers", "modern"]),
            Err(TlsPolicyError::NoVersion)
        ));
        assert!(matches!(tls_policy(&["--curves", "X25519:bogus"]), Err(TlsPolicyError::UnknownName { .. })));
        assert!(matches!(tls_policy(&["--ciphers", "bogus"]), Err(TlsPolicyError::UnknownName { .. })));
    }

    #[test]
    fn subject_filter_and_crl_file_are_checked_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let pki = crate::tls::test_pki::Pki::new();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, pki.ca.pem()).unwrap();
        let ca = ca.to_str().unwrap();
        let bad = tls_policy(&[
            "--mutual-tls-auth",
            "required",
            "--mutual-tls-auth-ca",
            ca,
            "--mutual-tls-auth-filter",
            "CN=(a",
        ]);
        assert!(matches!(bad, Err(TlsPolicyError::SubjectFilter { .. })));
        let crl = dir.path().join("crl.pem");
        std::fs::write(&crl, pki.crl(&[]).pem().unwrap()).unwrap();
        let crl = crl.to_str().unwrap();
        let args = [
            "--mutual-tls-auth",
            "optional",
            "--mutual-tls-auth-ca",
            ca,
            "--mutual-tls-auth-filter",
            "CN=a",
            "--mutual-tls-auth-crl",
            crl,
        ];
        let policy = tls_policy(&args).unwrap();
        assert!(matches!(policy.client_crl, CrlSource::File(_)));
        assert!(policy.client_subject_filter.unwrap().is_match("/O=x/CN=alice"));
        let unused = tls_policy(&["--mutual-tls-auth-crl", crl]).unwrap();
        assert_eq!(unused.client_crl, CrlSource::None, "no client certificates, no lists");
    }
}
