//! `haproxy.router.openshift.io/hsts_header`: the Strict-Transport-Security value a TLS route's responses
//! carry. As the OpenShift router checks it: `;`-separated directives, `max-age=<seconds>` required,
//! `includeSubDomains` and `preload` allowed, case-insensitive.

use http::HeaderValue;

pub fn parse_hsts(value: &str) -> Result<HeaderValue, &'static str> {
    let mut max_age = false;
    for directive in value.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        let lower = directive.to_ascii_lowercase();
        match lower.split_once('=') {
            Some((name, seconds)) if name.trim() == "max-age" => {
                let seconds = seconds.trim().trim_matches('"');
                if seconds.is_empty() || !seconds.bytes().all(|b| b.is_ascii_digit()) {
                    return Err("max-age must be a number of seconds");
                }
                max_age = true;
            }
            None if lower == "includesubdomains" || lower == "preload" => {}
            _ => return Err("unknown directive (allowed: max-age, includeSubDomains, preload)"),
        }
    }
    if !max_age {
        return Err("max-age is required");
    }
    HeaderValue::from_str(value.trim()).map_err(|_| "not a valid header value")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_age_is_required_and_directives_are_checked() {
        assert_eq!(parse_hsts("max-age=31536000").expect("plain"), "max-age=31536000");
        assert!(parse_hsts("max-age=31536000;includeSubDomains;preload").is_ok());
        assert!(parse_hsts(" MAX-AGE=0 ; preload ").is_ok());
        assert!(parse_hsts("max-age=\"100\"").is_ok());
        assert!(parse_hsts("includeSubDomains").is_err());
        assert!(parse_hsts("max-age=abc").is_err());
        assert!(parse_hsts("max-age=1;bogus").is_err());
        assert!(parse_hsts("").is_err());
    }
}
