//! What stapling a certificate needs, read from the chain it is served with: the leaf's OCSP responder (the
//! `http:` URIs of its Authority Information Access extension), its issuer (the chain certificate named by the
//! leaf's issuer whose key verifies the leaf's signature: the PEM's chain or the route's `caCertificate`, which
//! the served chain carries), the CertID (RFC 6960, SHA-1 as responders expect) and the DER request.

use rustls_pki_types::CertificateDer;
use sha1::{Digest, Sha1};
use x509_parser::extensions::{GeneralName, ParsedExtension};

use super::der::{self, Reader};
use super::signature::{verify_signed, Signed, SubjectKey};

/// id-ad-ocsp (1.3.6.1.5.5.7.48.1), as x509-parser prints OIDs.
const OCSP_ACCESS_METHOD: &str = "1.3.6.1.5.5.7.48.1";
/// AlgorithmIdentifier of SHA-1 (1.3.14.3.2.26) with NULL parameters, as CertIDs carry it.
pub const SHA1_ALGORITHM: &[u8] = &[0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00];

/// The identity of one certificate in OCSP (RFC 6960 4.1.1), SHA-1 hashes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertId {
    pub issuer_name_hash: Vec<u8>,
    pub issuer_key_hash: Vec<u8>,
    /// The serial number's INTEGER contents.
    pub serial: Vec<u8>,
}

/// A certificate that can be stapled: where to ask, what to ask, and who may answer.
#[derive(Clone, Debug)]
pub struct Target {
    pub urls: Vec<String>,
    pub cert_id: CertId,
    /// The DER OCSPRequest for `cert_id`.
    pub request: Vec<u8>,
    pub issuer: CertificateDer<'static>,
}

/// The stapling target of a served chain (leaf first); why not, when the leaf names no `http:` responder or its
/// issuer is not in the chain.
pub fn target(chain: &[CertificateDer<'static>]) -> Result<Target, String> {
    let leaf = chain.first().ok_or("no certificate")?;
    let urls = responder_urls(leaf)?;
    if urls.is_empty() {
        return Err("the certificate names no http: OCSP responder".to_string());
    }
    let leaf_parts = CertParts::of(leaf)?;
    let issuer = chain[1..]
        .iter()
        .find(|candidate| {
            CertParts::of(candidate).is_ok_and(|parts| {
                parts.subject == leaf_parts.issuer && verify_signed(&leaf_parts.signed, &parts.key).is_ok()
            })
        })
        .ok_or("its issuer is not in the served chain")?;
    let issuer_parts = CertParts::of(issuer)?;
    let cert_id = CertId {
        issuer_name_hash: Sha1::digest(leaf_parts.issuer).to_vec(),
        issuer_key_hash: Sha1::digest(issuer_parts.key.key_bits).to_vec(),
        serial: leaf_parts.serial.to_vec(),
    };
    let request = request(&cert_id);
    Ok(Target { urls, cert_id, request, issuer: issuer.clone() })
}

/// The DER OCSPRequest asking about `id` alone, unsigned, without a nonce (a stapled response is shared by
/// every client, so it carries none).
pub fn request(id: &CertId) -> Vec<u8> {
    let cert_id = encode_cert_id(id);
    let one_request = der::sequence(&[&cert_id]);
    let request_list = der::sequence(&[&one_request]);
    let tbs_request = der::sequence(&[&request_list]);
    der::sequence(&[&tbs_request])
}

pub fn encode_cert_id(id: &CertId) -> Vec<u8> {
    der::sequence(&[
        SHA1_ALGORITHM,
        &der::write(der::OCTET_STRING, &id.issuer_name_hash),
        &der::write(der::OCTET_STRING, &id.issuer_key_hash),
        &der::write(der::INTEGER, &id.serial),
    ])
}

/// The `http:` OCSP responders of the leaf's Authority Information Access extension.
fn responder_urls(leaf: &CertificateDer<'_>) -> Result<Vec<String>, String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(leaf).map_err(|e| format!("certificate: {e}"))?;
    let mut urls = Vec::new();
    for extension in parsed.extensions() {
        let ParsedExtension::AuthorityInfoAccess(access) = extension.parsed_extension() else { continue };
        for description in &access.accessdescs {
            if description.access_method.to_id_string() != OCSP_ACCESS_METHOD {
                continue;
            }
            if let GeneralName::URI(uri) = description.access_location {
                if uri.starts_with("http:") {
                    urls.push(uri.to_string());
                }
            }
        }
    }
    Ok(urls)
}

/// The parts of a certificate that OCSP looks at, borrowed from its DER.
pub struct CertParts<'a> {
    pub serial: &'a [u8],
    /// The issuer Name, whole DER.
    pub issuer: &'a [u8],
    /// The subject Name, whole DER.
    pub subject: &'a [u8],
    pub key: SubjectKey<'a>,
    /// The TBSCertificate with the issuer's signature over it.
    pub signed: Signed<'a>,
}

