//! OCSP responses made in unit tests: a leaf naming a responder, its target, and DER responses with any
//! status, times, serial, signer and certificates sent along, signed with rustls's signing keys (ECDSA P-256).

#![allow(clippy::unwrap_used)] // test helpers panic where they fail

use std::time::SystemTime;

use rcgen::{CertificateParams, CustomExtension, ExtendedKeyUsagePurpose, KeyPair};
use rustls::SignatureScheme;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::der::{self, generalized_time};
use super::target::{encode_cert_id, target, CertId, Target};
use crate::tls::provider;
use crate::tls::test_pki::{Leaf, Pki};

/// ecdsa-with-SHA256, no parameters.
const ECDSA_SHA256: &[u8] = &[0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
/// id-pkix-ocsp-basic.
const BASIC: &[u8] = &[0x06, 0x09, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01];

/// `text` (YYYYMMDDHHMMSSZ) as a time.
pub fn at(text: &str) -> SystemTime {
    generalized_time(text.as_bytes()).unwrap()
}

/// A leaf of `pki` naming `http://127.0.0.1:9/` as its OCSP responder, and its stapling target.
pub fn leaf_and_target(pki: &Pki) -> (Leaf, Target) {
    let mut params = CertificateParams::new(vec!["a.example.com".to_string()]).unwrap();
    params.custom_extensions = vec![ocsp_access("http://127.0.0.1:9/")];
    let leaf = pki.leaf_with(params);
    let chain = vec![leaf.cert.der().clone(), pki.ca.der().clone()];
    let target = target(&chain).unwrap();
    (leaf, target)
}

/// A delegated responder certificate of `pki`, with or without the OCSPSigning extended key usage.
pub fn responder(pki: &Pki, ocsp_signing: bool) -> Leaf {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "responder");
    if ocsp_signing {
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::OcspSigning];
    }
    pki.leaf_with(params)
}

/// The AIA extension naming `url` as OCSP responder.
pub fn ocsp_access(url: &str) -> CustomExtension {
    let method = der::write(der::OID, &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01]);
    let description = der::sequence(&[&method, &der::write(0x86, url.as_bytes())]);
    CustomExtension::from_oid_content(&[1, 3, 6, 1, 5, 5, 7, 1, 1], der::sequence(&[&description]))
}

/// What a test response says.
pub struct Answer<'a> {
    pub id: CertId,
    /// `good` (`80 00`), a RevokedInfo (`a1 ...`) or `unknown` (`82 00`), encoded.
    pub status: Vec<u8>,
    pub this_update: &'a str,
    pub next_update: Option<&'a str>,
}

impl Answer<'_> {
    pub fn good(target: &Target) -> Answer<'static> {
        Answer {
            id: target.cert_id.clone(),
            status: vec![0x80, 0x00],
            this_update: "20250101000000Z",
            next_update: Some("20990101000000Z"),
        }
    }
}

/// RevokedInfo revoked at 2024-01-01, reason keyCompromise.
pub fn revoked() -> Vec<u8> {
    let reason = der::write(der::context(0), &der::write(der::ENUMERATED, &[1]));
    der::write(der::context(1), &[der::write(der::GENERALIZED_TIME, b"20240101000000Z"), reason].concat())
}

/// A successful basic OCSPResponse with `answer`, signed by `signer`, with `certs` sent along.
pub fn response(answer: &Answer<'_>, signer: &KeyPair, certs: &[&CertificateDer<'_>]) -> Vec<u8> {
    let mut single = vec![encode_cert_id(&answer.id), answer.status.clone()];
    single.push(der::write(der::GENERALIZED_TIME, answer.this_update.as_bytes()));
    if let Some(next) = answer.next_update {
        single.push(der::write(der::context(0), &der::write(der::GENERALIZED_TIME, next.as_bytes())));
    }
    let single = der::write(der::SEQUENCE, &single.concat());
    let tbs = der::sequence(&[
        &der::write(der::context(1), &der::sequence(&[])),
        &der::write(der::GENERALIZED_TIME, answer.this_update.as_bytes()),
        &der::sequence(&[&single]),
    ]);
    let key = provider::chosen().signing_key(&PrivateKeyDer::Pkcs8(signer.serialize_der().into())).unwrap();
    let signature = key.choose_scheme(&[SignatureScheme::ECDSA_NISTP256_SHA256]).unwrap().sign(&tbs).unwrap();
    let mut basic = vec![tbs, ECDSA_SHA256.to_vec(), der::write(der::BIT_STRING, &[&[0u8][..], &signature].concat())];
    if !certs.is_empty() {
        let list: Vec<u8> = certs.iter().flat_map(|c| c.to_vec()).collect();
        basic.push(der::write(der::context(0), &der::write(der::SEQUENCE, &list)));
    }
    let basic = der::write(der::SEQUENCE, &basic.concat());
    let bytes = der::sequence(&[BASIC, &der::write(der::OCTET_STRING, &basic)]);
    der::sequence(&[&der::write(der::ENUMERATED, &[0]), &der::write(der::context(0), &bytes)])
}
