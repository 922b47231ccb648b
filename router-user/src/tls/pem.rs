//! PEM text of route fields and settings files: which blocks it holds, and its certificates and private keys.
//! Block types follow the OpenShift router, which refuses a field holding a block it does not recognise.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Block types the OpenShift router accepts in certificate and key fields.
const KNOWN_LABELS: &[&str] = &[
    "CERTIFICATE",
    "RSA PRIVATE KEY",
    "EC PRIVATE KEY",
    "ECDSA PRIVATE KEY",
    "PRIVATE KEY",
    "PUBLIC KEY",
    "RSA PUBLIC KEY",
    "DSA PUBLIC KEY",
    "ECDSA PUBLIC KEY",
    "EC PARAMETERS",
];

/// The labels of the `-----BEGIN <label>-----` lines in `text`, in order.
pub(crate) fn labels(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| line.trim().strip_prefix("-----BEGIN ")?.strip_suffix("-----"))
}

/// The first block type in `text` that is not one the router knows, as an error detail.
pub(crate) fn unrecognized_block(text: &str) -> Option<String> {
    labels(text).find(|label| !KNOWN_LABELS.contains(label)).map(|label| format!("unrecognized PEM block {label}"))
}

/// Every certificate in `text` (other blocks are skipped). Errors are details without key material.
pub(crate) fn certificates(text: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let mut certs = Vec::new();
    for (index, cert) in CertificateDer::pem_slice_iter(text.as_bytes()).enumerate() {
        let cert = cert.map_err(|e| format!("PEM certificate block {index}: {e}"))?;
        if let Err(e) = x509_parser::parse_x509_certificate(&cert) {
            return Err(format!("failed to parse certificate {index}: {e}"));
        }
        certs.push(cert);
    }
    Ok(certs)
}

/// Every private key in `text`: PKCS#1 (`RSA PRIVATE KEY`), PKCS#8 (`PRIVATE KEY`) or SEC1 (`EC PRIVATE KEY`).
/// The error never carries the key's bytes.
pub(crate) fn private_keys(text: &str) -> Result<Vec<PrivateKeyDer<'static>>, String> {
    PrivateKeyDer::pem_slice_iter(text.as_bytes())
        .map(|key| key.map_err(|_| "private key block is not valid PEM".to_string()))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;

    #[test]
    fn finds_labels_and_unknown_blocks() {
        let text = "junk\n-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n\
                    -----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n";
        assert_eq!(labels(text).collect::<Vec<_>>(), ["CERTIFICATE", "OPENSSH PRIVATE KEY"]);
        assert_eq!(unrecognized_block(text).as_deref(), Some("unrecognized PEM block OPENSSH PRIVATE KEY"));
        assert_eq!(unrecognized_block("-----BEGIN EC PRIVATE KEY-----\n"), None);
    }

    #[test]
    fn parses_generated_certificates_and_keys() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["a.example.com".to_string()]).unwrap().self_signed(&key).unwrap();
        let both = format!("{}{}", cert.pem(), key.serialize_pem());
        assert_eq!(certificates(&both).unwrap(), vec![cert.der().clone()]);
        assert_eq!(private_keys(&both).unwrap().len(), 1);
        assert!(certificates("").unwrap().is_empty());
    }

    #[test]
    fn refuses_a_certificate_block_that_is_not_a_certificate() {
        let text = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(certificates(text).is_err());
    }
}
