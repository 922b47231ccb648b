//! Test certificates made with rcgen: a CA, leaves it signs, self-signed certificates, and a DER rewriter that
//! swaps signature algorithm OIDs to make MD5/SHA-1 "signed" certificates (rcgen cannot sign with those).

#![allow(clippy::unwrap_used)] // test helpers panic where they fail

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rustls_pki_types::CertificateDer;

pub(crate) struct Pki {
    pub ca: rcgen::Certificate,
    pub ca_key: KeyPair,
}

pub(crate) struct Leaf {
    pub cert: rcgen::Certificate,
    pub key: KeyPair,
}

impl Leaf {
    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }
    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }
}

impl Pki {
    pub fn new() -> Pki {
        Pki::named("Test Root CA")
    }

    pub fn named(cn: &str) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = params.self_signed(&ca_key).unwrap();
        Pki { ca, ca_key }
    }

    pub fn leaf(&self, host: &str) -> Leaf {
        self.leaf_with(CertificateParams::new(vec![host.to_string()]).unwrap())
    }

    /// A certificate for `host` over an existing key (as a renewal that keeps the key makes).
    pub fn leaf_cert_for_key(&self, host: &str, key: &KeyPair) -> rcgen::Certificate {
        let mut params = CertificateParams::new(vec![host.to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, host);
        params.signed_by(key, &self.ca, &self.ca_key).unwrap()
    }

    pub fn leaf_with(&self, mut params: CertificateParams) -> Leaf {
        if params.distinguished_name.get(&DnType::CommonName).is_none() {
            if let Some(rcgen::SanType::DnsName(name)) = params.subject_alt_names.first() {
                params.distinguished_name.push(DnType::CommonName, name.as_str());
            }
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        Leaf { cert, key }
    }

    /// A CA whose certificate names `url` as its CRL distribution point.
    pub fn with_crl_url(url: &str) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, "CRL Test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.crl_distribution_points = vec![rcgen::CrlDistributionPoint { uris: vec![url.to_string()] }];
        let ca = params.self_signed(&ca_key).unwrap();
        Pki { ca, ca_key }
    }

    /// A CRL of this CA revoking `revoked`, issued in 2024, next update in 2099.
    pub fn crl(&self, revoked: &[&Leaf]) -> rcgen::CertificateRevocationList {
        let now = rcgen::date_time_ymd(2024, 1, 1);
        let revoked_certs = revoked
            .iter()
            .map(|leaf| {
                let (_, parsed) = x509_parser::parse_x509_certificate(leaf.cert.der()).unwrap();
                rcgen::RevokedCertParams {
                    serial_number: rcgen::SerialNumber::from_slice(parsed.raw_serial()),
                    revocation_time: now,
                    reason_code: None,
                    invalidity_date: None,
                }
            })
            .collect();
        let params = rcgen::CertificateRevocationListParams {
            this_update: now,
            next_update: rcgen::date_time_ymd(2099, 1, 1),
            crl_number: rcgen::SerialNumber::from(1u64),
            issuing_distribution_point: None,
            revoked_certs,
            key_identifier_method: rcgen::KeyIdMethod::Sha256,
        };
        params.signed_by(&self.ca, &self.ca_key).unwrap()
    }

    /// An intermediate CA signed by this one.
    pub fn intermediate(&self, cn: &str) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = params.signed_by(&ca_key, &self.ca, &self.ca_key).unwrap();
        Pki { ca, ca_key }
    }
}

pub(crate) fn self_signed(host: &str) -> Leaf {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec![host.to_string()]).unwrap();
    params.distinguished_name.push(DnType::CommonName, host);
    let cert = params.self_signed(&key).unwrap();
    Leaf { cert, key }
}

pub(crate) fn pem_of(der: &[u8]) -> String {
    let b64 = BASE64.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap());
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// `der` with every ecdsa-with-SHA256 OID replaced by ecdsa-with-SHA1 (the signature no longer verifies).
pub(crate) fn with_ecdsa_sha1(der: &[u8]) -> CertificateDer<'static> {
    const SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
    const SHA1: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x01];
    let out = replace_oid(der, SHA256, SHA1);
    assert_ne!(out, der, "no OID replaced");
    CertificateDer::from(out)
}

/// Re-encodes a DER tree, replacing OBJECT IDENTIFIER contents equal to `from` by `to`.
fn replace_oid(der: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = der;
    while !rest.is_empty() {
        let tag = rest[0];
        let (len, header) = match rest[1] {
            n if n < 0x80 => (n as usize, 2),
            n => {
                let count = (n & 0x7f) as usize;
                let len = rest[2..2 + count].iter().fold(0usize, |acc, b| (acc << 8) | *b as usize);
                (len, 2 + count)
            }
        };
        let content = &rest[header..header + len];
        let new_content = if tag & 0x20 != 0 {
            replace_oid(content, from, to)
        } else if tag == 0x06 && content == from {
            to.to_vec()
        } else {
            content.to_vec()
        };
        out.push(tag);
        push_len(&mut out, new_content.len());
        out.extend_from_slice(&new_content);
        rest = &rest[header + len..];
    }
    out
}

fn push_len(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().iter().copied().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
}

/// The SEC1 (`EC PRIVATE KEY`) form of a P-256 key: the ECPrivateKey inside rcgen's PKCS#8 document.
pub(crate) fn sec1_pem(key: &KeyPair) -> String {
    let pkcs8 = key.serialize_der();
    // PKCS#8: SEQUENCE { INTEGER version, SEQUENCE algorithm, OCTET STRING privateKey }
    let (_, body) = der_element(&pkcs8);
    let (rest, _version) = split_element(body);
    let (rest, _algorithm) = split_element(rest);
    let (_, octets) = der_element(rest);
    let b64 = BASE64.encode(octets);
    let mut out = String::from("-----BEGIN EC PRIVATE KEY-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap());
        out.push('\n');
    }
    out.push_str("-----END EC PRIVATE KEY-----\n");
    out
}

/// (tag, content) of the first element.
fn der_element(der: &[u8]) -> (u8, &[u8]) {
    let (header, len) = header_len(der);
    (der[0], &der[header..header + len])
}

/// (rest after the first element, the first element).
fn split_element(der: &[u8]) -> (&[u8], &[u8]) {
    let (header, len) = header_len(der);
    (&der[header + len..], &der[..header + len])
}

fn header_len(der: &[u8]) -> (usize, usize) {
    match der[1] {
        n if n < 0x80 => (2, n as usize),
        n => {
            let count = (n & 0x7f) as usize;
            (2 + count, der[2..2 + count].iter().fold(0usize, |acc, b| (acc << 8) | *b as usize))
        }
    }
}
