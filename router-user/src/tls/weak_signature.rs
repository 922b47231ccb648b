//! Refusal of certificates signed with MD2, MD5 or SHA-1, as the OpenShift router does: a CA-signed certificate
//! using them is refused, a self-signed one (a root) is not. "Self-signed" is judged as OpenSSL sets its
//! self-signed flag: issuer equals subject, the authority key id (when present) equals the subject key id, and
//! the signature algorithm fits the public key's algorithm. The signature itself is not checked here.

use rustls_pki_types::CertificateDer;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::ParsedExtension;

/// Signature algorithm OIDs the router refuses on CA-signed certificates, with the name in the message.
const WEAK: &[(&str, &str)] = &[
    ("1.2.840.113549.1.1.2", "MD2"),
    ("1.2.840.113549.1.1.4", "MD5"),
    ("1.2.840.113549.1.1.5", "SHA1"),
    ("1.2.840.10045.4.1", "SHA1"),
    ("1.2.840.10040.4.3", "SHA1"),
];

/// The first weak-signature refusal among `certs`, as an error detail.
pub(crate) fn weak_signature(certs: &[CertificateDer<'_>]) -> Option<String> {
    certs.iter().find_map(|der| {
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let alg = cert.signature_algorithm.algorithm.to_id_string();
        let (_, name) = WEAK.iter().find(|(oid, _)| *oid == alg)?;
        (!is_self_signed(&cert)).then(|| format!("router does not support CA-signed certs using {name}"))
    })
}

fn is_self_signed(cert: &X509Certificate<'_>) -> bool {
    let same_name = cert.issuer().as_raw() == cert.subject().as_raw();
    let mut authority_key_id = None;
    let mut subject_key_id = None;
    for ext in cert.extensions() {
        match ext.parsed_extension() {
            ParsedExtension::AuthorityKeyIdentifier(aki) => authority_key_id = aki.key_identifier.as_ref().map(|k| k.0),
            ParsedExtension::SubjectKeyIdentifier(ski) => subject_key_id = Some(ski.0),
            _ => {}
        }
    }
    let key_ids_agree = authority_key_id.is_none() || authority_key_id == subject_key_id;
    let signature_key = key_algorithm_of_signature(&cert.signature_algorithm.algorithm.to_id_string());
    let public_key = cert.public_key().algorithm.algorithm.to_id_string();
    same_name && key_ids_agree && signature_key.is_some_and(|k| k == public_key)
}

/// The public key algorithm OID that a signature algorithm OID belongs to.
fn key_algorithm_of_signature(signature: &str) -> Option<&'static str> {
    const RSA: &str = "1.2.840.113549.1.1.1";
    const DSA: &str = "1.2.840.10040.4.1";
    const EC: &str = "1.2.840.10045.2.1";
    const ED25519: &str = "1.3.101.112";
    match signature {
        "1.2.840.113549.1.1.2"
        | "1.2.840.113549.1.1.4"
        | "1.2.840.113549.1.1.5"
        | "1.2.840.113549.1.1.10"
        | "1.2.840.113549.1.1.11"
        | "1.2.840.113549.1.1.12"
        | "1.2.840.113549.1.1.13" => Some(RSA),
        "1.2.840.10040.4.3" | "2.16.840.1.101.3.4.3.2" => Some(DSA),
        "1.2.840.10045.4.1" | "1.2.840.10045.4.3.2" | "1.2.840.10045.4.3.3" | "1.2.840.10045.4.3.4" => Some(EC),
        ED25519 => Some(ED25519),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::test_pki::{self, Pki};

    #[test]
    fn sha256_certificates_pass() {
        let pki = Pki::new();
        let leaf = pki.leaf("a.example.com");
        assert_eq!(weak_signature(&[leaf.cert.der().clone(), pki.ca.der().clone()]), None);
    }

    #[test]
    fn ca_signed_sha1_is_refused_but_a_self_signed_sha1_root_is_not() {
        let pki = Pki::new();
        let leaf = pki.leaf("a.example.com");
        let sha1_leaf = test_pki::with_ecdsa_sha1(leaf.cert.der());
        assert_eq!(weak_signature(&[sha1_leaf]).as_deref(), Some("router does not support CA-signed certs using SHA1"));
        let sha1_root = test_pki::with_ecdsa_sha1(pki.ca.der());
        assert_eq!(weak_signature(&[sha1_root]), None);
    }
}
