//! The `Alt-Svc` header value advertising HTTP/3 on the HTTPS port (RFC 7838, RFC 9114 section 3.1.1).

use std::time::Duration;

use http::HeaderValue;

/// `h3=":<port>"; ma=<seconds>`: HTTP/3 on the same host, UDP `port`, remembered for `max_age`.
pub fn alt_svc_value(port: u16, max_age: Duration) -> HeaderValue {
    let text = format!("h3=\":{port}\"; ma={}", max_age.as_secs());
    // Digits, quotes, colons, semicolons and spaces only: always a valid header value.
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("h3=\":443\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_port_and_the_max_age_in_seconds() {
        assert_eq!(alt_svc_value(443, Duration::from_secs(86_400)), "h3=\":443\"; ma=86400");
        assert_eq!(alt_svc_value(8443, Duration::from_millis(1500)), "h3=\":8443\"; ma=1");
    }
}
