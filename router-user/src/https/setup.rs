//! What :443 needs at start, from the TLS settings: the default certificate (generated when none is given),
//! the default destination CA for reencrypt, and the server configurations (versions, ciphers, groups, strict
//! SNI, client certificates, whose revocation lists are then kept current). Any error stops the start with the
//! setting named.

use std::sync::Arc;

use rustls::sign::CertifiedKey;
use rustls::RootCertStore;

use crate::config::{MutualTls, TlsArgs};
use crate::tls::{default_certificate_from, load_ca_bundle, ServerConfigs};

pub struct TlsSetup {
    pub default_certificate: Arc<CertifiedKey>,
    pub default_destination_ca: Option<Arc<RootCertStore>>,
    pub configs: ServerConfigs,
    pub client_cert_headers: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("default certificate (DEFAULT_CERTIFICATE / DEFAULT_CERTIFICATE_PATH / DEFAULT_CERTIFICATE_DIR): {0}")]
    DefaultCertificate(String),
    #[error("DEFAULT_DESTINATION_CA_PATH: {0}")]
    DestinationCa(String),
    #[error("TLS policy: {0}")]
    Policy(String),
}

impl TlsSetup {
    /// Everything :443 needs; runs inside the runtime (the revocation list task is started here).
    pub fn from_args(args: &TlsArgs) -> Result<TlsSetup, TlsSetupError> {
        let default_certificate = default_certificate_from(
            args.default_certificate.as_deref(),
            args.default_certificate_path.as_deref(),
            args.default_certificate_dir.as_deref(),
        )
        .map_err(|e| TlsSetupError::DefaultCertificate(e.to_string()))?;
        let default_destination_ca = match &args.default_destination_ca_path {
            Some(path) => Some(load_ca_bundle(path).map_err(|e| TlsSetupError::DestinationCa(e.to_string()))?),
            None => None,
        };
        let policy = args.policy().map_err(|e| TlsSetupError::Policy(e.to_string()))?;
        let configs =
            ServerConfigs::new(&policy, &default_certificate).map_err(|e| TlsSetupError::Policy(e.to_string()))?;
        configs.spawn_crl_refresh();
        Ok(TlsSetup {
            default_certificate,
            default_destination_ca,
            configs,
            client_cert_headers: args.mutual_tls_auth != MutualTls::None,
        })
    }
}
