//! Header rules applied in both directions: hop-by-hop headers stay on their hop, `Proxy` never reaches a pod.

use http::header::{self, HeaderMap, HeaderName};

/// Request headers the OpenShift router deletes before forwarding (httpoxy).
pub const PROXY: HeaderName = HeaderName::from_static("proxy");

const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");

/// The hop-by-hop headers that never go on, whatever `Connection` names.
static HOP_BY_HOP: [HeaderName; 6] =
    [header::CONNECTION, KEEP_ALIVE, PROXY_CONNECTION, header::UPGRADE, header::TE, header::TRAILER];

/// A `Transfer-Encoding` value whose final coding is `chunked`.
pub fn ends_in_chunked(value: &[u8]) -> bool {
    value.rsplit(|&b| b == b',').next().is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

/// A comma-separated header value holds `token` (case-insensitive), as `Connection: keep-alive, close` does.
pub fn has_token(value: &[u8], token: &[u8]) -> bool {
    value.split(|&b| b == b',').any(|item| item.trim_ascii().eq_ignore_ascii_case(token))
}

/// True when the request asks to switch protocols (WebSocket and friends).
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.split(',').any(|token| token.trim().eq_ignore_ascii_case("upgrade")))
}

/// Removes the hop-by-hop headers, including those named by `Connection`, unless the exchange is an upgrade
/// (then `Connection: upgrade` and `Upgrade` must reach the other side).
pub fn strip_hop_by_hop(headers: &mut HeaderMap, upgrade: bool) {
    if upgrade {
        headers.remove(KEEP_ALIVE);
        headers.remove(PROXY_CONNECTION);
        return;
    }
    // Names listed by `Connection` besides its usual tokens (`close`, `keep-alive`) are rare: only those are
    // parsed into names (which allocates).
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .flat_map(|value| value.as_bytes().split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|token| !token.eq_ignore_ascii_case(b"close") && !token.eq_ignore_ascii_case(b"keep-alive"))
        .filter_map(|token| HeaderName::from_bytes(token).ok())
        .filter(|name| !HOP_BY_HOP.contains(name))
        .collect();
    // Removing a name hashes it (about 115 instructions even when absent), so only the names a message has are
    // removed: one pass comparing names finds them (most requests have none; most responses only `Connection`).
    // This runs twice per request.
    let present: Vec<HeaderName> =
        headers.keys().filter(|name| HOP_BY_HOP.contains(name) || named.contains(name)).cloned().collect();
    for name in present {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn hop_by_hop_headers_are_dropped_but_upgrades_keep_theirs() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONNECTION, HeaderValue::from_static("keep-alive, X-Private"));
        headers.insert("x-private", HeaderValue::from_static("1"));
        headers.append("x-private", HeaderValue::from_static("2"));
        headers.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        headers.insert("x-app", HeaderValue::from_static("kept"));
        strip_hop_by_hop(&mut headers, false);
        assert!(!headers.contains_key(header::CONNECTION));
        assert!(!headers.contains_key("x-private"));
        assert!(!headers.contains_key("keep-alive"));
        assert_eq!(headers["x-app"], "kept");

        // Each one alone is found and dropped (the pass looking for any of them must know every name).
        for name in ["connection", "keep-alive", "proxy-connection", "upgrade", "te", "trailer"] {
            let mut headers = HeaderMap::new();
            headers.insert("x-app", HeaderValue::from_static("kept"));
            headers.insert(name, HeaderValue::from_static("trailers"));
            strip_hop_by_hop(&mut headers, false);
            assert!(!headers.contains_key(name), "{name} dropped");
            assert_eq!(headers.len(), 1);
        }
        let mut none = HeaderMap::new();
        none.insert("x-app", HeaderValue::from_static("kept"));
        strip_hop_by_hop(&mut none, false);
        assert_eq!(none.len(), 1, "a message without hop-by-hop headers keeps what it has");

        let mut upgrade = HeaderMap::new();
        upgrade.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        upgrade.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        assert!(is_upgrade(&upgrade));
        strip_hop_by_hop(&mut upgrade, true);
        assert_eq!(upgrade[header::UPGRADE], "websocket");
        assert_eq!(upgrade[header::CONNECTION], "Upgrade");
    }
}
