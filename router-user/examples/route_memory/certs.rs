//! Certificates for the mixed set: one CA, and a leaf for every edge and reencrypt host, each with the same RSA-2048
//! key (as the bench's `tls-40000` set signs them) or, with `--own-keys`, a P-256 key of its own (as cert-manager
//! issues them).

use manifest_gen::{Certificates, RouteSet, Termination};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, PKCS_RSA_SHA256};

/// The RSA-2048 key of the router's test data (its PKCS#8 block).
const SHARED_RSA_KEY: &str = include_str!("../../src/tls/testdata/rsa2048-a.example.com.pem");

pub struct Signer {
    ca: rcgen::Certificate,
    ca_key: KeyPair,
    ca_pem: String,
    shared_key: KeyPair,
}

impl Signer {
    pub fn new() -> Signer {
        let ca_key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.distinguished_name.push(DnType::CommonName, "route_memory CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = params.self_signed(&ca_key).expect("a self-signed CA");
        let block = SHARED_RSA_KEY.find("-----BEGIN PRIVATE KEY-----").expect("a PKCS#8 key in the test data");
        let shared_key =
            KeyPair::from_pem_and_sign_algo(&SHARED_RSA_KEY[block..], &PKCS_RSA_SHA256).expect("the RSA key parses");
        let ca_pem = ca.pem();
        Signer { ca, ca_key, ca_pem, shared_key }
    }

    /// Placeholder material for `RouteSet::mixed`: the CA as the routes' CA and, for reencrypt, destination CA.
    pub fn template(&self, reencrypt: bool) -> Certificates {
        Certificates {
            certificate: String::new(),
            key: String::new(),
            ca_certificate: Some(self.ca_pem.clone()),
            destination_ca: reencrypt.then(|| self.ca_pem.clone()),
        }
    }

    /// Gives every edge and reencrypt route of `set` a certificate for its host.
    pub fn sign_each(&self, set: &mut RouteSet, own_keys: bool) {
        for route in &mut set.routes {
            if !matches!(route.termination, Termination::Edge | Termination::Reencrypt) {
                continue;
            }
            let own = own_keys.then(|| KeyPair::generate().expect("a route key"));
            let key = own.as_ref().unwrap_or(&self.shared_key);
            let params = CertificateParams::new(vec![route.host.clone()]).expect("leaf params");
            let leaf = params.signed_by(key, &self.ca, &self.ca_key).expect("a signed leaf");
            let tls = route.certificates.as_mut().expect("terminating routes carry certificates");
            tls.certificate = leaf.pem();
            tls.key = key.serialize_pem();
        }
    }
}
