//! The headers a request gains on its way to a pod: X-Forwarded-For/-Host/-Port/-Proto and `Forwarded`
//! (RFC 7239), appended as new header lines like the OpenShift router's default `append` policy.

use std::net::SocketAddr;

use http::{HeaderMap, HeaderName, HeaderValue};

pub const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
pub const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
pub const X_FORWARDED_PORT: HeaderName = HeaderName::from_static("x-forwarded-port");
pub const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
pub const FORWARDED: HeaderName = HeaderName::from_static("forwarded");

/// Where a request came from and which listener took it.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionInfo {
    pub client: SocketAddr,
    pub local: SocketAddr,
    /// "http" or "https".
    pub proto: &'static str,
}

/// The parts of the forwarded headers a connection's requests share, formatted once when it is taken: the
/// client's address (X-Forwarded-For), the listener's port (X-Forwarded-Port) and the start of the
/// `Forwarded` element. A keep-alive connection's requests then only add their host.
#[derive(Clone, Debug)]
pub struct ForwardedValues {
    client: HeaderValue,
    port: HeaderValue,
    proto: &'static str,
    /// `for=<ip>;host=`, the address quoted and bracketed for IPv6 as RFC 7239 requires.
    element_start: String,
}

impl ForwardedValues {
    pub fn new(info: &ConnectionInfo) -> Self {
        let client_ip = info.client.ip();
        let address = client_ip.to_string();
        let element_start =
            if client_ip.is_ipv6() { format!("for=\"[{address}]\";host=") } else { format!("for={address};host=") };
        Self {
            client: header_value(address),
            port: HeaderValue::from(info.local.port()),
            proto: info.proto,
            element_start,
        }
    }
}

/// Appends the forwarded headers; `host` is the request's Host header as it will be sent on.
pub fn append_forwarded(headers: &mut HeaderMap, values: &ForwardedValues, host: &HeaderValue) {
    headers.append(X_FORWARDED_HOST, host.clone());
    headers.append(X_FORWARDED_PORT, values.port.clone());
    headers.append(X_FORWARDED_PROTO, HeaderValue::from_static(values.proto));
    headers.append(FORWARDED, header_value(element(&values.element_start, host.as_bytes(), values.proto)));
    headers.append(X_FORWARDED_FOR, values.client.clone());
}

fn element(start: &str, host: &[u8], proto: &str) -> Vec<u8> {
    const PROTO: &[u8] = b";proto=";
    // Exactly the length: a vector whose capacity is its length becomes a header value without another
    // allocation.
    let mut text = Vec::with_capacity(start.len() + host.len() + PROTO.len() + proto.len());
    text.extend_from_slice(start.as_bytes());
    text.extend_from_slice(host);
    text.extend_from_slice(PROTO);
    text.extend_from_slice(proto.as_bytes());
    text
}

fn header_value(text: impl Into<bytes::Bytes>) -> HeaderValue {
    // Inputs come from a header value or an address, so they are valid; fall back to empty regardless. The
    // text's buffer becomes the value's, without a copy.
    HeaderValue::from_maybe_shared(text.into()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `Forwarded` element a request from `client` gains.
    fn element_for(client: &str, proto: &'static str) -> HeaderValue {
        let info = ConnectionInfo {
            client: client.parse().expect("client"),
            local: "10.0.0.1:443".parse().expect("local"),
            proto,
        };
        let mut headers = HeaderMap::new();
        append_forwarded(&mut headers, &ForwardedValues::new(&info), &HeaderValue::from_static("a.example.com"));
        headers[FORWARDED].clone()
    }

    #[test]
    fn forwarded_quotes_ipv6() {
        assert_eq!(element_for("192.0.2.7:5555", "http"), "for=192.0.2.7;host=a.example.com;proto=http");
        assert_eq!(element_for("[2001:db8::7]:5555", "https"), "for=\"[2001:db8::7]\";host=a.example.com;proto=https");
    }

    #[test]
    fn appends_rather_than_replaces() {
        let mut headers = HeaderMap::new();
        headers.insert(X_FORWARDED_FOR, HeaderValue::from_static("203.0.113.1"));
        let info = ConnectionInfo {
            client: "192.0.2.7:5555".parse().expect("client"),
            local: "10.0.0.1:80".parse().expect("local"),
            proto: "http",
        };
        append_forwarded(&mut headers, &ForwardedValues::new(&info), &HeaderValue::from_static("a.example.com"));
        let xff: Vec<_> = headers.get_all(X_FORWARDED_FOR).iter().collect();
        assert_eq!(xff, ["203.0.113.1", "192.0.2.7"]);
        assert_eq!(headers[X_FORWARDED_PORT], "80");
        assert_eq!(headers[X_FORWARDED_PROTO], "http");
        assert_eq!(headers[X_FORWARDED_HOST], "a.example.com");
    }
}
