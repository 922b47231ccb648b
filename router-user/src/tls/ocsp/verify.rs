//! Whether a fetched OCSP response may be stapled for a target: signed by the certificate's issuer, or by a
//! responder certificate that the issuer signed for OCSP signing (extended key usage id-kp-OCSPSigning) and that
//! is valid now; answering for this certificate's CertID (issuer name and key hashes, serial); and current
//! (`thisUpdate` not in the future beyond a small clock skew, `nextUpdate` not passed).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::response::{parse, CertStatus};
use super::signature::{verify_signed, Signed};
use super::target::{CertParts, Target};

/// How far a responder's clock may run ahead of ours.
const CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);
/// How long a response without `nextUpdate` is served after its `thisUpdate`.
pub const WITHOUT_NEXT_UPDATE: Duration = Duration::from_secs(60 * 60);

/// A verified answer about the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verified {
    pub status: CertStatus,
    pub this_update: SystemTime,
    /// `nextUpdate`, or [`WITHOUT_NEXT_UPDATE`] after `thisUpdate`: the response is not served past it.
    pub expires: SystemTime,
}

/// Checks `bytes` (a DER OCSPResponse) against `target` at `now`.
pub fn verify(bytes: &[u8], target: &Target, now: SystemTime) -> Result<Verified, String> {
    let response = parse(bytes)?;
    let issuer = CertParts::of(&target.issuer)?;
    if verify_signed(&response.signed, &issuer.key).is_err() {
        let delegated = response.certs.iter().any(|cert| delegated_signer(cert, &issuer, &response.signed, now));
        if !delegated {
            return Err("signed neither by the issuer nor by a responder certificate the issuer delegated".into());
        }
    }
    let single = response
        .responses
        .iter()
        .find(|single| single.cert_id.as_ref() == Some(&target.cert_id))
        .ok_or("no answer for this certificate (serial and issuer)")?;
    if single.this_update > now + CLOCK_SKEW {
        return Err("thisUpdate is in the future".to_string());
    }
    let expires = single.next_update.unwrap_or(single.this_update + WITHOUT_NEXT_UPDATE);
    if expires <= now {
        return Err("nextUpdate has passed".to_string());
    }
    Ok(Verified { status: single.status, this_update: single.this_update, expires })
}

