//! Signatures over DER structures (a certificate's TBSCertificate, an OCSP response's ResponseData), checked
//! with the signature algorithms of the process's crypto provider, chosen as webpki chooses them: the one whose
//! signature AlgorithmIdentifier and public key AlgorithmIdentifier both match, byte for byte.

use super::der::{self, Element, Reader};
use crate::tls::provider;

/// A signed structure: the signed bytes (whole DER), the signature algorithm and the signature.
#[derive(Clone, Copy, Debug)]
pub struct Signed<'a> {
    pub message: &'a [u8],
    /// The AlgorithmIdentifier's contents (without its SEQUENCE header), as rustls names algorithms.
    pub algorithm: &'a [u8],
    pub signature: &'a [u8],
}

impl<'a> Signed<'a> {
    /// Reads `tbs SEQUENCE, AlgorithmIdentifier, BIT STRING` from `reader` (the head of a Certificate or a
    /// BasicOCSPResponse).
    pub fn read(reader: &mut Reader<'a>, what: &str) -> Result<Signed<'a>, String> {
        let message = reader.expect(der::SEQUENCE, &format!("{what}: signed data"))?.raw;
        let algorithm = reader.expect(der::SEQUENCE, &format!("{what}: signatureAlgorithm"))?.value;
        let signature = bit_string(reader.expect(der::BIT_STRING, &format!("{what}: signature"))?)?;
        Ok(Signed { message, algorithm, signature })
    }
}

/// A SubjectPublicKeyInfo: its algorithm (contents) and the key's bits.
#[derive(Clone, Copy, Debug)]
pub struct SubjectKey<'a> {
    pub algorithm: &'a [u8],
    pub key_bits: &'a [u8],
}

impl<'a> SubjectKey<'a> {
    pub fn read(info: Element<'a>) -> Result<SubjectKey<'a>, String> {
        let mut contents = info.contents();
        let algorithm = contents.expect(der::SEQUENCE, "subjectPublicKeyInfo algorithm")?.value;
        let key_bits = bit_string(contents.expect(der::BIT_STRING, "subjectPublicKey")?)?;
        Ok(SubjectKey { algorithm, key_bits })
    }
}

/// Whether `key` signed `signed`.
pub fn verify_signed(signed: &Signed<'_>, key: &SubjectKey<'_>) -> Result<(), String> {
    let algorithms = provider::chosen().crypto_provider().signature_verification_algorithms;
    let algorithm = algorithms
        .all
        .iter()
        .find(|a| a.signature_alg_id().as_ref() == signed.algorithm && a.public_key_alg_id().as_ref() == key.algorithm)
        .ok_or("signature algorithm not supported for this key")?;
    algorithm.verify_signature(key.key_bits, signed.message, signed.signature).map_err(|_| "bad signature".to_string())
}

/// A BIT STRING's bits, which must fill whole bytes (keys and signatures do).
fn bit_string(element: Element<'_>) -> Result<&[u8], String> {
    match element.value.split_first() {
        Some((0, bits)) => Ok(bits),
        _ => Err("BIT STRING with unused bits".to_string()),
    }
}
