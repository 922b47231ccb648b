//! Host names as the router compares them: lowercased, without a trailing dot or a port.

use std::borrow::Cow;

/// Normalises a request's Host header (or URI authority): drops the port (also after an IPv6 literal), one
/// trailing dot, and lowercases. Borrowed when nothing changes, so the common case allocates nothing.
pub fn normalize_request_host(raw: &str) -> Cow<'_, str> {
    let without_port = strip_port(raw.trim());
    lowercase(without_port.strip_suffix('.').unwrap_or(without_port))
}

/// `text` lowercased, copied only when it has an uppercase letter (hosts mostly come lowercase).
pub fn lowercase(text: &str) -> Cow<'_, str> {
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(text.to_ascii_lowercase())
    } else {
        Cow::Borrowed(text)
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
}
