//! Cipher suites from ROUTER_CIPHERS (TLS 1.2) and ROUTER_CIPHERSUITES (TLS 1.3), mapped onto the suites the
//! rustls ring provider implements (ECDHE with AES-GCM or ChaCha20-Poly1305 only: no CBC, no DHE, no static
//! RSA). Profiles: `modern` is Mozilla's current modern profile, TLS 1.3 only (no TLS 1.2 suite); `intermediate`
//! the ECDHE AES-GCM and ChaCha20 suites; `old` everything rustls has, which is the same set. A list is OpenSSL
//! names separated by `:`; OpenSSL names rustls lacks, and OpenSSL keywords and operators (`!aNULL`, `HIGH`), are
//! warned about and skipped; a name OpenSSL does not know either, or a list leaving no suite, is an error.

use rustls::crypto::ring::cipher_suite as suite;
use rustls::SupportedCipherSuite;

use super::openssl_names::{CIPHER_KEYWORDS, CIPHER_NAMES};
use super::policy::TlsPolicyError;

/// OpenSSL names of the TLS 1.2 suites rustls (ring) implements, in Mozilla's intermediate order.
const TLS12: &[(&str, SupportedCipherSuite)] = &[
    ("ECDHE-ECDSA-AES128-GCM-SHA256", suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
    ("ECDHE-RSA-AES128-GCM-SHA256", suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
    ("ECDHE-ECDSA-AES256-GCM-SHA384", suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384),
    ("ECDHE-RSA-AES256-GCM-SHA384", suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
    ("ECDHE-ECDSA-CHACHA20-POLY1305", suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256),
    ("ECDHE-RSA-CHACHA20-POLY1305", suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256),
];

/// Names of the TLS 1.3 suites (OpenSSL uses the IANA names for these).
const TLS13: &[(&str, SupportedCipherSuite)] = &[
    ("TLS_AES_128_GCM_SHA256", suite::TLS13_AES_128_GCM_SHA256),
    ("TLS_AES_256_GCM_SHA384", suite::TLS13_AES_256_GCM_SHA384),
    ("TLS_CHACHA20_POLY1305_SHA256", suite::TLS13_CHACHA20_POLY1305_SHA256),
];

/// TLS 1.2 suites for a ROUTER_CIPHERS value; empty for `modern` (TLS 1.2 then is not offered).
pub fn tls12_suites(spec: &str) -> Result<Vec<SupportedCipherSuite>, TlsPolicyError> {
    match spec.trim() {
        "modern" => Ok(Vec::new()),
        "intermediate" | "old" | "" => Ok(TLS12.iter().map(|(_, s)| *s).collect()),
        list => {
            let suites = pick(list, TLS12, "ROUTER_CIPHERS", is_openssl_tls12_entry)?;
            if suites.is_empty() {
                return Err(TlsPolicyError::NoCiphers { setting: "ROUTER_CIPHERS", value: list.to_string() });
            }
            Ok(suites)
        }
    }
}

/// TLS 1.3 suites for a ROUTER_CIPHERSUITES value; unset means all three.
pub fn tls13_suites(spec: Option<&str>) -> Result<Vec<SupportedCipherSuite>, TlsPolicyError> {
    match spec.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(TLS13.iter().map(|(_, s)| *s).collect()),
        Some(list) => {
            let suites = pick(list, TLS13, "ROUTER_CIPHERSUITES", is_openssl_tls13_name)?;
            if suites.is_empty() {
                return Err(TlsPolicyError::NoCiphers { setting: "ROUTER_CIPHERSUITES", value: list.to_string() });
            }
            Ok(suites)
        }
    }
}

/// TLS 1.3 suite names OpenSSL knows (rustls lacks the CCM ones).
const OPENSSL_TLS13: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_AES_128_CCM_SHA256",
    "TLS_AES_128_CCM_8_SHA256",
];

/// The known suites named in `list`, in the list's order, without duplicates; warns about the entries OpenSSL
/// knows but rustls lacks, and refuses an entry OpenSSL does not know (`known_to_openssl`).
fn pick(
    list: &str,
    known: &[(&str, SupportedCipherSuite)],
    setting: &'static str,
    known_to_openssl: fn(&str) -> bool,
) -> Result<Vec<SupportedCipherSuite>, TlsPolicyError> {
    let mut suites: Vec<SupportedCipherSuite> = Vec::new();
    let mut skipped = Vec::new();
    for name in list.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        match known.iter().find(|(known_name, _)| *known_name == name) {
            Some((_, suite)) if !suites.iter().any(|s| s.suite() == suite.suite()) => suites.push(*suite),
            Some(_) => {}
            None if known_to_openssl(name) => skipped.push(name),
            None => return Err(TlsPolicyError::UnknownName { setting, name: name.to_string() }),
        }
    }
    if !skipped.is_empty() {
        tracing::warn!(setting, skipped = %skipped.join(":"), "cipher names not supported by rustls are skipped");
    }
    Ok(suites)
}

