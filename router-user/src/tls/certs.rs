//! Route certificates checked like the OpenShift router's extended route validation: PEM parse, refusal of
//! MD2/MD5/SHA-1 CA-signed certificates, key/certificate match, and (with `caCertificate`) verification of the
//! leaf for server authentication at the current time, where expiry alone is tolerated as OpenShift tolerates it
//! (the client decides). The host name is not checked, as in OpenShift. The served chain is the leaf, the
//! certificate field's other certificates, then the `caCertificate` certificates (OpenShift concatenates them).

use std::sync::Arc;

use rustls::client::verify_server_cert_signed_by_trust_anchor;
use rustls::server::ParsedCertificate;
use rustls::sign::{CertifiedKey, SigningKey};
use rustls::{CertificateError, RootCertStore};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime};

use super::cert_error::{CertError, TlsField};
use super::pem;
use super::provider;
use super::signing_keys::SigningKeys;
use super::weak_signature::weak_signature;
use crate::model::TlsConfig;

/// The route's own certificate, ready to serve; `None` when the route gives neither a certificate nor a key
/// (the default certificate is served then). A `caCertificate` is checked even without a certificate.
pub fn route_certificate(tls: &TlsConfig) -> Result<Option<Arc<CertifiedKey>>, CertError> {
    route_certificate_sharing(tls, &SigningKeys::default())
}

/// [`route_certificate`] with the private key taken from `signing_keys` when another certificate already holds it.
pub(crate) fn route_certificate_sharing(
    tls: &TlsConfig,
    signing_keys: &SigningKeys,
) -> Result<Option<Arc<CertifiedKey>>, CertError> {
    let certificate = non_empty(&tls.certificate);
    let key = non_empty(&tls.key);
    let ca_certs = match non_empty(&tls.ca_certificate) {
        Some(text) => ca_certificates(text)?,
        None => Vec::new(),
    };
    let certificate = match (certificate, key) {
        (None, None) => return Ok(None),
        (None, Some(_)) => return Err(CertError::missing(TlsField::Certificate, "no certificate specified")),
        (Some(certificate), _) => certificate,
    };

    let chain = pem::certificates(certificate).map_err(|e| CertError::route(TlsField::Certificate, e))?;
    if chain.is_empty() {
        return Err(CertError::route(TlsField::Certificate, "invalid/empty certificate data"));
    }
    if let Some(detail) = weak_signature(&chain) {
        return Err(CertError::route(TlsField::Certificate, detail));
    }
    if !ca_certs.is_empty() {
        verify_leaf(&chain, &ca_certs).map_err(|e| CertError::route(TlsField::Certificate, e))?;
    }
    if let Some(detail) = pem::unrecognized_block(certificate) {
        return Err(CertError::route(TlsField::Certificate, detail));
    }

    // Like OpenShift, a key may also sit in the certificate field.
    let mut keys = pem::private_keys(certificate).map_err(|e| CertError::route(TlsField::Certificate, e))?;
    if let Some(key) = key {
        if let Some(detail) = pem::unrecognized_block(key) {
            return Err(CertError::route(TlsField::Key, detail));
        }
        keys.extend(pem::private_keys(key).map_err(|e| CertError::route(TlsField::Key, e))?);
    }
    let Some(private_key) = keys.into_iter().next() else {
        return Err(CertError::missing(TlsField::Key, "no key specified"));
    };

    let mut served = chain;
    for ca in ca_certs {
        if !served.contains(&ca) {
            served.push(ca);
        }
    }
    let signing_key = signing_keys.get(&private_key).map_err(|_| CertError::route(TlsField::Key, UNPARSABLE_KEY))?;
    let certified = serving_key(served, signing_key).map_err(|e| CertError::route(TlsField::Key, e))?;
    Ok(Some(Arc::new(certified)))
}

