//! Captured headers and cookie (ROUTER_CAPTURE_HTTP_REQUEST_HEADERS / _RESPONSE_HEADERS / ROUTER_CAPTURE_HTTP_COOKIE,
//! OpenShift's `name:maxLength` lists): the values HAProxy's `capture request header`, `capture response header`
//! and `capture cookie` put in `%hr`, `%hs`, `%CC` and `%CS`.

use http::header::{COOKIE, SET_COOKIE};
use http::{HeaderMap, HeaderName};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CaptureError {
    #[error("{variable}: {entry:?} is not name:maxLength")]
    Entry { variable: &'static str, entry: String },
    #[error("{variable}: {name:?} is not a valid header or cookie name")]
    Name { variable: &'static str, name: String },
}

/// `capture request header NAME len N` (or response).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderCapture {
    pub name: HeaderName,
    pub max_length: usize,
}

/// `capture cookie NAME len N`: the first cookie whose name starts with NAME, or is NAME when `exact` (the
/// setting's name ends with `=`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CookieCapture {
    pub name: String,
    pub exact: bool,
    pub max_length: usize,
}

/// A comma list of `name:maxLength`.
pub fn parse_header_captures(variable: &'static str, value: &str) -> Result<Vec<HeaderCapture>, CaptureError> {
    value
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let (name, max_length) = name_and_length(variable, entry)?;
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| CaptureError::Name { variable, name: name.to_string() })?;
            Ok(HeaderCapture { name, max_length })
        })
        .collect()
}

pub fn parse_cookie_capture(variable: &'static str, value: &str) -> Result<Option<CookieCapture>, CaptureError> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    let (name, max_length) = name_and_length(variable, value)?;
    let (name, exact) = match name.strip_suffix('=') {
        Some(name) => (name, true),
        None => (name, false),
    };
    if !is_token(name) {
        return Err(CaptureError::Name { variable, name: name.to_string() });
    }
    Ok(Some(CookieCapture { name: name.to_string(), exact, max_length }))
}

fn name_and_length<'v>(variable: &'static str, entry: &'v str) -> Result<(&'v str, usize), CaptureError> {
    let bad = || CaptureError::Entry { variable, entry: entry.to_string() };
    let mut parts = entry.split(':');
    let (Some(name), Some(length), None) = (parts.next(), parts.next(), parts.next()) else { return Err(bad()) };
    let max_length = length.trim().parse().map_err(|_| bad())?;
    Ok((name.trim(), max_length))
}

/// RFC 7230 token characters.
fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl HeaderCapture {
    /// The header's last value, cut at the capture's length (as HAProxy keeps the last occurrence).
    pub fn capture(&self, headers: &HeaderMap) -> Option<String> {
        let value = headers.get_all(&self.name).iter().next_back()?;
        Some(cut(value.as_bytes(), self.max_length))
    }
}

impl CookieCapture {
    /// `name=value` of the first matching cookie of the request's Cookie headers.
    pub fn from_request(&self, headers: &HeaderMap) -> Option<String> {
        headers
            .get_all(COOKIE)
            .iter()
            .flat_map(|value| value.as_bytes().split(|b| *b == b';'))
            .map(trim)
            .find(|pair| self.matches(pair))
            .map(|pair| cut(pair, self.max_length))
    }

    /// `name=value` of the first matching Set-Cookie of a response.
    pub fn from_response(&self, headers: &HeaderMap) -> Option<String> {
        headers
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|value| value.as_bytes().split(|b| *b == b';').next().map(trim))
            .find(|pair| self.matches(pair))
            .map(|pair| cut(pair, self.max_length))
    }

    fn matches(&self, pair: &[u8]) -> bool {
        let name = pair.split(|b| *b == b'=').next().unwrap_or_default();
        match self.exact {
            true => name == self.name.as_bytes(),
            false => name.starts_with(self.name.as_bytes()),
        }
    }
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |end| end + 1);
    &bytes[start..end]
}

fn cut(bytes: &[u8], max_length: usize) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(max_length)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn settings_parse_as_openshift_reads_them() {
        let captures = parse_header_captures("V", "Host:15, User-Agent:8").expect("captures");
        assert_eq!(captures[1], HeaderCapture { name: HeaderName::from_static("user-agent"), max_length: 8 });
        assert!(parse_header_captures("V", "").expect("empty").is_empty());
        assert!(matches!(parse_header_captures("V", "Host"), Err(CaptureError::Entry { .. })));
        assert!(matches!(parse_header_captures("V", "Ho st:3"), Err(CaptureError::Name { .. })));
        assert!(matches!(parse_header_captures("V", "Host:x"), Err(CaptureError::Entry { .. })));
        let cookie = parse_cookie_capture("V", "session=:20").expect("cookie").expect("set");
        assert_eq!(cookie, CookieCapture { name: "session".into(), exact: true, max_length: 20 });
        assert_eq!(parse_cookie_capture("V", "").expect("none"), None);
    }

    #[test]
    fn values_are_captured_and_cut() {
        let mut headers = HeaderMap::new();
        headers.append("user-agent", HeaderValue::from_static("first"));
        headers.append("user-agent", HeaderValue::from_static("curl/8.0.1"));
        headers.append("cookie", HeaderValue::from_static("a=1; sessionid=abcdef; session=xyz"));
        headers.append("set-cookie", HeaderValue::from_static("session=new; Path=/"));
        let ua = HeaderCapture { name: HeaderName::from_static("user-agent"), max_length: 8 };
        assert_eq!(ua.capture(&headers).as_deref(), Some("curl/8.0"));
        let prefix = CookieCapture { name: "session".into(), exact: false, max_length: 12 };
        assert_eq!(prefix.from_request(&headers).as_deref(), Some("sessionid=ab"));
        let exact = CookieCapture { name: "session".into(), exact: true, max_length: 64 };
        assert_eq!(exact.from_request(&headers).as_deref(), Some("session=xyz"));
        assert_eq!(exact.from_response(&headers).as_deref(), Some("session=new"));
    }
}
