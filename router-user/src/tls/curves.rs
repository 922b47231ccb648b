//! Key exchange groups from ROUTER_CURVES (HAProxy's `ssl-default-bind-curves`): OpenSSL group names separated
//! by `:`, in preference order, matched without regard to case as OpenSSL does. The rustls ring provider has
//! X25519, P-256 and P-384; other groups OpenSSL knows are warned about and skipped; a name OpenSSL does not
//! know, or a list leaving no group, is an error. Unset: rustls's default order (X25519, P-256, P-384).

use rustls::crypto::ring::kx_group;
use rustls::crypto::SupportedKxGroup;

use super::policy::TlsPolicyError;

/// The groups rustls (ring) implements, under each name OpenSSL accepts for them.
const SUPPORTED: &[(&str, &dyn SupportedKxGroup)] = &[
    ("x25519", kx_group::X25519),
    ("p-256", kx_group::SECP256R1),
    ("prime256v1", kx_group::SECP256R1),
    ("secp256r1", kx_group::SECP256R1),
    ("p-384", kx_group::SECP384R1),
    ("secp384r1", kx_group::SECP384R1),
];

/// Groups OpenSSL knows that rustls (ring) lacks, lowercase.
const OPENSSL_ONLY: &[&str] = &[
    "p-521",
    "secp521r1",
    "x448",
    "ffdhe2048",
    "ffdhe3072",
    "ffdhe4096",
    "ffdhe6144",
    "ffdhe8192",
    "secp224r1",
    "p-224",
    "secp256k1",
    "brainpoolp256r1",
    "brainpoolp384r1",
    "brainpoolp512r1",
    "brainpoolp256r1tls13",
    "brainpoolp384r1tls13",
    "brainpoolp512r1tls13",
    "x25519mlkem768",
    "secp256r1mlkem768",
    "secp384r1mlkem1024",
    "mlkem512",
    "mlkem768",
    "mlkem1024",
];

/// The key exchange groups for a ROUTER_CURVES value; `None` (unset or empty): the provider's default.
pub fn kx_groups(spec: Option<&str>) -> Result<Option<Vec<&'static dyn SupportedKxGroup>>, TlsPolicyError> {
    let Some(list) = spec.map(str::trim).filter(|s| !s.is_empty()) else { return Ok(None) };
    let mut groups: Vec<&'static dyn SupportedKxGroup> = Vec::new();
    let mut skipped = Vec::new();
    for name in list.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        let lower = name.to_ascii_lowercase();
        match SUPPORTED.iter().find(|(known, _)| *known == lower) {
            Some((_, group)) if !groups.iter().any(|g| g.name() == group.name()) => groups.push(*group),
            Some(_) => {}
            None if OPENSSL_ONLY.contains(&lower.as_str()) => skipped.push(name),
            None => return Err(TlsPolicyError::UnknownName { setting: "ROUTER_CURVES", name: name.to_string() }),
        }
    }
    if !skipped.is_empty() {
        tracing::warn!(skipped = %skipped.join(":"), "ROUTER_CURVES: groups not supported by rustls are skipped");
    }
    if groups.is_empty() {
        return Err(TlsPolicyError::NoCurves(list.to_string()));
    }
    Ok(Some(groups))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use rustls::NamedGroup;

    fn names(spec: &str) -> Vec<NamedGroup> {
        kx_groups(Some(spec)).unwrap().unwrap().iter().map(|g| g.name()).collect()
    }

    #[test]
    fn openssl_names_in_order() {
        assert!(kx_groups(None).unwrap().is_none());
        assert!(kx_groups(Some(" ")).unwrap().is_none());
        assert_eq!(names("P-384:X25519"), [NamedGroup::secp384r1, NamedGroup::X25519]);
        assert_eq!(names("prime256v1:secp256r1:P-256"), [NamedGroup::secp256r1]);
        assert_eq!(names("X448:x25519:P-521"), [NamedGroup::X25519]);
    }

    #[test]
    fn unknown_names_and_empty_results_are_errors() {
        let err = kx_groups(Some("X25519:P-265")).unwrap_err();
        assert!(matches!(err, TlsPolicyError::UnknownName { setting: "ROUTER_CURVES", .. }), "{err}");
        assert!(err.to_string().contains("P-265"));
        assert!(matches!(kx_groups(Some("X448:P-521")), Err(TlsPolicyError::NoCurves(_))));
    }
}
