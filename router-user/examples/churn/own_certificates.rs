//! A mixed route set whose edge and reencrypt routes each carry a certificate of their own, signed by one CA
//! (ECDSA P-256 through rcgen, one key for all leaves: signing 20,000 takes about a second, where the bench's
//! `openssl req` per certificate takes a minute; the router memoises validation, so the key type does not change
//! what a rebuild costs).

use manifest_gen::{Certificates, Pod, RouteSet};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, PKCS_ECDSA_P256_SHA256};

/// `per_kind` routes of each termination over `pods`, as `RouteSet::mixed` names them.
pub fn mixed_set(per_kind: usize, pods: &[Pod]) -> RouteSet {
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::new()).expect("CA params");
    ca_params.distinguished_name.push(DnType::CommonName, "churn CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
    let leaf_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("leaf key");
    let shared = Certificates {
        certificate: String::new(),
        key: leaf_key.serialize_pem(),
        ca_certificate: Some(ca.pem()),
        destination_ca: Some(ca.pem()),
    };
    let mut set = RouteSet::mixed(per_kind, pods, pods, &shared, &shared);
    for route in &mut set.routes {
        let Some(tls) = route.certificates.as_mut() else { continue };
        let mut params = CertificateParams::new(vec![route.host.clone()]).expect("leaf params");
        params.distinguished_name.push(DnType::CommonName, route.host.as_str());
        tls.certificate = params.signed_by(&leaf_key, &ca, &ca_key).expect("leaf certificate").pem();
        if !route.name.starts_with('s') {
            tls.destination_ca = None;
        }
    }
    set
}