/// A route's `destinationCACertificate` as the roots that verify its pods.
pub fn destination_ca(pem_text: &str) -> Result<Arc<RootCertStore>, CertError> {
    let field = TlsField::DestinationCaCertificate;
    let certs = pem::certificates(pem_text)
        .map_err(|e| CertError::route(field, format!("failed to parse destination CA certificate: {e}")))?;
    if certs.is_empty() {
        return Err(CertError::route(field, "failed to parse destination CA certificate: no certificates found"));
    }
    if let Some(detail) = pem::unrecognized_block(pem_text).or_else(|| weak_signature(&certs)) {
        return Err(CertError::route(field, detail));
    }
    roots(&certs).map(Arc::new).map_err(|e| CertError::route(field, e))
}

/// A certificate chain (leaf first) and its private key as a serving key; the key must belong to the leaf.
/// The error is a detail without key material.
pub(crate) fn certified_key(
    chain: Vec<CertificateDer<'static>>,
    key: &PrivateKeyDer<'_>,
) -> Result<CertifiedKey, String> {
    let signing_key = provider::chosen().signing_key(key).map_err(|_| UNPARSABLE_KEY.to_string())?;
    serving_key(chain, signing_key)
}

const UNPARSABLE_KEY: &str = "tls: failed to parse private key";

/// `chain` served with `signing_key`, which must belong to the leaf.
fn serving_key(chain: Vec<CertificateDer<'static>>, signing_key: Arc<dyn SigningKey>) -> Result<CertifiedKey, String> {
    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        Ok(()) => Ok(certified),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err("tls: private key does not match public key".to_string())
        }
        Err(e) => Err(format!("tls: checking the private key against the certificate: {e}")),
    }
}

/// Roots made of every certificate given; an error when none can be a trust anchor.
pub(crate) fn roots(certs: &[CertificateDer<'static>]) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    let (added, _ignored) = store.add_parsable_certificates(certs.iter().cloned());
    if added == 0 {
        return Err("no usable CA certificate".to_string());
    }
    Ok(store)
}

fn ca_certificates(text: &str) -> Result<Vec<CertificateDer<'static>>, CertError> {
    let field = TlsField::CaCertificate;
    let certs =
        pem::certificates(text).map_err(|e| CertError::route(field, format!("failed to parse CA certificate: {e}")))?;
    if certs.is_empty() {
        return Err(CertError::route(field, "failed to parse CA certificate: no certificates found"));
    }
    if let Some(detail) = pem::unrecognized_block(text).or_else(|| weak_signature(&certs)) {
        return Err(CertError::route(field, detail));
    }
    Ok(certs)
}

/// Verifies `chain[0]` for server authentication with the CA certificates as trust anchors and the rest of
/// `chain` plus the CA certificates as intermediates (Go's `VerifyOptions{Roots: ca, Intermediates: ca}` plus
/// the bundle). An expired or not yet valid certificate is accepted, as OpenShift ignores `x509.Expired`.
fn verify_leaf(chain: &[CertificateDer<'static>], ca_certs: &[CertificateDer<'static>]) -> Result<(), String> {
    let roots = roots(ca_certs)?;
    let leaf = ParsedCertificate::try_from(&chain[0]).map_err(|e| format!("error verifying certificate: {e}"))?;
    let intermediates: Vec<CertificateDer<'static>> = chain[1..].iter().chain(ca_certs).cloned().collect();
    let algorithms = provider::chosen().crypto_provider().signature_verification_algorithms;
    match verify_server_cert_signed_by_trust_anchor(&leaf, &roots, &intermediates, UnixTime::now(), algorithms.all) {
        Ok(()) => Ok(()),
        Err(rustls::Error::InvalidCertificate(
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. },
        )) => Ok(()),
        Err(e) => Err(format!("error verifying certificate: {e}")),
    }
}

