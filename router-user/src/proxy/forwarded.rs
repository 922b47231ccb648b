//! The headers a request gains on its way to a pod: X-Forwarded-For/-Host/-Port/-Proto and `Forwarded`
//! (RFC 7239), appended as new header lines like the OpenShift router's default `append` policy.

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
    headers.append(X_FORWARDED_HOST, header_value(host));
    headers.append(X_FORWARDED_PORT, HeaderValue::from(info.local.port()));
    headers.append(X_FORWARDED_PROTO, HeaderValue::from_static(info.proto));
    headers.append(FORWARDED, header_value(&forwarded_element(client_ip, host, info.proto)));
    headers.append(X_FORWARDED_FOR, header_value(&client_ip.to_string()));
}

/// `for=<ip>;host=<host>;proto=<proto>`, with an IPv6 address quoted and bracketed as RFC 7239 requires.
pub fn forwarded_element(client: IpAddr, host: &str, proto: &str) -> String {
    match client {
        IpAddr::V4(v4) => format!("for={v4};host={host};proto={proto}"),
        IpAddr::V6(v6) => format!("for=\"[{v6}]\";host={host};proto={proto}"),
    }
}

fn header_value(text: &str) -> HeaderValue {
    // Inputs come from a parsed header or an address, so they are valid; fall back to empty regardless.
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static(""))
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
