//! An OCSPResponse (RFC 6960 4.2.1) read from DER: its status, and for a successful basic response the signed
//! ResponseData with its single responses and the certificates the responder sent along.

use std::time::SystemTime;

use super::der::{self, Reader};
use super::signature::Signed;
use super::target::{CertId, SHA1_ALGORITHM};

/// id-pkix-ocsp-basic (1.3.6.1.5.5.7.48.1.1), the OID's contents.
const BASIC: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01];

/// A successful basic response.
#[derive(Debug)]
pub struct BasicResponse<'a> {
    /// ResponseData with the responder's signature over it.
    pub signed: Signed<'a>,
    pub responses: Vec<SingleResponse>,
    /// Certificates sent along (a delegated responder's certificate, its chain), DER.
    pub certs: Vec<&'a [u8]>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SingleResponse {
    /// `None` for a CertID hashed with another algorithm than SHA-1 (never ours).
    pub cert_id: Option<CertId>,
    pub status: CertStatus,
    pub this_update: SystemTime,
    pub next_update: Option<SystemTime>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertStatus {
    Good,
    Revoked { at: SystemTime, reason: Option<u8> },
    Unknown,
}

/// The basic response in `bytes`; an error for any other status than `successful` (named), another response
/// type, or DER that does not read.
pub fn parse(bytes: &[u8]) -> Result<BasicResponse<'_>, String> {
    let mut outer = Reader::new(bytes);
    let response = outer.expect(der::SEQUENCE, "OCSPResponse")?;
    // DER is one definite-length structure: bytes after it are not part of an answer (the fuzz target's promise
    // that no cut or padded answer passes for a whole one).
    if !outer.is_empty() {
        return Err("bytes after the OCSPResponse".to_string());
    }
    let mut fields = response.contents();
    let status = fields.expect(der::ENUMERATED, "responseStatus")?.value;
    match status {
        [0] => {}
        [code] => return Err(format!("responder answered {}", status_name(*code))),
        _ => return Err("responseStatus: not one byte".to_string()),
    }
    let bytes_field = fields.expect(der::context(0), "responseBytes")?;
    let mut response_bytes = bytes_field.contents().expect(der::SEQUENCE, "ResponseBytes")?.contents();
    let kind = response_bytes.expect(der::OID, "responseType")?.value;
    if kind != BASIC {
        return Err("responseType is not id-pkix-ocsp-basic".to_string());
    }
    let basic_der = response_bytes.expect(der::OCTET_STRING, "response")?.value;
    let mut basic = Reader::new(basic_der).expect(der::SEQUENCE, "BasicOCSPResponse")?.contents();
    let signed = Signed::read(&mut basic, "BasicOCSPResponse")?;
    let mut certs = Vec::new();
    if let Some(list) = basic.optional(der::context(0))? {
        let mut list = list.contents().expect(der::SEQUENCE, "certs")?.contents();
        while !list.is_empty() {
            certs.push(list.expect(der::SEQUENCE, "certs: Certificate")?.raw);
        }
    }
    let responses = response_data(signed.message)?;
    Ok(BasicResponse { signed, responses, certs })
}

fn response_data(tbs: &[u8]) -> Result<Vec<SingleResponse>, String> {
    let mut data = Reader::new(tbs).expect(der::SEQUENCE, "ResponseData")?.contents();
    data.optional(der::context(0))?;
    let responder = data.any().map_err(|e| format!("responderID: {e}"))?;
    if responder.tag != der::context(1) && responder.tag != der::context(2) {
        return Err("responderID: neither byName nor byKey".to_string());
    }
    data.expect(der::GENERALIZED_TIME, "producedAt")?;
    let mut list = data.expect(der::SEQUENCE, "responses")?.contents();
    let mut responses = Vec::new();
    while !list.is_empty() {
        responses.push(single_response(&mut list)?);
    }
    Ok(responses)
}

fn single_response(list: &mut Reader<'_>) -> Result<SingleResponse, String> {
    let mut single = list.expect(der::SEQUENCE, "SingleResponse")?.contents();
    let mut id = single.expect(der::SEQUENCE, "certID")?.contents();
    let algorithm = id.expect(der::SEQUENCE, "certID hashAlgorithm")?.raw;
    let issuer_name_hash = id.expect(der::OCTET_STRING, "issuerNameHash")?.value.to_vec();
    let issuer_key_hash = id.expect(der::OCTET_STRING, "issuerKeyHash")?.value.to_vec();
    let serial = id.expect(der::INTEGER, "serialNumber")?.value.to_vec();
    // Some responders leave the NULL parameters out of SHA-1's identifier.
    let sha1 = algorithm == SHA1_ALGORITHM || algorithm == [&[0x30, 0x07], &SHA1_ALGORITHM[2..9]].concat();
    let cert_id = sha1.then_some(CertId { issuer_name_hash, issuer_key_hash, serial });
    let status = single.any().map_err(|e| format!("certStatus: {e}"))?;
    let status = match status.tag {
        tag if tag == der::context_primitive(0) => CertStatus::Good,
        tag if tag == der::context(1) => {
            let mut info = status.contents();
            let at = der::generalized_time(info.expect(der::GENERALIZED_TIME, "revocationTime")?.value)?;
            let reason = match info.optional(der::context(0))? {
                Some(reason) => reason.contents().expect(der::ENUMERATED, "revocationReason")?.value.first().copied(),
                None => None,
            };
            CertStatus::Revoked { at, reason }
        }
        tag if tag == der::context_primitive(2) => CertStatus::Unknown,
        tag => return Err(format!("certStatus: tag {tag:#04x}")),
    };
    let this_update = der::generalized_time(single.expect(der::GENERALIZED_TIME, "thisUpdate")?.value)?;
    let next_update = match single.optional(der::context(0))? {
        Some(next) => Some(der::generalized_time(next.contents().expect(der::GENERALIZED_TIME, "nextUpdate")?.value)?),
        None => None,
    };
    Ok(SingleResponse { cert_id, status, this_update, next_update })
}

fn status_name(code: u8) -> String {
    match code {
        1 => "malformedRequest".to_string(),
        2 => "internalError".to_string(),
        3 => "tryLater".to_string(),
        5 => "sigRequired".to_string(),
        6 => "unauthorized".to_string(),
        other => format!("status {other}"),
    }
}
