//! The default certificate: served for connections without SNI, for unknown names and for routes without their
//! own certificate. It comes from DEFAULT_CERTIFICATE (the PEM itself: certificate, chain and key), else
//! DEFAULT_CERTIFICATE_PATH (one PEM file with the same), else DEFAULT_CERTIFICATE_DIR (`tls.crt` and `tls.key`,
//! a mounted Secret), else it is generated at start; that is the OpenShift router's order.

use std::path::Path;
use std::sync::Arc;

use rcgen::{CertificateParams, DnType, KeyPair};
use rustls::sign::CertifiedKey;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};

use super::cert_error::CertError;
use super::certs::certified_key;
use super::pem;

/// Name in the generated certificate.
pub const GENERATED_NAME: &str = "router-default.local";

/// The default certificate from `path`, else from `dir`, else a generated one.
pub fn default_certificate(path: Option<&Path>, dir: Option<&Path>) -> Result<Arc<CertifiedKey>, CertError> {
    default_certificate_from(None, path, dir)
}

/// The default certificate from `contents` (DEFAULT_CERTIFICATE), else as [`default_certificate`] finds it.
pub fn default_certificate_from(
    contents: Option<&str>,
    path: Option<&Path>,
    dir: Option<&Path>,
) -> Result<Arc<CertifiedKey>, CertError> {
    let key = match (contents.filter(|c| !c.trim().is_empty()), path, dir) {
        (Some(text), _, _) => from_pem(Path::new("DEFAULT_CERTIFICATE"), text, text)?,
        (None, Some(path), _) => {
            let text = read(path)?;
            from_pem(path, &text, &text)?
        }
        (None, None, Some(dir)) => {
            let cert_path = dir.join("tls.crt");
            let key_path = dir.join("tls.key");
            let key = from_pem(&cert_path, &read(&cert_path)?, &read(&key_path)?)?;
            tracing::info!(dir = %dir.display(), "default certificate loaded");
            key
        }
        (None, None, None) => generate()?,
    };
    if let Some(leaf) = key.cert.first() {
        tracing::info!(sha256 = %fingerprint(leaf), "default certificate");
    }
    Ok(Arc::new(key))
}

/// The SHA-256 fingerprint as `openssl x509 -fingerprint -sha256` prints it: upper-case hex pairs with colons.
pub fn fingerprint(cert: &CertificateDer<'_>) -> String {
    let digest = Sha256::digest(cert.as_ref());
    digest.iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(":")
}

fn read(path: &Path) -> Result<String, CertError> {
    std::fs::read_to_string(path).map_err(|e| CertError::File { path: path.to_path_buf(), detail: e.to_string() })
}

/// Certificates (leaf first) from `cert_text`, the first private key from `key_text`.
fn from_pem(path: &Path, cert_text: &str, key_text: &str) -> Result<CertifiedKey, CertError> {
    let file_error = |detail: String| CertError::File { path: path.to_path_buf(), detail };
    let chain = pem::certificates(cert_text).map_err(file_error)?;
    if chain.is_empty() {
        return Err(file_error("no certificate found".to_string()));
    }
    let keys = pem::private_keys(key_text).map_err(file_error)?;
    let Some(key) = keys.into_iter().next() else {
        return Err(file_error("no private key found".to_string()));
    };
    certified_key(chain, &key).map_err(file_error)
}

