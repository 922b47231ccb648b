//! Host names as the router compares them: lowercased, without a trailing dot or a port.

use std::borrow::Cow;

/// Normalises a request's Host header (or URI authority): drops the port (also after an IPv6 literal), one
/// trailing dot, and lowercases. Borrowed when nothing changes, so the common case allocates nothing.
pub fn normalize_request_host(raw: &str) -> Cow<'_, str> {
    let without_port = strip_port(raw.trim());
    let name = without_port.strip_suffix('.').unwrap_or(without_port);
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        // IPv6 literal: "[::1]:80" -> "[::1]".
        return match host.find(']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// A DNS-1123 subdomain, as the route API validates `spec.host`: at most 253 characters, labels of 1..=63
/// lowercase alphanumerics or '-', not starting or ending with '-'.
pub fn is_dns1123_subdomain(host: &str) -> bool {
    if host.is_empty() || host.len() > 253 {
        return false;
    }
    host.split('.').all(|label| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= 63
            && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_hosts_normalise_like_the_openshift_host_regex() {
        let cases = [
            ("www.example.com", "www.example.com"),
            ("WWW.Example.COM", "www.example.com"),
            ("www.example.com.", "www.example.com"),
            ("www.example.com:8080", "www.example.com"),
            ("www.example.com.:80", "www.example.com"),
            ("[::1]:80", "[::1]"),
            ("127.0.0.1:80", "127.0.0.1"),
        ];
        for (raw, want) in cases {
            assert_eq!(normalize_request_host(raw), want, "{raw}");
        }
    }

    #[test]
    fn unchanged_hosts_are_borrowed() {
        assert!(matches!(normalize_request_host("a.example.com"), Cow::Borrowed(_)));
    }

    #[test]
    fn dns1123_validation() {
        for good in ["a", "www.example.com", "a-b.c1.io", "1.2.3.4"] {
            assert!(is_dns1123_subdomain(good), "{good}");
        }
        for bad in ["", "-a.com", "a-.com", "a..com", "A.com", "a_b.com", "*.example.com", &"a".repeat(64)] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }
}
