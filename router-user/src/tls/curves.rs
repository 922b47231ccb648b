//! Key exchange groups from ROUTER_CURVES (HAProxy's `ssl-default-bind-curves`): OpenSSL group names separated
//! by `:`, matched without regard to case as OpenSSL does. The router has X25519, P-256 and P-384 (ring), and with
//! the `aws-lc-rs` feature (on by default) the post-quantum hybrid X25519MLKEM768 (aws-lc-rs's implementation,
//! whichever provider runs the rest); other groups OpenSSL knows are warned about and skipped; a name OpenSSL does
//! not know, or a list leaving no group, is an error. Unset: [`DEFAULT_CURVES`].
//!
//! rustls as a server takes the first group of the client's list that it offers (and asks the client for another
//! key share only when the client sent none for it), so this list decides which groups are offered; its order
//! matters only to the names' listing.

use rustls::crypto::ring::kx_group;
use rustls::crypto::SupportedKxGroup;

use super::policy::TlsPolicyError;

/// ROUTER_CURVES when unset: the hybrid first where it is built in (docs/tls-key-exchange.md has the measurement
/// behind it), then the classic groups in rustls's order.
#[cfg(feature = "aws-lc-rs")]
pub const DEFAULT_CURVES: &str = "X25519MLKEM768:X25519:P-256:P-384";
#[cfg(not(feature = "aws-lc-rs"))]
pub const DEFAULT_CURVES: &str = "X25519:P-256:P-384";

/// The groups the router implements, under each name OpenSSL accepts for them.
const SUPPORTED: &[(&str, &dyn SupportedKxGroup)] = &[
    #[cfg(feature = "aws-lc-rs")]
    ("x25519mlkem768", rustls::crypto::aws_lc_rs::kx_group::X25519MLKEM768),
    ("x25519", kx_group::X25519),
    ("p-256", kx_group::SECP256R1),
    ("prime256v1", kx_group::SECP256R1),
    ("secp256r1", kx_group::SECP256R1),
    ("p-384", kx_group::SECP384R1),
    ("secp384r1", kx_group::SECP384R1),
];

/// Groups OpenSSL knows that this build lacks, lowercase.
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
    #[cfg(not(feature = "aws-lc-rs"))]
    "x25519mlkem768",
    "secp256r1mlkem768",
    "secp384r1mlkem1024",
    "mlkem512",
    "mlkem768",
    "mlkem1024",
];

/// The key exchange groups for a ROUTER_CURVES value (unset or empty: [`DEFAULT_CURVES`]).
pub fn kx_groups(spec: Option<&str>) -> Result<Vec<&'static dyn SupportedKxGroup>, TlsPolicyError> {
    let list = spec.map(str::trim).filter(|s| !s.is_empty()).unwrap_or(DEFAULT_CURVES);
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
    Ok(groups)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use rustls::NamedGroup;

    fn names(spec: &str) -> Vec<NamedGroup> {
        kx_groups(Some(spec)).unwrap().iter().map(|g| g.name()).collect()
    }

    #[test]
    fn openssl_names_in_order() {
        let default = [NamedGroup::X25519, NamedGroup::secp256r1, NamedGroup::secp384r1];
        #[cfg(feature = "aws-lc-rs")]
        let default = [&[NamedGroup::X25519MLKEM768][..], &default].concat();
        assert_eq!(names(DEFAULT_CURVES), default);
        for unset in [None, Some(" ")] {
            assert_eq!(kx_groups(unset).unwrap().iter().map(|g| g.name()).collect::<Vec<_>>(), default);
        }
        assert_eq!(names("P-384:X25519"), [NamedGroup::secp384r1, NamedGroup::X25519]);
        assert_eq!(names("prime256v1:secp256r1:P-256"), [NamedGroup::secp256r1]);
        assert_eq!(names("X448:x25519:P-521"), [NamedGroup::X25519]);
    }

    #[cfg(feature = "aws-lc-rs")]
    #[test]
    fn the_hybrid_is_aws_lc_rs_implementation() {
        let groups = kx_groups(Some("x25519MLKEM768:X25519")).unwrap();
        assert_eq!(
            groups.iter().map(|g| g.name()).collect::<Vec<_>>(),
            [NamedGroup::X25519MLKEM768, NamedGroup::X25519]
        );
        let hybrid: &dyn SupportedKxGroup = rustls::crypto::aws_lc_rs::kx_group::X25519MLKEM768;
        assert_eq!(format!("{:?}", groups[0]), format!("{hybrid:?}"));
    }

    #[cfg(not(feature = "aws-lc-rs"))]
    #[test]
    fn without_aws_lc_rs_the_hybrid_is_skipped() {
        assert_eq!(names("X25519MLKEM768:X25519"), [NamedGroup::X25519]);
    }

    #[test]
    fn unknown_names_and_empty_results_are_errors() {
        let err = kx_groups(Some("X25519:P-265")).unwrap_err();
        assert!(matches!(err, TlsPolicyError::UnknownName { setting: "ROUTER_CURVES", .. }), "{err}");
        assert!(err.to_string().contains("P-265"));
        assert!(matches!(kx_groups(Some("X448:P-521")), Err(TlsPolicyError::NoCurves(_))));
    }
}