/// A self-signed ECDSA P-256 certificate for `router-default.local`. It is a placeholder, like the certificate
/// the OpenShift router generates when it is given none: clients will not trust it.
fn generate() -> Result<CertifiedKey, CertError> {
    let error = |e: rcgen::Error| CertError::Generate(e.to_string());
    let key_pair = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(error)?;
    let mut params = CertificateParams::new(vec![GENERATED_NAME.to_string()]).map_err(error)?;
    params.distinguished_name.push(DnType::CommonName, GENERATED_NAME);
    let cert = params.self_signed(&key_pair).map_err(error)?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key_pair.serialize_der()));
    let certified = certified_key(vec![cert.der().clone()], &key).map_err(CertError::Generate)?;
    tracing::info!(name = GENERATED_NAME, "no default certificate configured; generated a self-signed one");
    Ok(certified)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::test_pki::{self, Pki};

    #[test]
    fn fingerprint_matches_openssl_format() {
        let der = CertificateDer::from(b"abc".to_vec());
        // SHA-256("abc") = ba7816bf 8f01cfea ...
        let fp = fingerprint(&der);
        assert!(fp.starts_with("BA:78:16:BF:8F:01:CF:EA:"), "{fp}");
        assert_eq!(fp.len(), 32 * 3 - 1);
    }

    #[test]
    fn generates_a_p256_certificate_for_the_placeholder_name() {
        let key = default_certificate(None, None).unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&key.cert[0]).unwrap();
        let cn = cert.subject().iter_common_name().next().unwrap().as_str().unwrap();
        assert_eq!(cn, GENERATED_NAME);
        assert_eq!(cert.public_key().algorithm.algorithm.to_id_string(), "1.2.840.10045.2.1");
        assert!(key.keys_match().is_ok());
        let again = default_certificate(None, None).unwrap();
        assert_ne!(fingerprint(&key.cert[0]), fingerprint(&again.cert[0]), "a fresh key each start");
    }

    #[test]
    fn loads_one_pem_file_with_chain_and_key() {
        let pki = Pki::new();
        let leaf = pki.leaf("default.example.com");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("default.pem");
        std::fs::write(&path, format!("{}{}{}", leaf.cert_pem(), pki.ca.pem(), leaf.key_pem())).unwrap();
        let key = default_certificate(Some(&path), None).unwrap();
        assert_eq!(key.cert, vec![leaf.cert.der().clone(), pki.ca.der().clone()]);
    }

    #[test]
    fn loads_a_secret_directory_and_the_path_wins() {
        let a = test_pki::self_signed("a.example.com");
        let b = test_pki::self_signed("b.example.com");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tls.crt"), a.cert_pem()).unwrap();
        std::fs::write(dir.path().join("tls.key"), a.key_pem()).unwrap();
        let key = default_certificate(None, Some(dir.path())).unwrap();
        assert_eq!(key.cert, vec![a.cert.der().clone()]);

        let file = dir.path().join("b.pem");
        std::fs::write(&file, format!("{}{}", b.cert_pem(), b.key_pem())).unwrap();
        let key = default_certificate(Some(&file), Some(dir.path())).unwrap();
        assert_eq!(key.cert, vec![b.cert.der().clone()]);
    }

    #[test]
    fn the_pem_in_default_certificate_wins() {
        let a = test_pki::self_signed("a.example.com");
        let b = test_pki::self_signed("b.example.com");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("b.pem");
        std::fs::write(&file, format!("{}{}", b.cert_pem(), b.key_pem())).unwrap();
        let text = format!("{}{}", a.cert_pem(), a.key_pem());
        let key = default_certificate_from(Some(&text), Some(&file), None).unwrap();
        assert_eq!(key.cert, vec![a.cert.der().clone()]);
        let key = default_certificate_from(Some(""), Some(&file), None).unwrap();
        assert_eq!(key.cert, vec![b.cert.der().clone()], "empty: not set");
        let err = default_certificate_from(Some(&a.cert_pem()), None, None).unwrap_err().to_string();
        assert!(err.contains("DEFAULT_CERTIFICATE") && err.contains("no private key found"), "{err}");
    }

    #[test]
    fn refuses_missing_files_missing_keys_and_mismatched_keys() {
        let a = test_pki::self_signed("a.example.com");
        let b = test_pki::self_signed("b.example.com");
        let dir = tempfile::tempdir().unwrap();
        assert!(default_certificate(None, Some(dir.path())).is_err());
        let file = dir.path().join("x.pem");
        std::fs::write(&file, a.cert_pem()).unwrap();
        assert!(default_certificate(Some(&file), None).unwrap_err().to_string().contains("no private key found"));
        std::fs::write(&file, format!("{}{}", a.cert_pem(), b.key_pem())).unwrap();
        let err = default_certificate(Some(&file), None).unwrap_err().to_string();
        assert!(err.contains("does not match"), "{err}");
        assert!(!err.contains("PRIVATE KEY-----"));
    }
}
