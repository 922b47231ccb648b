//! Sticky-session cookies as the OpenShift router inserts them: `insert indirect nocache httponly`, named by
//! `router.openshift.io/cookie_name`, else `ROUTER_COOKIE_NAME`, else a hash of the route; the value is a
//! hash of the endpoint's server id.

use md5::{Digest, Md5};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SameSite {
    Lax,
    Strict,
    None,
}

impl SameSite {
    pub fn parse(value: &str) -> Option<SameSite> {
        match value.trim().to_ascii_lowercase().as_str() {
            "lax" => Some(SameSite::Lax),
            "strict" => Some(SameSite::Strict),
            "none" => Some(SameSite::None),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SameSite::Lax => "Lax",
            SameSite::Strict => "Strict",
            SameSite::None => "None",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CookiePolicy {
    pub name: String,
    /// Set on routes that terminate TLS unless their insecure policy is Allow.
    pub secure: bool,
    pub same_site: Option<SameSite>,
}

impl CookiePolicy {
    /// The `Set-Cookie` value that pins a client to the endpoint whose cookie value is `value`.
    pub fn set_cookie(&self, value: &str) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        // Browsers drop SameSite=None cookies that are not Secure.
        let same_site = self.same_site.filter(|same_site| *same_site != SameSite::None || self.secure);
        let (same_site_key, same_site) = same_site.map_or(("", ""), |same_site| ("; SameSite=", same_site.name()));
        // Joined at its exact length (this runs for every response that sets the cookie, and `format!` costs
        // about four times as much); an exact buffer also becomes a header value without another allocation.
        [self.name.as_str(), "=", value, "; path=/; HttpOnly", secure, same_site_key, same_site].concat()
    }
}

/// Lowercase hex MD5, the OpenShift router's hash for cookie names and values.
pub fn md5_hex(input: &str) -> String {
    CookieValue::of(input).as_str().to_owned()
}

/// An endpoint's sticky-cookie value, the hex MD5 of its server id, held inline: the table keeps one per
/// endpoint, and a 32-byte string would cost a pointer, a length and an allocation of its own.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CookieValue([u8; 32]);

impl CookieValue {
    pub fn of(id: &str) -> Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut hex = [0; 32];
        for (i, byte) in Md5::digest(id.as_bytes()).iter().enumerate() {
            hex[2 * i] = HEX[usize::from(byte >> 4)];
            hex[2 * i + 1] = HEX[usize::from(byte & 0xf)];
        }
        Self(hex)
    }

    pub fn as_str(&self) -> &str {
        // Hex digits only, so always UTF-8.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl std::fmt::Debug for CookieValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `[a-zA-Z0-9_-]+`, the names `router.openshift.io/cookie_name` accepts.
pub fn valid_cookie_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_cookie_attributes() {
        let plain = CookiePolicy { name: "sticky".into(), secure: false, same_site: None };
        assert_eq!(plain.set_cookie("abc"), "sticky=abc; path=/; HttpOnly");
        let tls = CookiePolicy { name: "s".into(), secure: true, same_site: Some(SameSite::None) };
        assert_eq!(tls.set_cookie("v"), "s=v; path=/; HttpOnly; Secure; SameSite=None");
        let lax = CookiePolicy { name: "s".into(), secure: false, same_site: Some(SameSite::Lax) };
        assert_eq!(lax.set_cookie("v"), "s=v; path=/; HttpOnly; SameSite=Lax");
    }

    #[test]
    fn md5_hex_matches_known_digests() {
        assert_eq!(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
        assert!(valid_cookie_name("my_cookie-1"));
        assert!(!valid_cookie_name("bad cookie"));
        assert!(!valid_cookie_name(""));
    }
}
