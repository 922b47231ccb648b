//! Certificates and rustls configurations: route certificates checked like the OpenShift router's extended
//! validation, the default certificate, the per-table certificate store that :443 serves from, the server
//! configurations (versions, ciphers, key exchange groups, ALPN, strict SNI, client certificates with their
//! subject filter and revocation lists), OCSP stapling of the served certificates, and reencrypt: the client
//! configurations and each route's pool of TLS connections to its pods.

mod cert_cache;
mod cert_error;
mod certs;
mod ciphers;
mod client_cert;
mod client_verifier;
mod crl;
mod crl_refresh;
mod curves;
mod default_cert;
mod ocsp;
mod openssl_names;
mod pem;
mod per_pod_clients;
mod pod_verifier;
mod policy;
mod provider;
mod reencrypt_pool;
mod route_client_auth;
mod server_config;
mod signing_keys;
mod store;
mod strict_sni;
#[cfg(test)]
pub(crate) mod test_pki;
mod upstream_config;
mod weak_signature;

pub use cert_cache::CertCache;
pub use cert_error::{CertError, TlsField, EXTENDED_VALIDATION_FAILED};
pub use certs::{destination_ca, route_certificate};
pub use ciphers::{tls12_suites, tls13_suites};
pub use client_cert::{client_cert_headers, client_subject};
pub use crl::CrlSource;
pub use curves::kx_groups;
pub use default_cert::{default_certificate, default_certificate_from, fingerprint};
pub use ocsp::{check_response as check_ocsp_response, Stapler};
pub use per_pod_clients::{name_the_host, HostHeader, PerPodClients, UpstreamBody};
pub use policy::{subject_filter, ClientAuth, MaxVersion, MinVersion, TlsPolicy, TlsPolicyError};
pub use provider::{choose as choose_provider, install_process_default, ProviderAlreadyChosen, TlsProvider};
pub use reencrypt_pool::{ReencryptUpstream, POD_POOL_IDLE_TIMEOUT};
pub use route_client_auth::RouteClientAuth;
pub use server_config::ServerConfigs;
pub use store::{CertChoice, CertStore, CertStoreBuilder};
pub use upstream_config::{
    load_ca_bundle, load_ca_certificates, reencrypt_client, reencrypt_tls, ReencryptClient, ReencryptTls, Verification,
};
