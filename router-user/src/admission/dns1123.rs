//! DNS-1123 host names, as the route API validates `spec.host` (UniqueHost's InvalidHost).

/// A DNS-1123 subdomain: at most 253 characters, labels of 1..=63 lowercase alphanumerics or '-', not starting
/// or ending with '-'.
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
    fn dns1123_validation() {
        for good in ["a", "www.example.com", "a-b.c1.io", "1.2.3.4"] {
            assert!(is_dns1123_subdomain(good), "{good}");
        }
        for bad in ["", "-a.com", "a-.com", "a..com", "A.com", "a_b.com", "*.example.com", &"a".repeat(64)] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }
}