/// Whether `cert` is a responder certificate of `issuer` for OCSP signing, valid at `now`, whose key made
/// `signed`.
fn delegated_signer(cert: &[u8], issuer: &CertParts<'_>, signed: &Signed<'_>, now: SystemTime) -> bool {
    let Ok(parts) = CertParts::of(cert) else { return false };
    if parts.issuer != issuer.subject || verify_signed(&parts.signed, &issuer.key).is_err() {
        return false;
    }
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert) else { return false };
    let ocsp_signing = matches!(parsed.extended_key_usage(), Ok(Some(eku)) if eku.value.ocsp_signing);
    let seconds = now.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let validity = parsed.validity();
    let current = validity.not_before.timestamp() <= seconds && seconds <= validity.not_after.timestamp();
    ocsp_signing && current && verify_signed(signed, &parts.key).is_ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::ocsp::test_responses::{at, leaf_and_target, responder, response, revoked, Answer};
    use crate::tls::test_pki::Pki;

    #[test]
    fn a_good_answer_signed_by_the_issuer_is_current_until_next_update() {
        let pki = Pki::new();
        let (_, target) = leaf_and_target(&pki);
        let der = response(&Answer::good(&target), &pki.ca_key, &[]);
        let verified = verify(&der, &target, at("20260101000000Z")).unwrap();
        assert_eq!(verified.status, CertStatus::Good);
        assert_eq!((verified.this_update, verified.expires), (at("20250101000000Z"), at("20990101000000Z")));
        let without_next = Answer { next_update: None, ..Answer::good(&target) };
        let der = response(&without_next, &pki.ca_key, &[]);
        let verified = verify(&der, &target, at("20250101000000Z")).unwrap();
        assert_eq!(verified.expires, at("20250101000000Z") + WITHOUT_NEXT_UPDATE);
        assert!(verify(&der, &target, at("20250101020000Z")).is_err(), "an hour after thisUpdate");
    }

    #[test]
    fn revoked_and_unknown_answers_are_read() {
        let pki = Pki::new();
        let (_, target) = leaf_and_target(&pki);
        let now = at("20260101000000Z");
        let der = response(&Answer { status: revoked(), ..Answer::good(&target) }, &pki.ca_key, &[]);
        let status = verify(&der, &target, now).unwrap().status;
        assert_eq!(status, CertStatus::Revoked { at: at("20240101000000Z"), reason: Some(1) });
        let der = response(&Answer { status: vec![0x82, 0x00], ..Answer::good(&target) }, &pki.ca_key, &[]);
        assert_eq!(verify(&der, &target, now).unwrap().status, CertStatus::Unknown);
    }

    #[test]
    fn another_certificate_or_a_stale_or_future_answer_is_refused() {
        let pki = Pki::new();
        let (_, target) = leaf_and_target(&pki);
        let now = at("20260101000000Z");
        let mut other = Answer::good(&target);
        other.id.serial = vec![0x7f];
        let err = verify(&response(&other, &pki.ca_key, &[]), &target, now).unwrap_err();
        assert!(err.contains("no answer for this certificate"), "{err}");
        let mut other_issuer = Answer::good(&target);
        other_issuer.id.issuer_key_hash[0] ^= 1;
        assert!(verify(&response(&other_issuer, &pki.ca_key, &[]), &target, now).is_err());
        let der = response(&Answer::good(&target), &pki.ca_key, &[]);
        assert!(verify(&der, &target, at("21000101000000Z")).unwrap_err().contains("nextUpdate"));
        let future = Answer { this_update: "20300101000000Z", ..Answer::good(&target) };
        let err = verify(&response(&future, &pki.ca_key, &[]), &target, now).unwrap_err();
        assert!(err.contains("future"), "{err}");
    }

    #[test]
    fn only_the_issuer_or_a_responder_it_delegated_for_ocsp_signing_may_sign() {
        let pki = Pki::new();
        let (_, target) = leaf_and_target(&pki);
        let now = at("20260101000000Z");
        let good = Answer::good(&target);
        let delegated = responder(&pki, true);
        let der = response(&good, &delegated.key, &[delegated.cert.der()]);
        assert_eq!(verify(&der, &target, now).unwrap().status, CertStatus::Good);
        // The same key without the certificate, without the extended key usage, or certified by another CA.
        assert!(verify(&response(&good, &delegated.key, &[]), &target, now).is_err());
        let plain = responder(&pki, false);
        assert!(verify(&response(&good, &plain.key, &[plain.cert.der()]), &target, now).is_err());
        let stranger = responder(&Pki::named("Stranger CA"), true);
        assert!(verify(&response(&good, &stranger.key, &[stranger.cert.der()]), &target, now).is_err());
        let stranger_ca = Pki::named("Stranger CA");
        assert!(verify(&response(&good, &stranger_ca.ca_key, &[]), &target, now).is_err());
        // A delegated certificate that was not valid at the time.
        assert!(verify(&der, &target, at("19990101000000Z")).is_err());
    }

    #[test]
    fn any_truncation_or_error_status_is_an_error_not_a_panic() {
        let pki = Pki::new();
        let (_, target) = leaf_and_target(&pki);
        let der = response(&Answer::good(&target), &pki.ca_key, &[]);
        for end in 0..der.len() {
            assert!(verify(&der[..end], &target, at("20260101000000Z")).is_err(), "{end}");
        }
        let try_later = [0x30, 0x03, 0x0a, 0x01, 0x03];
        assert!(verify(&try_later, &target, at("20260101000000Z")).unwrap_err().contains("tryLater"));
    }
}