fn non_empty(field: &Option<crate::model::PemText>) -> Option<&str> {
    field.as_deref().filter(|text| !text.trim().is_empty())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::test_pki::{self, Pki};

    fn tls(cert: Option<String>, key: Option<String>, ca: Option<String>) -> TlsConfig {
        TlsConfig {
            termination: "edge".into(),
            certificate: cert.map(Into::into),
            key: key.map(Into::into),
            ca_certificate: ca.map(Into::into),
            ..TlsConfig::default()
        }
    }

    fn field_of(err: CertError) -> TlsField {
        match err {
            CertError::Route { field, .. } => field,
            other => panic!("not a route error: {other}"),
        }
    }

    #[test]
    fn no_certificate_and_no_key_means_default_certificate() {
        assert!(route_certificate(&tls(None, None, None)).unwrap().is_none());
        assert!(route_certificate(&tls(Some("  ".into()), None, None)).unwrap().is_none());
    }

    #[test]
    fn self_signed_certificate_and_key_are_served() {
        let leaf = test_pki::self_signed("a.example.com");
        let key = route_certificate(&tls(Some(leaf.cert_pem()), Some(leaf.key_pem()), None)).unwrap().unwrap();
        assert_eq!(key.cert, vec![leaf.cert.der().clone()]);
    }

    #[test]
    fn key_may_sit_in_the_certificate_field() {
        let leaf = test_pki::self_signed("a.example.com");
        let both = format!("{}{}", leaf.cert_pem(), leaf.key_pem());
        assert!(route_certificate(&tls(Some(both), None, None)).unwrap().is_some());
    }

    #[test]
    fn one_without_the_other_is_refused() {
        let leaf = test_pki::self_signed("a.example.com");
        let err = route_certificate(&tls(Some(leaf.cert_pem()), None, None)).unwrap_err();
        assert_eq!(err.to_string(), "spec.tls.key: Invalid value: \"\": no key specified");
        let err = route_certificate(&tls(None, Some(leaf.key_pem()), None)).unwrap_err();
        assert_eq!(field_of(err), TlsField::Certificate);
    }

    #[test]
    fn key_of_another_certificate_is_refused_without_printing_it() {
        let leaf = test_pki::self_signed("a.example.com");
        let other = test_pki::self_signed("b.example.com");
        let err = route_certificate(&tls(Some(leaf.cert_pem()), Some(other.key_pem()), None)).unwrap_err();
        let message = err.to_string();
        assert_eq!(
            message,
            "spec.tls.key: Invalid value: \"redacted key data\": tls: private key does not match public key"
        );
        assert!(!message.contains("PRIVATE"));
    }

    #[test]
    fn sec1_keys_load() {
        let leaf = test_pki::self_signed("a.example.com");
        let sec1 = test_pki::sec1_pem(&leaf.key);
        assert!(sec1.starts_with("-----BEGIN EC PRIVATE KEY-----"));
        assert!(route_certificate(&tls(Some(leaf.cert_pem()), Some(sec1), None)).unwrap().is_some());
    }

    #[test]
    fn garbage_is_refused_per_field() {
        let leaf = test_pki::self_signed("a.example.com");
        let err = route_certificate(&tls(Some("not pem".into()), Some(leaf.key_pem()), None)).unwrap_err();
        assert!(err.to_string().starts_with("spec.tls.certificate: "), "{err}");
        let bad_key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_string();
        let err = route_certificate(&tls(Some(leaf.cert_pem()), Some(bad_key), None)).unwrap_err();
        assert!(err.to_string().starts_with("spec.tls.key: "), "{err}");
        let err = route_certificate(&tls(Some(leaf.cert_pem()), Some(leaf.key_pem()), Some("x".into()))).unwrap_err();
        assert!(err.to_string().starts_with("spec.tls.caCertificate: "), "{err}");
        let odd = format!("{}-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n", leaf.key_pem());
        let err = route_certificate(&tls(Some(leaf.cert_pem()), Some(odd), None)).unwrap_err();
        assert_eq!(err.to_string(), "spec.tls.key: Invalid value: \"redacted key data\": unrecognized PEM block FOO");
    }

    #[test]
    fn ca_signed_leaf_verifies_and_serves_the_ca_chain() {
        let pki = Pki::new();
        let leaf = pki.leaf("a.example.com");
        let key =
            route_certificate(&tls(Some(leaf.cert_pem()), Some(leaf.key_pem()), Some(pki.ca.pem()))).unwrap().unwrap();
        assert_eq!(key.cert, vec![leaf.cert.der().clone(), pki.ca.der().clone()]);
    }

    #[test]
    fn intermediate_in_the_certificate_field_completes_the_chain() {
        let root = Pki::new();
        let intermediate = root.intermediate("Intermediate");
        let leaf = intermediate.leaf("a.example.com");
        let bundle = format!("{}{}", leaf.cert_pem(), intermediate.ca.pem());
        let key = route_certificate(&tls(Some(bundle), Some(leaf.key_pem()), Some(root.ca.pem()))).unwrap().unwrap();
        assert_eq!(key.cert.len(), 3);
        // Without the intermediate the leaf does not chain to the root.
        let err =
            route_certificate(&tls(Some(leaf.cert_pem()), Some(leaf.key_pem()), Some(root.ca.pem()))).unwrap_err();
        assert!(err.to_string().contains("error verifying certificate"), "{err}");
    }

    #[test]
    fn leaf_of_another_ca_is_refused() {
        let pki = Pki::new();
        let other = Pki::named("Other CA");
        let leaf = other.leaf("a.example.com");
        let err = route_certificate(&tls(Some(leaf.cert_pem()), Some(leaf.key_pem()), Some(pki.ca.pem()))).unwrap_err();
        assert_eq!(field_of(err.clone()), TlsField::Certificate);
        assert!(err.to_string().contains("error verifying certificate"), "{err}");
    }

    #[test]
    fn expired_leaf_is_tolerated_like_openshift() {
        let pki = Pki::new();
        let mut params = rcgen::CertificateParams::new(vec!["old.example.com".to_string()]).unwrap();
        params.not_before = rcgen::date_time_ymd(2019, 1, 1);
        params.not_after = rcgen::date_time_ymd(2020, 1, 1);
        let leaf = pki.leaf_with(params);
        assert!(route_certificate(&tls(Some(leaf.cert_pem()), Some(leaf.key_pem()), Some(pki.ca.pem()))).is_ok());
    }

    #[test]
    fn client_auth_only_leaf_is_refused() {
        let pki = Pki::new();
        let mut params = rcgen::CertificateParams::new(vec!["a.example.com".to_string()]).unwrap();
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let leaf = pki.leaf_with(params);
        let err = route_certificate(&tls(Some(leaf.cert_pem()), Some(leaf.key_pem()), Some(pki.ca.pem()))).unwrap_err();
        assert_eq!(field_of(err), TlsField::Certificate);
    }

    #[test]
    fn sha1_signed_certificates_are_refused() {
        let pki = Pki::new();
        let leaf = pki.leaf("a.example.com");
        let sha1 = test_pki::pem_of(&test_pki::with_ecdsa_sha1(leaf.cert.der()));
        let err = route_certificate(&tls(Some(sha1), Some(leaf.key_pem()), None)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "spec.tls.certificate: Invalid value: \"redacted certificate data\": \
             router does not support CA-signed certs using SHA1"
        );
        let intermediate = pki.intermediate("SHA1 intermediate");
        let sha1_ca = test_pki::pem_of(&test_pki::with_ecdsa_sha1(intermediate.ca.der()));
        let leaf = intermediate.leaf("b.example.com");
        let err = route_certificate(&tls(Some(leaf.cert_pem()), Some(leaf.key_pem()), Some(sha1_ca))).unwrap_err();
        assert_eq!(field_of(err), TlsField::CaCertificate);
    }

    #[test]
    fn destination_ca_parses_certificates() {
        let pki = Pki::new();
        let other = Pki::named("Other");
        let store = destination_ca(&format!("{}{}", pki.ca.pem(), other.ca.pem())).unwrap();
        assert_eq!(store.len(), 2);
        let err = destination_ca("nothing here").unwrap_err();
        assert!(err.to_string().starts_with("spec.tls.destinationCACertificate: "), "{err}");
    }
}
