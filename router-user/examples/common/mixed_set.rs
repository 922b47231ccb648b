//! The bench's mixed route set for the examples: HTTP, edge, reencrypt and passthrough routes, every edge and
//! reencrypt route with a certificate of its own for its host, signed by one CA that is also the reencrypt routes'
//! destination CA. rcgen signs 20,000 leaves in about a second, where the bench's `openssl req` per certificate
//! takes a minute. Included by path by the examples that use it.

use manifest_gen::{Certificates, Pod, RouteSet, Termination};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, PKCS_ECDSA_P256_SHA256, PKCS_RSA_SHA256};

/// The leaves' private keys.
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)] // each example uses the variants it needs
pub enum LeafKeys {
    /// One P-256 key for every leaf (cheap; the router memoises validation, so a rebuild costs the same).
    SharedP256,
    /// One RSA-2048 key for every leaf, as the bench's set signs them.
    SharedRsa,
    /// A P-256 key of its own for every leaf, as cert-manager issues them.
    OwnP256,
}

/// The RSA-2048 key of the router's test data (its PKCS#8 block).
const TEST_RSA_KEY: &str = include_str!("../../src/tls/testdata/rsa2048-a.example.com.pem");

/// `per_kind` routes of each termination, as `RouteSet::mixed` names them: HTTP and edge over `pods`, reencrypt
/// and passthrough over `tls_pods`.
pub fn mixed_set(per_kind: usize, pods: &[Pod], tls_pods: &[Pod], keys: LeafKeys) -> RouteSet {
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::new()).expect("CA params");
    ca_params.distinguished_name.push(DnType::CommonName, "examples CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
    let shared_key = match keys {
        LeafKeys::SharedRsa => {
            let block = TEST_RSA_KEY.find("-----BEGIN PRIVATE KEY-----").expect("a PKCS#8 key in the test data");
            KeyPair::from_pem_and_sign_algo(&TEST_RSA_KEY[block..], &PKCS_RSA_SHA256).expect("the RSA key parses")
        }
        LeafKeys::SharedP256 | LeafKeys::OwnP256 => KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("leaf key"),
    };
    let material = |destination: bool| Certificates {
        certificate: String::new(),
        key: String::new(),
        ca_certificate: Some(ca.pem()),
        destination_ca: destination.then(|| ca.pem()),
    };
    let mut set = RouteSet::mixed(per_kind, pods, tls_pods, &material(false), &material(true));
    for route in &mut set.routes {
        if !matches!(route.termination, Termination::Edge | Termination::Reencrypt) {
            continue;
        }
        let own = matches!(keys, LeafKeys::OwnP256)
            .then(|| KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("a route key"));
        let key = own.as_ref().unwrap_or(&shared_key);
        let mut params = CertificateParams::new(vec![route.host.clone()]).expect("leaf params");
        params.distinguished_name.push(DnType::CommonName, route.host.as_str());
        let tls = route.certificates.as_mut().expect("terminating routes carry certificates");
        tls.certificate = params.signed_by(key, &ca, &ca_key).expect("leaf certificate").pem();
        tls.key = key.serialize_pem();
    }
    set
}
