//! The headers a request gains on its way to a pod: X-Forwarded-For/-Host/-Port/-Proto and `Forwarded`
//! (RFC 7239), appended as new header lines like the OpenShift router's default `append` policy.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

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

/// Appends the forwarded headers; `host` is the request's Host header as it will be sent on.
pub fn append_forwarded(headers: &mut HeaderMap, info: &ConnectionInfo, host: &str) {
    let client_ip = info.client.ip();
    // The address is formatted once, for both headers that carry it (this runs for every request).
    let mut address = String::with_capacity(48);
    let _ = write!(address, "{client_ip}");
    headers.append(X_FORWARDED_HOST, header_value(host.to_string()));
    headers.append(X_FORWARDED_PORT, HeaderValue::from(info.local.port()));
    headers.append(X_FORWARDED_PROTO, HeaderValue::from_static(info.proto));
    headers.append(FORWARDED, header_value(element(client_ip.is_ipv6(), &address, host, info.proto)));
    headers.append(X_FORWARDED_FOR, header_value(address));
}

/// `for=<ip>;host=<host>;proto=<proto>`, with an IPv6 address quoted and bracketed as RFC 7239 requires.
pub fn forwarded_element(client: IpAddr, host: &str, proto: &str) -> String {
    element(client.is_ipv6(), &client.to_string(), host, proto)
}

fn element(ipv6: bool, address: &str, host: &str, proto: &str) -> String {
    let mut text = String::with_capacity(address.len() + host.len() + proto.len() + 24);
    text.push_str(if ipv6 { "for=\"[" } else { "for=" });
    text.push_str(address);
    text.push_str(if ipv6 { "]\";host=" } else { ";host=" });
    text.push_str(host);
    text.push_str(";proto=");
    text.push_str(proto);
    text
}

fn header_value(text: String) -> HeaderValue {
    // Inputs come from a parsed header or an address, so they are valid; fall back to empty regardless. The
    // text's buffer becomes the value's, without a copy.
    HeaderValue::from_maybe_shared(bytes::Bytes::from(text)).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_quotes_ipv6() {
        let v4: IpAddr = "192.0.2.7".parse().expect("v4");
        let v6: IpAddr = "2001:db8::7".parse().expect("v6");
        assert_eq!(forwarded_element(v4, "a.example.com", "http"), "for=192.0.2.7;host=a.example.com;proto=http");
        assert_eq!(
            forwarded_element(v6, "a.example.com", "https"),
            "for=\"[2001:db8::7]\";host=a.example.com;proto=https"
        );
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
        append_forwarded(&mut headers, &info, "a.example.com");
        let xff: Vec<_> = headers.get_all(X_FORWARDED_FOR).iter().collect();
        assert_eq!(xff, ["203.0.113.1", "192.0.2.7"]);
        assert_eq!(headers[X_FORWARDED_PORT], "80");
        assert_eq!(headers[X_FORWARDED_PROTO], "http");
        assert_eq!(headers[X_FORWARDED_HOST], "a.example.com");
    }
}
