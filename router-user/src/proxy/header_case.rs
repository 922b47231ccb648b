//! Header-name case on HTTP/1 (ROUTER_H1_CASE_ADJUST), for clients and pods that wrongly read names
//! case-sensitively. HTTP/1 header names leave the router in lower case; OpenShift turns each listed name
//! into HAProxy's `h1-case-adjust <lowercase> <as listed>` and sets `option h1-case-adjust-bogus-client`
//! for every frontend (response heads to HTTP/1 clients) and `option h1-case-adjust-bogus-server` on the
//! backends of routes annotated `haproxy.router.openshift.io/h1-adjust-case` (request heads to their pods).
//!
//! Both sides write names through [`HeaderCaseMap::adjust`]: the pod side (`pod::head`, through
//! [`AdjustedCase`] in the request's extensions) and the client side's response heads (`h1::response_head`).

use std::collections::HashMap;
use std::sync::Arc;

/// Lower-case name -> name as the administrator spelled it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct HeaderCaseMap {
    names: HashMap<Vec<u8>, Vec<u8>>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid HTTP header name: {0:?}")]
pub struct InvalidHeaderName(pub String);

impl HeaderCaseMap {
    /// ROUTER_H1_CASE_ADJUST: names separated by commas (nothing trimmed), each an RFC 2616 token as
    /// OpenShift checks it. Empty: no adjustment.
    pub fn parse(list: &str) -> Result<Option<HeaderCaseMap>, InvalidHeaderName> {
        if list.is_empty() {
            return Ok(None);
        }
        let mut names = HashMap::new();
        for name in list.split(',') {
            if name.is_empty() || !name.bytes().all(is_token_byte) {
                return Err(InvalidHeaderName(name.to_string()));
            }
            names.insert(name.to_ascii_lowercase().into_bytes(), name.as_bytes().to_vec());
        }
        Ok(Some(HeaderCaseMap { names }))
    }

    /// `name` as it is to be written (unchanged when not listed).
    pub fn adjust<'a>(&'a self, name: &'a [u8]) -> &'a [u8] {
        if name.iter().any(u8::is_ascii_uppercase) {
            return self.names.get(&name.to_ascii_lowercase()).map_or(name, Vec::as_slice);
        }
        self.names.get(name).map_or(name, Vec::as_slice)
    }
}

/// OpenShift's token check: `[\x21\x23-\x27\x2a\x2b\x2d\x2e\x30-\x39\x41-\x5a\x5e-\x7a\x7c\x7e]`.
fn is_token_byte(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x27 | 0x2a | 0x2b | 0x2d | 0x2e | 0x30..=0x39 | 0x41..=0x5a | 0x5e..=0x7a | 0x7c | 0x7e)
}

/// A request extension: write this request's header names to the pod with the map's case.
#[derive(Clone, Debug)]
pub struct AdjustedCase(pub Arc<HeaderCaseMap>);

#[cfg(test)]
mod tests {
    use super::*;

    fn map(list: &str) -> Arc<HeaderCaseMap> {
        Arc::new(HeaderCaseMap::parse(list).expect("valid").expect("not empty"))
    }

    #[test]
    fn the_list_is_parsed_and_checked_as_openshift_does() {
        assert_eq!(HeaderCaseMap::parse("").expect("empty is fine"), None);
        let parsed = map("Host,X-Custom-ID,content-TYPE");
        assert_eq!(parsed.adjust(b"host"), b"Host");
        assert_eq!(parsed.adjust(b"x-custom-id"), b"X-Custom-ID");
        assert_eq!(parsed.adjust(b"Content-Type"), b"content-TYPE");
        assert_eq!(parsed.adjust(b"x-other"), b"x-other");
        for bad in ["Host, X-Space", "Host,,Date", "X:Colon", "Café"] {
            assert!(HeaderCaseMap::parse(bad).is_err(), "{bad:?}");
        }
    }
}
