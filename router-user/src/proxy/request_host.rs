//! Which host a request is for: the authority of an absolute-form target (RFC 9112 section 3.2.2) or of
//! HTTP/2's `:authority`, else the Host header. As HAProxy does: an HTTP/1 Host header naming another host or
//! port than the absolute-form target makes the request invalid (400), and HTTP/2's `:authority` replaces any
//! Host header. An authority comes back lowercased, without user info and without its scheme's default port,
//! which is then also the Host the pod gets.

use http::uri::{Authority, Scheme};
use http::{HeaderMap, Uri, Version};

/// An absolute-form target and a Host header that name different hosts or ports.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("Host header {host:?} disagrees with the request target's authority {authority:?}")]
pub struct HostConflict {
    pub authority: String,
    pub host: String,
}

/// The host `uri`, `version` and `headers` address: `Ok(None)` when neither the target nor a Host header
/// names one.
pub fn request_host(version: Version, uri: &Uri, headers: &HeaderMap) -> Result<Option<String>, HostConflict> {
    let header = headers.get(http::header::HOST);
    let (scheme, authority) = match (uri.scheme(), uri.authority()) {
        // HTTP/2 and HTTP/3: `:authority` wins over a Host header.
        (scheme, Some(authority)) if multiplexed(version) => (scheme, authority),
        (Some(scheme), Some(authority)) => (Some(scheme), authority),
        // Origin-form (and CONNECT's authority-form): the Host header says, or the authority when alone.
        _ => {
            let from_header = header.and_then(|value| value.to_str().ok()).map(str::to_string);
            return Ok(from_header.or_else(|| uri.authority().map(|a| a.as_str().to_string())));
        }
    };
    let default_port = scheme.and_then(default_port);
    if !multiplexed(version) {
        if let Some(value) = header {
            let host = String::from_utf8_lossy(value.as_bytes());
            if !same_origin(authority, &host, default_port) {
                return Err(HostConflict { authority: authority.as_str().to_string(), host: host.into_owned() });
            }
        }
    }
    let name = authority.host();
    let mut host = String::with_capacity(name.len() + 6);
    host.push_str(name);
    host.make_ascii_lowercase();
    if let Some(port) = authority.port_u16().filter(|port| Some(*port) != default_port) {
        push_port(&mut host, port);
    }
    Ok(Some(host))
}

/// Appends `:<port>` in decimal (`format!` costs about a thousand instructions, and HTTP/2 requests to a
/// port other than 443 come here every time). The access log's `decimal::push_unsigned` writes into bytes:
/// building the host as bytes for it and checking them back into a `String` measured 280 instructions more
/// per HTTP/2 request than these few lines.
fn push_port(host: &mut String, mut port: u16) {
    let mut digits = [0u8; 5];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (port % 10) as u8;
        port /= 10;
        if port == 0 {
            break;
        }
    }
    host.push(':');
    host.extend(digits[start..].iter().map(|&digit| char::from(digit)));
}

/// HTTP/2 and HTTP/3 carry the target's authority in `:authority` (RFC 9113 section 8.3.1, RFC 9114 section
/// 4.3.1).
fn multiplexed(version: Version) -> bool {
    version == Version::HTTP_2 || version == Version::HTTP_3
}

fn default_port(scheme: &Scheme) -> Option<u16> {
    if *scheme == Scheme::HTTP {
        Some(80)
    } else if *scheme == Scheme::HTTPS {
        Some(443)
    } else {
        None
    }
}

/// The Host header `host` names the authority's host and port, a missing port standing for the scheme's
/// default (HAProxy's check of absolute-form targets).
fn same_origin(authority: &Authority, host: &str, default_port: Option<u16>) -> bool {
    let Ok(host) = host.trim().parse::<Authority>() else { return false };
    if host.as_str().contains('@') || !authority.host().eq_ignore_ascii_case(host.host()) {
        return false;
    }
    let port = |a: &Authority| a.port_u16().or(default_port);
    match (authority.port(), host.port()) {
        (None, None) => true,
        _ => port(authority).is_some() && port(authority) == port(&host),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn host_of(version: Version, target: &str, host: Option<&str>) -> Result<Option<String>, HostConflict> {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(http::header::HOST, HeaderValue::from_str(host).expect("header value"));
        }
        request_host(version, &target.parse().expect("target"), &headers)
    }

    fn ok(version: Version, target: &str, host: Option<&str>) -> String {
        host_of(version, target, host).expect("no conflict").expect("a host")
    }

    #[test]
    fn origin_form_goes_by_the_host_header() {
        assert_eq!(ok(Version::HTTP_11, "/x", Some("A.example.com:8080")), "A.example.com:8080");
        assert_eq!(host_of(Version::HTTP_11, "/x", None), Ok(None));
        assert_eq!(ok(Version::HTTP_11, "a.example.com:443", Some("a.example.com:443")), "a.example.com:443");
        assert_eq!(ok(Version::HTTP_11, "a.example.com:443", None), "a.example.com:443");
    }

    #[test]
    fn absolute_form_goes_by_its_authority() {
        let cases = [
            ("http://A.Example.com/x", None, "a.example.com"),
            ("http://a.example.com/x", Some("a.example.com"), "a.example.com"),
            ("http://a.example.com:80/x", Some("A.EXAMPLE.COM"), "a.example.com"),
            ("http://a.example.com/x", Some("a.example.com:80"), "a.example.com"),
            ("http://a.example.com:8080/x", Some("a.example.com:8080"), "a.example.com:8080"),
            ("https://a.example.com:443/x", Some("a.example.com"), "a.example.com"),
            ("http://user@a.example.com/x", Some("a.example.com"), "a.example.com"),
            ("http://[::1]:8080/x", Some("[::1]:8080"), "[::1]:8080"),
            ("http://a.example.com/x", Some(" a.example.com "), "a.example.com"),
        ];
        for (target, host, want) in cases {
            assert_eq!(ok(Version::HTTP_11, target, host), want, "{target} with Host {host:?}");
        }
    }

    #[test]
    fn a_disagreeing_host_header_is_a_conflict() {
        let cases = [
            ("http://a.example.com/x", "b.example.com"),
            ("http://a.example.com/x", "a.example.com:8080"),
            ("http://a.example.com:8080/x", "a.example.com"),
            ("http://a.example.com:8080/x", "a.example.com:8081"),
            ("https://a.example.com/x", "a.example.com:80"),
            ("http://a.example.com/x", "user@a.example.com"),
            ("http://a.example.com/x", "a.example.com/y"),
            ("ftp://a.example.com/x", "a.example.com:21"),
        ];
        for (target, host) in cases {
            assert!(host_of(Version::HTTP_11, target, Some(host)).is_err(), "{target} with Host {host}");
        }
    }

    #[test]
    fn http2_authority_replaces_the_host_header() {
        assert_eq!(ok(Version::HTTP_2, "https://a.example.com/x", Some("b.example.com")), "a.example.com");
        assert_eq!(ok(Version::HTTP_2, "https://a.example.com:8443/x", None), "a.example.com:8443");
        assert_eq!(ok(Version::HTTP_2, "/x", Some("b.example.com")), "b.example.com");
        assert_eq!(ok(Version::HTTP_3, "https://a.example.com/x", Some("b.example.com")), "a.example.com");
    }

    #[test]
    fn every_port_is_written_as_its_decimal() {
        for port in 0..=u16::MAX {
            let mut host = String::from("a");
            push_port(&mut host, port);
            assert_eq!(host, format!("a:{port}"));
        }
        assert_eq!(ok(Version::HTTP_2, "https://A.Example.com:1/x", None), "a.example.com:1");
    }
}
