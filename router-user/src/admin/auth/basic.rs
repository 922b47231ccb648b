//! HTTP basic authentication against STATS_USERNAME / STATS_PASSWORD, as openshift/router checks it: the
//! user and password compared exactly (here in constant time, so a wrong guess learns nothing from timing).

use base64::Engine;
use http::HeaderValue;

/// The configured user name and password (either may be empty, not both).
#[derive(Clone, PartialEq, Eq)]
pub struct BasicCredentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for BasicCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicCredentials").field("username", &self.username).finish_non_exhaustive()
    }
}

impl BasicCredentials {
    /// Whether `authorization` (`Basic <base64 user:password>`) names exactly these credentials.
    pub fn accepts(&self, user: &str, password: &str) -> bool {
        // Both compared, whatever the first gives, so that the time taken does not tell which one differed.
        let user_ok = same(user.as_bytes(), self.username.as_bytes());
        let password_ok = same(password.as_bytes(), self.password.as_bytes());
        user_ok & password_ok
    }
}

/// The user and password of a `Basic` Authorization header; `None` for any other scheme or a malformed value.
pub fn basic_credentials(authorization: &HeaderValue) -> Option<(String, String)> {
    let value = authorization.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// The token of a `Bearer` Authorization header.
pub fn bearer_token(authorization: &HeaderValue) -> Option<&str> {
    let (scheme, token) = authorization.to_str().ok()?.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn same(a: &[u8], b: &[u8]) -> bool {
    let mut differ = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        differ |= usize::from(x ^ b.get(i).copied().unwrap_or(!x));
    }
    differ == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(value: &str) -> HeaderValue {
        HeaderValue::from_str(value).expect("header value")
    }

    #[test]
    fn basic_headers_are_decoded_and_compared_exactly() {
        let credentials = BasicCredentials { username: "admin".into(), password: "s3cret".into() };
        // "admin:s3cret"
        let (user, password) = basic_credentials(&header("Basic YWRtaW46czNjcmV0")).expect("basic");
        assert!(credentials.accepts(&user, &password));
        assert!(!credentials.accepts("admin", "s3cre"));
        assert!(!credentials.accepts("admin", "s3cret!"));
        assert!(!credentials.accepts("Admin", "s3cret"));
        assert_eq!(basic_credentials(&header("Bearer abc")), None);
        assert_eq!(basic_credentials(&header("Basic !!!")), None);
    }

    #[test]
    fn bearer_tokens_are_taken_from_the_header() {
        assert_eq!(bearer_token(&header("Bearer abc.def")), Some("abc.def"));
        assert_eq!(bearer_token(&header("bearer  xyz")), Some("xyz"));
        assert_eq!(bearer_token(&header("Basic YWRtaW46czNjcmV0")), None);
        assert_eq!(bearer_token(&header("Bearer ")), None);
    }
}