impl<'a> CertParts<'a> {
    pub fn of(cert: &'a [u8]) -> Result<CertParts<'a>, String> {
        let mut outer = Reader::new(cert);
        let certificate = outer.expect(der::SEQUENCE, "Certificate")?;
        let signed = Signed::read(&mut certificate.contents(), "Certificate")?;
        let mut tbs = Reader::new(signed.message).expect(der::SEQUENCE, "TBSCertificate")?.contents();
        tbs.optional(der::context(0))?;
        let serial = tbs.expect(der::INTEGER, "serialNumber")?.value;
        tbs.expect(der::SEQUENCE, "signature")?;
        let issuer = tbs.expect(der::SEQUENCE, "issuer")?.raw;
        tbs.expect(der::SEQUENCE, "validity")?;
        let subject = tbs.expect(der::SEQUENCE, "subject")?.raw;
        let key = SubjectKey::read(tbs.expect(der::SEQUENCE, "subjectPublicKeyInfo")?)?;
        Ok(CertParts { serial, issuer, subject, key, signed })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::ocsp::test_responses::{leaf_and_target, ocsp_access};
    use crate::tls::test_pki::Pki;

    #[test]
    fn the_target_names_the_responder_the_issuer_and_the_serial() {
        let pki = Pki::new();
        let (leaf, target) = leaf_and_target(&pki);
        assert_eq!(target.urls, ["http://127.0.0.1:9/"]);
        assert_eq!(target.issuer, *pki.ca.der());
        let leaf_der = leaf.cert.der().to_vec();
        let parts = CertParts::of(&leaf_der).unwrap();
        assert_eq!(target.cert_id.serial, parts.serial);
        assert_eq!(target.cert_id.issuer_name_hash, Sha1::digest(parts.issuer).to_vec());
        // The request is OCSPRequest { TBSRequest { requestList { Request { CertID } } } }.
        let mut reader = Reader::new(&target.request);
        let request = reader.expect(der::SEQUENCE, "OCSPRequest").unwrap();
        assert!(reader.is_empty());
        let tbs = request.contents().expect(der::SEQUENCE, "TBSRequest").unwrap();
        let list = tbs.contents().expect(der::SEQUENCE, "requestList").unwrap();
        let one = list.contents().expect(der::SEQUENCE, "Request").unwrap();
        assert_eq!(one.contents().expect(der::SEQUENCE, "CertID").unwrap().raw, encode_cert_id(&target.cert_id));
    }

    #[test]
    fn no_responder_or_no_issuer_in_the_chain_means_no_target() {
        let pki = Pki::new();
        let plain = pki.leaf("a.example.com");
        let err = target(&[plain.cert.der().clone(), pki.ca.der().clone()]).unwrap_err();
        assert!(err.contains("no http: OCSP responder"), "{err}");
        let mut params = rcgen::CertificateParams::new(vec!["a.example.com".to_string()]).unwrap();
        params.custom_extensions = vec![ocsp_access("http://127.0.0.1:9/")];
        let leaf = pki.leaf_with(params);
        let err = target(&[leaf.cert.der().clone()]).unwrap_err();
        assert!(err.contains("issuer"), "{err}");
        // A certificate with the issuer's name but another key is not the issuer.
        let impostor = Pki::named("Test Root CA");
        assert!(target(&[leaf.cert.der().clone(), impostor.ca.der().clone()]).is_err());
        let mut https = rcgen::CertificateParams::new(vec!["a.example.com".to_string()]).unwrap();
        https.custom_extensions = vec![ocsp_access("https://127.0.0.1:9/")];
        let leaf = pki.leaf_with(https);
        assert!(target(&[leaf.cert.der().clone(), pki.ca.der().clone()]).is_err(), "only http: is fetched");
    }
}
