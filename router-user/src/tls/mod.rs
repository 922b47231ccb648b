//! Certificates and rustls configurations: route certificates checked like the OpenShift router's extended
//! validation, the default certificate, the per-table certificate store that :443 serves from, the server
//! configurations (versions, ciphers, ALPN, client certificates), and reencrypt: the client configurations
//! and each route's pool of TLS connections to its pods.

mod cert_cache;
mod cert_error;
mod certs;
mod ciphers;
mod client_cert;
mod default_cert;
mod pem;
mod pod_verifier;
mod policy;
mod provider;
mod reencrypt_pool;
mod server_config;
mod store;
#[cfg(test)]
pub(crate) mod test_pki;
mod upstream_config;
mod weak_signature;

pub use cert_cache::CertCache;
pub use cert_error::{CertError, TlsField, EXTENDED_VALIDATION_FAILED};
pub use certs::{destination_ca, route_certificate};
pub use ciphers::{tls12_suites, tls13_suites};
pub use client_cert::client_cert_headers;
pub use default_cert::{default_certificate, fingerprint};
pub use policy::{ClientAuth, MinVersion, TlsPolicy, TlsPolicyError};
pub use provider::{choose as choose_provider, install_process_default, ProviderAlreadyChosen, TlsProvider};
pub use reencrypt_pool::{ReencryptUpstream, UpstreamBody, POD_POOL_IDLE_TIMEOUT};
pub use server_config::ServerConfigs;
pub use store::{CertChoice, CertStore, CertStoreBuilder};
pub use upstream_config::{load_ca_bundle, reencrypt_tls, ReencryptTls, Verification};