/// A ROUTER_CIPHERS entry OpenSSL accepts: a cipher name or keywords joined by `+`, optionally after `!`, `-`
/// or `+`, or `@SECLEVEL=n`.
fn is_openssl_tls12_entry(entry: &str) -> bool {
    if let Some(level) = entry.strip_prefix("@SECLEVEL=") {
        return level.parse::<u8>().is_ok_and(|level| level <= 5);
    }
    let body = entry.strip_prefix(['!', '-', '+']).unwrap_or(entry);
    CIPHER_NAMES.contains(&body)
        || (!body.is_empty()
            && body.split('+').all(|word| CIPHER_KEYWORDS.contains(&word) || CIPHER_NAMES.contains(&word)))
}

fn is_openssl_tls13_name(name: &str) -> bool {
    OPENSSL_TLS13.contains(&name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;

    #[test]
    fn profiles() {
        assert!(tls12_suites("modern").unwrap().is_empty());
        assert_eq!(tls12_suites("intermediate").unwrap().len(), 6);
        assert_eq!(tls12_suites("old").unwrap().len(), 6);
        assert!(tls12_suites("intermediate").unwrap().iter().all(|s| s.version() == &rustls::version::TLS12));
    }

    #[test]
    fn openssl_lists_keep_known_names_in_order() {
        let suites = tls12_suites("DHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305:!aNULL:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305")
            .unwrap();
        assert_eq!(
            suites.iter().map(|s| s.suite()).collect::<Vec<_>>(),
            [
                rustls::CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
                rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
            ]
        );
        assert!(matches!(tls12_suites("AES128-SHA:DES-CBC3-SHA"), Err(TlsPolicyError::NoCiphers { .. })));
    }

    #[test]
    fn tls13_suites_by_name() {
        assert_eq!(tls13_suites(None).unwrap().len(), 3);
        let suites = tls13_suites(Some("TLS_AES_256_GCM_SHA384:TLS_AES_128_CCM_SHA256")).unwrap();
        assert_eq!(
            suites.iter().map(|s| s.suite()).collect::<Vec<_>>(),
            [rustls::CipherSuite::TLS13_AES_256_GCM_SHA384]
        );
        assert!(tls13_suites(Some("TLS_AES_128_CCM_SHA256")).is_err());
    }

    #[test]
    fn names_openssl_does_not_know_are_refused() {
        let err = tls12_suites("ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA265").unwrap_err();
        assert!(err.to_string().contains("ECDHE-RSA-AES128-GCM-SHA265"), "{err}");
        assert!(matches!(tls12_suites("ECDHE-RSA-AES128-GCM-SHA256:!aNUL"), Err(TlsPolicyError::UnknownName { .. })));
        assert!(matches!(tls13_suites(Some("TLS_AES_512_GCM")), Err(TlsPolicyError::UnknownName { .. })));
        // OpenShift's intermediate list, keywords and all, keeps the six suites rustls has.
        let openshift = "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:\
            ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:DHE-RSA-AES128-GCM-SHA256:\
            DHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-SHA256:ECDHE-RSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA:\
            ECDHE-RSA-DES-CBC3-SHA:EDH-RSA-DES-CBC3-SHA:AES128-GCM-SHA256:DES-CBC3-SHA:!DSS:kEDH+AESGCM:HIGH:@SECLEVEL=0";
        assert_eq!(tls12_suites(openshift).unwrap().len(), 6);
    }
}
