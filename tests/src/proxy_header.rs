//! PROXY protocol headers (haproxy.org/download/2.8/doc/proxy-protocol.txt) as a load balancer writes them
//! before the client's bytes: v1 text and v2 binary, IPv4 and IPv6.

use std::net::SocketAddr;

/// The v2 signature: `\r\n\r\n\0\r\nQUIT\n`.
pub const V2_SIGNATURE: [u8; 12] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A];

/// `PROXY TCP4 <src> <dst> <sport> <dport>\r\n` (TCP6 for IPv6). Both addresses must be the same family.
pub fn v1(source: SocketAddr, destination: SocketAddr) -> Vec<u8> {
    let family = if source.is_ipv4() { "TCP4" } else { "TCP6" };
    format!("PROXY {family} {} {} {} {}\r\n", source.ip(), destination.ip(), source.port(), destination.port())
        .into_bytes()
}

/// A v2 PROXY command over TCP (family 0x11 for IPv4, 0x21 for IPv6), addresses in network byte order.
pub fn v2(source: SocketAddr, destination: SocketAddr) -> Vec<u8> {
    let mut header = V2_SIGNATURE.to_vec();
    header.push(0x21); // version 2, command PROXY
    let mut addresses = Vec::new();
    match (source, destination) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => {
            header.push(0x11); // AF_INET, STREAM
            addresses.extend_from_slice(&s.ip().octets());
            addresses.extend_from_slice(&d.ip().octets());
        }
        (SocketAddr::V6(s), SocketAddr::V6(d)) => {
            header.push(0x21); // AF_INET6, STREAM
            addresses.extend_from_slice(&s.ip().octets());
            addresses.extend_from_slice(&d.ip().octets());
        }
        _ => panic!("PROXY v2: source and destination must be the same address family"),
    }
    addresses.extend_from_slice(&source.port().to_be_bytes());
    addresses.extend_from_slice(&destination.port().to_be_bytes());
    header.extend_from_slice(&u16::try_from(addresses.len()).expect("short address block").to_be_bytes());
    header.extend_from_slice(&addresses);
    header
}

/// A v2 LOCAL command (health checks of the load balancer itself): no address, the connection's own applies.
pub fn v2_local() -> Vec<u8> {
    let mut header = V2_SIGNATURE.to_vec();
    header.extend_from_slice(&[0x20, 0x00, 0x00, 0x00]);
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_layouts() {
        let (s, d) = ("203.0.113.7:56324".parse().expect("addr"), "127.0.0.1:443".parse().expect("addr"));
        assert_eq!(v1(s, d), b"PROXY TCP4 203.0.113.7 127.0.0.1 56324 443\r\n");
        let header = v2(s, d);
        assert_eq!(header.len(), 16 + 12);
        assert_eq!(&header[12..16], &[0x21, 0x11, 0x00, 0x0C]);
        assert_eq!(&header[16..20], &[203, 0, 113, 7]);
        assert_eq!(&header[24..26], &56324u16.to_be_bytes());
        let (s6, d6) = ("[2001:db8::5]:1000".parse().expect("addr"), "[::1]:443".parse().expect("addr"));
        assert_eq!(v1(s6, d6), b"PROXY TCP6 2001:db8::5 ::1 1000 443\r\n");
        let header = v2(s6, d6);
        assert_eq!(header.len(), 16 + 36);
        assert_eq!(&header[13..16], &[0x21, 0x00, 0x24]);
        assert_eq!(v2_local().len(), 16);
    }
}
