//! The `date` header's value (IMF-fixdate, RFC 9110 section 5.6.7), formatted once a second per thread
//! rather than once a response.

use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// "Sun, 06 Nov 1994 08:49:37 GMT"
const DATE_LENGTH: usize = 29;

struct CachedDate {
    second: u64,
    text: [u8; DATE_LENGTH],
}

thread_local! {
    static CACHED: RefCell<CachedDate> = const { RefCell::new(CachedDate { second: u64::MAX, text: [0; DATE_LENGTH] }) };
}

/// Appends the current date.
pub fn append_date(out: &mut Vec<u8>) {
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs();
    CACHED.with(|cached| {
        let mut cached = cached.borrow_mut();
        if cached.second != second {
            let text = httpdate::fmt_http_date(now);
            if text.len() == DATE_LENGTH {
                cached.text.copy_from_slice(text.as_bytes());
                cached.second = second;
            } else {
                out.extend_from_slice(text.as_bytes());
                return;
            }
        }
        out.extend_from_slice(&cached.text);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_date_is_an_imf_fixdate_of_now() {
        let mut out = Vec::new();
        append_date(&mut out);
        let text = String::from_utf8(out).expect("ascii");
        let parsed = httpdate::parse_http_date(&text).expect("IMF-fixdate");
        let off = SystemTime::now().duration_since(parsed).unwrap_or_default();
        assert!(off < Duration::from_secs(2), "{text}");
        assert!(text.ends_with(" GMT"), "{text}");
    }
}
