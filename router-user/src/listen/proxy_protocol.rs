//! Receiving the PROXY protocol header (v1 text, v2 binary; haproxy.org/download/2.9/doc/proxy-protocol.txt)
//! that a cloud load balancer puts in front of each connection when ROUTER_USE_PROXY_PROTOCOL is on.
//!
//! A connection that does not open with a valid header is refused, as the OpenShift router's HAProxy
//! (`accept-proxy`) refuses it.

#![forbid(unsafe_code)]

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Longest v1 header, CRLF included (spec section 2.1).
const V1_MAX: usize = 107;
/// What a v1 header starts with.
const V1_PREFIX: &[u8] = b"PROXY ";
/// The 12 bytes a v2 header starts with.
const V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";
/// Bytes of the fixed part of a v2 header: signature, version/command, family/transport, length.
const V2_FIXED: usize = 16;
/// Longest v2 header we accept, in bytes, TLVs included. The format allows 16 + 65535; load balancers send
/// addresses plus a few short TLVs, well under this.
const V2_MAX: usize = 4096;
/// Bytes asked of the stream per read.
const READ_CHUNK: usize = 1024;

/// A received PROXY header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyHeader {
    /// The client's address as the load balancer saw it; `None` for v1 `UNKNOWN`, v2 `LOCAL` (a health
    /// check from the balancer itself), and v2 families other than AF_INET/AF_INET6.
    pub source: Option<SocketAddr>,
    /// The address the client connected to; `None` whenever `source` is.
    pub destination: Option<SocketAddr>,
    /// Bytes read past the end of the header: the start of the client's own stream.
    pub leftover: Vec<u8>,
}

/// Why a connection's PROXY header could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProxyProtocolError {
    /// No complete header within the time allowed.
    #[error("no PROXY header within {0:?}")]
    Timeout(Duration),
    /// The peer closed the connection before a complete header.
    #[error("connection closed after {0} bytes, before a complete PROXY header")]
    Closed(usize),
    /// The first bytes are neither a v1 nor a v2 signature.
    #[error("connection does not start with a PROXY header")]
    NotProxy,
    /// A header that breaks the format; the text names the part.
    #[error("malformed PROXY header: {0}")]
    Malformed(&'static str),
    /// A v1 line longer than 107 bytes or a v2 header longer than 4 KiB.
    #[error("PROXY header longer than {0} bytes")]
    TooLarge(usize),
    /// Reading the stream failed.
    #[error("reading the PROXY header: {0}")]
    Io(#[from] io::Error),
}

impl ProxyProtocolError {
    /// A short fixed label for metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            ProxyProtocolError::Timeout(_) => "timeout",
            ProxyProtocolError::Closed(_) => "closed",
            ProxyProtocolError::NotProxy => "not_proxy",
            ProxyProtocolError::Malformed(_) => "malformed",
            ProxyProtocolError::TooLarge(_) => "too_large",
            ProxyProtocolError::Io(_) => "io",
        }
    }
}

/// Reads the PROXY header at the start of `stream`, waiting at most `limit` for all of it.
///
/// Reads in chunks, so bytes after the header may be read with it; they are returned in
/// [`ProxyHeader::leftover`] and belong in front of whatever reads the stream next. Fails as soon as the
/// bytes read rule out a valid header.
pub async fn read_proxy_header<S: AsyncRead + Unpin>(
    stream: &mut S,
    limit: Duration,
) -> Result<ProxyHeader, ProxyProtocolError> {
    match tokio::time::timeout(limit, read_header(stream)).await {
        Ok(result) => result,
        Err(_) => Err(ProxyProtocolError::Timeout(limit)),
    }
}

async fn read_header<S: AsyncRead + Unpin>(stream: &mut S) -> Result<ProxyHeader, ProxyProtocolError> {
    let mut buf = Vec::with_capacity(READ_CHUNK);
    loop {
        if let Some((addrs, len)) = parse(&buf)? {
            let leftover = buf.split_off(len);
            let (source, destination) = match addrs {
                Some((src, dst)) => (Some(src), Some(dst)),
                None => (None, None),
            };
            return Ok(ProxyHeader { source, destination, leftover });
        }
        // `parse` refuses anything longer than V2_MAX, so the buffer stays under V2_MAX + READ_CHUNK.
        buf.reserve(READ_CHUNK);
        let read = (&mut *stream).take(READ_CHUNK as u64).read_buf(&mut buf).await?;
        if read == 0 {
            return Err(ProxyProtocolError::Closed(buf.len()));
        }
    }
}

/// The two addresses of a header (`None`: none to use) and the header's length in bytes.
pub(crate) type Parsed = (Option<(SocketAddr, SocketAddr)>, usize);

/// Reads a header from the start of `buf`; `Ok(None)` when `buf` is a valid but incomplete prefix.
pub(crate) fn parse(buf: &[u8]) -> Result<Option<Parsed>, ProxyProtocolError> {
    if buf.is_empty() {
        return Ok(None);
    }
    if is_prefix_of(buf, V1_PREFIX) {
        return parse_v1(buf);
    }
    if is_prefix_of(buf, &V2_SIGNATURE) {
        return parse_v2(buf);
    }
    Err(ProxyProtocolError::NotProxy)
}

/// Whether `buf` and `signature` agree on their common length.
fn is_prefix_of(buf: &[u8], signature: &[u8]) -> bool {
    let n = buf.len().min(signature.len());
    buf.get(..n) == signature.get(..n)
}

/// v1: `PROXY <TCP4|TCP6> <src> <dst> <sport> <dport>\r\n` or `PROXY UNKNOWN<anything>\r\n`, single
/// spaces, at most 107 bytes.
fn parse_v1(buf: &[u8]) -> Result<Option<Parsed>, ProxyProtocolError> {
    let window = buf.get(..buf.len().min(V1_MAX)).unwrap_or_default();
    // The first line end decides, so that the answer does not depend on how far the bytes have come.
    let Some(cr) = window.iter().position(|&b| b == b'\r' || b == b'\n') else {
        if window.len() == V1_MAX {
            return Err(ProxyProtocolError::TooLarge(V1_MAX));
        }
        return Ok(None);
    };
    if window[cr] == b'\n' {
        return Err(ProxyProtocolError::Malformed("v1 line ends without CR"));
    }
    // The CR fixes the line's length, whatever follows it.
    let len = cr + 2;
    if len > V1_MAX {
        return Err(ProxyProtocolError::TooLarge(V1_MAX));
    }
    match buf.get(cr + 1) {
        None => return Ok(None),
        Some(b'\n') => {}
        Some(_) => return Err(ProxyProtocolError::Malformed("v1 line has CR without LF")),
    }
    let line = buf.get(V1_PREFIX.len()..cr).unwrap_or_default();
    if line.starts_with(b"UNKNOWN") {
        // The receiver ignores what follows UNKNOWN (spec section 2.1).
        return Ok(Some((None, len)));
    }
    let line = std::str::from_utf8(line).map_err(|_| ProxyProtocolError::Malformed("v1 line not ASCII"))?;
    let mut fields = line.split(' ');
    let (Some(proto), Some(src), Some(dst), Some(sport), Some(dport), None) =
        (fields.next(), fields.next(), fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(ProxyProtocolError::Malformed("v1 line does not have six single-space separated fields"));
    };
    let (src, dst): (IpAddr, IpAddr) = match proto {
        "TCP4" => (parse_v1_ipv4(src)?.into(), parse_v1_ipv4(dst)?.into()),
        "TCP6" => (parse_v1_ipv6(src)?.into(), parse_v1_ipv6(dst)?.into()),
        _ => return Err(ProxyProtocolError::Malformed("v1 protocol not TCP4, TCP6 or UNKNOWN")),
    };
    let source = SocketAddr::new(src, parse_v1_port(sport)?);
    let destination = SocketAddr::new(dst, parse_v1_port(dport)?);
    Ok(Some((Some((source, destination)), len)))
}

/// A dotted quad (the standard parser refuses leading zeros, empty and extra parts).
fn parse_v1_ipv4(text: &str) -> Result<Ipv4Addr, ProxyProtocolError> {
    text.parse().map_err(|_| ProxyProtocolError::Malformed("v1 TCP4 address"))
}

/// An IPv6 address in the usual text form, no brackets or zone.
fn parse_v1_ipv6(text: &str) -> Result<Ipv6Addr, ProxyProtocolError> {
    text.parse().map_err(|_| ProxyProtocolError::Malformed("v1 TCP6 address"))
}

/// A decimal port: digits only, no leading zero, at most 65535.
fn parse_v1_port(text: &str) -> Result<u16, ProxyProtocolError> {
    const BAD: ProxyProtocolError = ProxyProtocolError::Malformed("v1 port");
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BAD);
    }
    if text.len() > 1 && text.starts_with('0') {
        return Err(BAD);
    }
    text.parse().map_err(|_| BAD)
}

/// v2: signature, version 2 with command LOCAL (0) or PROXY (1), family and transport, a 2-byte length,
/// then that many bytes of addresses and TLVs (the TLVs are skipped).
fn parse_v2(buf: &[u8]) -> Result<Option<Parsed>, ProxyProtocolError> {
    let Some(fixed) = buf.get(..V2_FIXED) else {
        // Refuse a bad version or command as soon as its byte is in.
        if let Some(&ver_cmd) = buf.get(12) {
            check_v2_version_command(ver_cmd)?;
        }
        return Ok(None);
    };
    let [_, _, _, _, _, _, _, _, _, _, _, _, ver_cmd, fam, len_hi, len_lo] = fixed else {
        return Ok(None);
    };
    let local = check_v2_version_command(*ver_cmd)?;
    let body_len = usize::from(u16::from_be_bytes([*len_hi, *len_lo]));
    let len = V2_FIXED + body_len;
    if len > V2_MAX {
        return Err(ProxyProtocolError::TooLarge(V2_MAX));
    }
    let Some(body) = buf.get(V2_FIXED..len) else {
        return Ok(None);
    };
    if local {
        // LOCAL: the balancer's own connection (health check); family and address block are ignored.
        return Ok(Some((None, len)));
    }
    let family = fam >> 4;
    let transport = fam & 0x0f;
    if family > 3 {
        return Err(ProxyProtocolError::Malformed("v2 address family"));
    }
    if transport > 2 {
        return Err(ProxyProtocolError::Malformed("v2 transport protocol"));
    }
    let addrs = match (family, transport) {
        // AF_UNSPEC, or AF_UNIX: nothing an IP route can use.
        (0, _) | (3, _) => None,
        (1, 1) => {
            let Some(&[a, b, c, d, e, f, g, h, sp0, sp1, dp0, dp1]) = body.get(..12) else {
                return Err(ProxyProtocolError::Malformed("v2 AF_INET address block shorter than 12 bytes"));
            };
            let source = SocketAddr::from((Ipv4Addr::new(a, b, c, d), u16::from_be_bytes([sp0, sp1])));
            let destination = SocketAddr::from((Ipv4Addr::new(e, f, g, h), u16::from_be_bytes([dp0, dp1])));
            Some((source, destination))
        }
        (2, 1) => {
            let (Some(src), Some(dst), Some(&[sp0, sp1, dp0, dp1])) =
                (body.get(..16), body.get(16..32), body.get(32..36))
            else {
                return Err(ProxyProtocolError::Malformed("v2 AF_INET6 address block shorter than 36 bytes"));
            };
            let src: [u8; 16] = src.try_into().map_err(|_| ProxyProtocolError::Malformed("v2 AF_INET6 source"))?;
            let dst: [u8; 16] = dst.try_into().map_err(|_| ProxyProtocolError::Malformed("v2 AF_INET6 destination"))?;
            let source = SocketAddr::from((Ipv6Addr::from(src), u16::from_be_bytes([sp0, sp1])));
            let destination = SocketAddr::from((Ipv6Addr::from(dst), u16::from_be_bytes([dp0, dp1])));
            Some((source, destination))
        }
        _ => return Err(ProxyProtocolError::Malformed("v2 IP family without STREAM transport")),
    };
    Ok(Some((addrs, len)))
}

/// Checks the version/command byte; returns whether the command is LOCAL.
fn check_v2_version_command(ver_cmd: u8) -> Result<bool, ProxyProtocolError> {
    if ver_cmd >> 4 != 2 {
        return Err(ProxyProtocolError::Malformed("v2 version not 2"));
    }
    match ver_cmd & 0x0f {
        0 => Ok(true),
        1 => Ok(false),
        _ => Err(ProxyProtocolError::Malformed("v2 command neither LOCAL nor PROXY")),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use tokio::io::AsyncWriteExt;
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    const LIMIT: Duration = Duration::from_secs(5);

    /// A loopback connection: (the accepted end we read from, the client end we write to).
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (connected, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let client = connected.expect("connect");
        client.set_nodelay(true).expect("nodelay");
        (accepted.expect("accept").0, client)
    }

    /// Writes `parts` one by one (with pauses, so each is likely its own segment), then reads the header.
    async fn receive(parts: &[&[u8]], close: bool) -> Result<ProxyHeader, ProxyProtocolError> {
        let (mut server, mut client) = pair().await;
        let parts: Vec<Vec<u8>> = parts.iter().map(|p| p.to_vec()).collect();
        let writer = tokio::spawn(async move {
            for part in parts {
                client.write_all(&part).await.expect("write");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            if close {
                client.shutdown().await.expect("shutdown");
            }
            // Keep the connection open until the reader is done.
            client
        });
        let result = read_proxy_header(&mut server, LIMIT).await;
        drop(writer.await.expect("writer"));
        result
    }

    fn v2(ver_cmd: u8, fam: u8, body: &[u8]) -> Vec<u8> {
        let mut out = V2_SIGNATURE.to_vec();
        out.push(ver_cmd);
        out.push(fam);
        out.extend_from_slice(&u16::try_from(body.len()).expect("short body").to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn v2_inet(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, tlvs: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&src);
        body.extend_from_slice(&dst);
        body.extend_from_slice(&sport.to_be_bytes());
        body.extend_from_slice(&dport.to_be_bytes());
        body.extend_from_slice(tlvs);
        v2(0x21, 0x11, &body)
    }

    fn addr(text: &str) -> Option<SocketAddr> {
        Some(text.parse().expect("test address"))
    }

    fn malformed(buf: &[u8]) -> &'static str {
        match parse(buf) {
            Err(ProxyProtocolError::Malformed(what)) => what,
            other => panic!("expected Malformed for {:?}, got {other:?}", buf.escape_ascii().to_string()),
        }
    }

    #[tokio::test]
    async fn v1_tcp4_with_leftover() {
        let h = receive(&[b"PROXY TCP4 192.0.2.1 198.51.100.2 51234 443\r\nGET / HTTP/1.1\r\n"], false)
            .await
            .expect("header");
        assert_eq!(h.source, addr("192.0.2.1:51234"));
        assert_eq!(h.destination, addr("198.51.100.2:443"));
        assert_eq!(h.leftover, b"GET / HTTP/1.1\r\n");
    }

    #[tokio::test]
    async fn v1_tcp6() {
        let h = receive(&[b"PROXY TCP6 2001:db8::1 2001:db8::2:3 65535 0\r\n"], false).await.expect("header");
        assert_eq!(h.source, addr("[2001:db8::1]:65535"));
        assert_eq!(h.destination, addr("[2001:db8::2:3]:0"));
        assert!(h.leftover.is_empty());
    }

    #[tokio::test]
    async fn v1_unknown() {
        let h = receive(&[b"PROXY UNKNOWN\r\n\x16\x03\x01"], false).await.expect("header");
        assert_eq!((h.source, h.destination), (None, None));
        assert_eq!(h.leftover, b"\x16\x03\x01");
        let h = receive(&[b"PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"], false).await.expect("header");
        assert_eq!(h.source, None);
    }

    #[tokio::test]
    async fn v1_split_over_reads() {
        let h = receive(&[b"PRO", b"XY TCP4 10.0.0.1 10", b".0.0.2 1 2\r", b"\nrest"], false).await.expect("header");
        assert_eq!(h.source, addr("10.0.0.1:1"));
        assert_eq!(h.destination, addr("10.0.0.2:2"));
        assert_eq!(h.leftover, b"rest");
    }

    #[test]
    fn v1_every_prefix_needs_more() {
        let line = b"PROXY TCP6 ::1 ::2 80 8080\r\n";
        for n in 0..line.len() {
            assert!(matches!(parse(&line[..n]), Ok(None)), "prefix of {n} bytes");
        }
        assert!(matches!(parse(line), Ok(Some((Some(_), 28)))));
    }

    #[test]
    fn v1_strictness() {
        assert_eq!(malformed(b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"), "v1 line ends without CR");
        assert_eq!(malformed(b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX"), "v1 line has CR without LF");
        assert_eq!(
            malformed(b"PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n"),
            "v1 line does not have six single-space separated fields"
        );
        assert_eq!(
            malformed(b"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n"),
            "v1 line does not have six single-space separated fields"
        );
        assert_eq!(
            malformed(b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n"),
            "v1 line does not have six single-space separated fields"
        );
        assert_eq!(malformed(b"PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n"), "v1 protocol not TCP4, TCP6 or UNKNOWN");
        assert_eq!(malformed(b"PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n"), "v1 protocol not TCP4, TCP6 or UNKNOWN");
        assert_eq!(malformed(b"PROXY TCP4 ::1 5.6.7.8 1 2\r\n"), "v1 TCP4 address");
        assert_eq!(malformed(b"PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n"), "v1 TCP4 address");
        assert_eq!(malformed(b"PROXY TCP6 1.2.3.4 ::1 1 2\r\n"), "v1 TCP6 address");
        assert_eq!(malformed(b"PROXY TCP6 [::1] ::1 1 2\r\n"), "v1 TCP6 address");
        assert_eq!(malformed(b"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n"), "v1 port");
        assert_eq!(malformed(b"PROXY TCP4 1.2.3.4 5.6.7.8 080 2\r\n"), "v1 port");
        assert_eq!(malformed(b"PROXY TCP4 1.2.3.4 5.6.7.8 +80 2\r\n"), "v1 port");
        assert_eq!(malformed(b"PROXY TCP4 1.2.3.4 5.6.7.8 1 \r\n"), "v1 port");
        assert_eq!(malformed(b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\xff\r\n"), "v1 line not ASCII");
    }

    #[test]
    fn a_v1_line_feed_before_the_carriage_return_is_refused_however_the_bytes_are_split() {
        // Found by the proxy_protocol fuzz target: with the CR in the buffer the line was judged by what came
        // before the CR, so "PROXY UNKNOWN\n...\r\n" was accepted whole but refused when read up to the LF.
        let wire = b"PROXY UNKNOWN\nGET / HTTP/1.1\r\n";
        for n in 14..=wire.len() {
            assert_eq!(malformed(&wire[..n]), "v1 line ends without CR", "the first {n} bytes");
        }
        assert_eq!(malformed(b"PROXY TCP4 1.2.3.4 5.6.7.8 1\n2\r"), "v1 line ends without CR");
    }

    #[test]
    fn v1_longest_line_accepted_and_longer_refused() {
        // The longest legal line: two full-length IPv6 addresses and 5-digit ports, 104 bytes.
        let longest = b"PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
        assert!(longest.len() <= V1_MAX);
        assert!(matches!(parse(longest), Ok(Some((Some(_), n))) if n == longest.len()));
        // UNKNOWN lines may carry anything, but not past 107 bytes.
        let mut line = b"PROXY UNKNOWN ".to_vec();
        line.resize(V1_MAX - 2, b'x');
        line.extend_from_slice(b"\r\n");
        assert!(matches!(parse(&line), Ok(Some((None, V1_MAX)))));
        let mut long = b"PROXY UNKNOWN ".to_vec();
        long.resize(V1_MAX - 1, b'x');
        assert!(matches!(parse(&long), Ok(None)), "106 bytes without CRLF may still end in CRLF");
        long.push(b'x');
        assert!(matches!(parse(&long), Err(ProxyProtocolError::TooLarge(V1_MAX))));
        let mut cr_last = b"PROXY UNKNOWN ".to_vec();
        cr_last.resize(V1_MAX - 1, b'x');
        cr_last.push(b'\r');
        assert!(matches!(parse(&cr_last), Err(ProxyProtocolError::TooLarge(V1_MAX))), "LF would be byte 108");
    }

    #[test]
    fn a_v1_carriage_return_at_byte_107_is_too_large_whatever_follows_it() {
        // Found by the proxy_protocol fuzz target: with the byte after the CR in, a non-LF made it "CR without
        // LF", so the reason (a metric label) depended on how far the bytes had come.
        let mut line = b"PROXY UNKNOWN ".to_vec();
        line.resize(V1_MAX - 1, b'x');
        line.push(b'\r');
        for next in [&b""[..], b"\n", b"P"] {
            let wire = [&line[..], next].concat();
            assert!(matches!(parse(&wire), Err(ProxyProtocolError::TooLarge(V1_MAX))), "followed by {next:?}");
        }
    }

    #[tokio::test]
    async fn v2_inet_with_tlvs_and_leftover() {
        // Two TLVs (PP2_TYPE_AUTHORITY and a vendor one) that must be skipped.
        let tlvs = b"\x02\x00\x0bexample.com\xea\x00\x02ab";
        let mut stream = v2_inet([203, 0, 113, 7], [10, 0, 0, 1], 40000, 443, tlvs);
        stream.extend_from_slice(b"\x16\x03\x01\x02\x00");
        let h = receive(&[&stream], false).await.expect("header");
        assert_eq!(h.source, addr("203.0.113.7:40000"));
        assert_eq!(h.destination, addr("10.0.0.1:443"));
        assert_eq!(h.leftover, b"\x16\x03\x01\x02\x00");
    }

    #[tokio::test]
    async fn v2_inet6() {
        let mut body = Vec::new();
        body.extend_from_slice(&"2001:db8::7".parse::<Ipv6Addr>().expect("ip").octets());
        body.extend_from_slice(&"fd00::1".parse::<Ipv6Addr>().expect("ip").octets());
        body.extend_from_slice(&1234u16.to_be_bytes());
        body.extend_from_slice(&443u16.to_be_bytes());
        let h = receive(&[&v2(0x21, 0x21, &body)], false).await.expect("header");
        assert_eq!(h.source, addr("[2001:db8::7]:1234"));
        assert_eq!(h.destination, addr("[fd00::1]:443"));
        assert!(h.leftover.is_empty());
    }

    #[tokio::test]
    async fn v2_local_ignores_addresses() {
        let mut header = v2_inet([1, 2, 3, 4], [5, 6, 7, 8], 1, 2, b"");
        header[12] = 0x20;
        header.extend_from_slice(b"next");
        let h = receive(&[&header], false).await.expect("header");
        assert_eq!((h.source, h.destination), (None, None));
        assert_eq!(h.leftover, b"next");
        // LOCAL with an empty address block, as balancers send for health checks.
        let h = receive(&[&v2(0x20, 0x00, b"")], false).await.expect("header");
        assert_eq!(h.source, None);
        // LOCAL with a family byte that PROXY would refuse: the family is ignored too.
        assert!(matches!(parse(&v2(0x20, 0xff, b"x")), Ok(Some((None, 17)))));
    }

    #[test]
    fn v2_unspec_and_unix_have_no_address() {
        assert!(matches!(parse(&v2(0x21, 0x00, b"")), Ok(Some((None, 16)))));
        let unix = v2(0x21, 0x31, &[0u8; 216]);
        assert!(matches!(parse(&unix), Ok(Some((None, 232)))));
    }

    #[tokio::test]
    async fn v2_split_over_reads() {
        let header = v2_inet([192, 168, 1, 1], [192, 168, 1, 2], 5, 6, b"\x04\x00\x01z");
        let (a, rest) = header.split_at(7);
        let (b, c) = rest.split_at(10);
        // The tail rides with the header's last bytes; the reader does not wait for more once the header is in.
        let last = [c, b"tail"].concat();
        let h = receive(&[a, b, &last], false).await.expect("header");
        assert_eq!(h.source, addr("192.168.1.1:5"));
        assert_eq!(h.leftover, b"tail");
    }

    #[test]
    fn v2_every_prefix_needs_more() {
        let header = v2_inet([1, 1, 1, 1], [2, 2, 2, 2], 3, 4, b"\x01\x00\x02h2");
        for n in 0..header.len() {
            assert!(matches!(parse(&header[..n]), Ok(None)), "prefix of {n} bytes");
        }
        assert!(matches!(parse(&header), Ok(Some((Some(_), n))) if n == header.len()));
    }

    #[test]
    fn v2_refusals() {
        assert_eq!(malformed(&v2(0x11, 0x11, &[0; 12])), "v2 version not 2");
        assert_eq!(malformed(&V2_SIGNATURE.iter().copied().chain([0x31]).collect::<Vec<_>>()), "v2 version not 2");
        assert_eq!(malformed(&v2(0x22, 0x11, &[0; 12])), "v2 command neither LOCAL nor PROXY");
        assert_eq!(malformed(&v2(0x21, 0x11, &[0; 11])), "v2 AF_INET address block shorter than 12 bytes");
        assert_eq!(malformed(&v2(0x21, 0x21, &[0; 35])), "v2 AF_INET6 address block shorter than 36 bytes");
        assert_eq!(malformed(&v2(0x21, 0x12, &[0; 12])), "v2 IP family without STREAM transport");
        assert_eq!(malformed(&v2(0x21, 0x10, &[0; 12])), "v2 IP family without STREAM transport");
        assert_eq!(malformed(&v2(0x21, 0x41, &[0; 12])), "v2 address family");
        assert_eq!(malformed(&v2(0x21, 0x13, &[0; 12])), "v2 transport protocol");
        let mut big = V2_SIGNATURE.to_vec();
        big.extend_from_slice(&[0x21, 0x11, 0x10, 0x00]);
        assert!(matches!(parse(&big), Err(ProxyProtocolError::TooLarge(V2_MAX))), "refused from the length alone");
    }

    #[tokio::test]
    async fn bad_signature_refused_without_waiting() {
        let started = Instant::now();
        let (mut server, mut client) = pair().await;
        // The client stays connected: the answer must come from the first bytes alone.
        client.write_all(b"GET / HTTP/1.1\r\n").await.expect("write");
        let err = read_proxy_header(&mut server, LIMIT).await.expect_err("not a PROXY header");
        assert!(matches!(err, ProxyProtocolError::NotProxy), "{err:?}");
        assert_eq!(err.reason(), "not_proxy");
        assert!(started.elapsed() < LIMIT / 2);
        // A near miss of the v2 signature.
        let mut near = V2_SIGNATURE;
        near[11] = b'X';
        assert!(matches!(parse(&near), Err(ProxyProtocolError::NotProxy)));
        assert!(matches!(parse(b"PROXY"), Ok(None)));
        assert!(matches!(parse(b"PROXYTCP4"), Err(ProxyProtocolError::NotProxy)));
        assert!(matches!(parse(b"\x16\x03\x01"), Err(ProxyProtocolError::NotProxy)));
    }

    #[tokio::test]
    async fn garbage_after_valid_start() {
        let err = receive(&[b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3 4 5\r\n"], false).await.expect_err("garbage");
        assert_eq!(err.reason(), "malformed");
        let mut noise = b"PROXY ".to_vec();
        noise.extend(std::iter::repeat_n(b'z', 300));
        let err = receive(&[&noise], false).await.expect_err("too long");
        assert!(matches!(err, ProxyProtocolError::TooLarge(V1_MAX)), "{err:?}");
    }

    #[tokio::test]
    async fn truncated_header_then_eof() {
        let err = receive(&[b"PROXY TCP4 1.2.3.4 5.6."], true).await.expect_err("truncated");
        assert!(matches!(err, ProxyProtocolError::Closed(23)), "{err:?}");
        let header = v2_inet([1, 2, 3, 4], [5, 6, 7, 8], 1, 2, b"");
        let err = receive(&[&header[..20]], true).await.expect_err("truncated");
        assert!(matches!(err, ProxyProtocolError::Closed(20)), "{err:?}");
        let err = receive(&[], true).await.expect_err("empty");
        assert!(matches!(err, ProxyProtocolError::Closed(0)), "{err:?}");
    }

    #[tokio::test]
    async fn silent_client_times_out() {
        let (mut server, _client) = pair().await;
        let started = Instant::now();
        let err = read_proxy_header(&mut server, Duration::from_millis(200)).await.expect_err("timeout");
        assert!(matches!(err, ProxyProtocolError::Timeout(_)), "{err:?}");
        assert_eq!(err.reason(), "timeout");
        assert!(started.elapsed() >= Duration::from_millis(200));
    }

    #[tokio::test]
    async fn deadline_covers_the_whole_header() {
        // A byte every 50 ms keeps each read short, but the 15-byte header as a whole takes 700 ms.
        let (mut server, mut client) = pair().await;
        let drip = tokio::spawn(async move {
            for b in b"PROXY UNKNOWN\r\n" {
                if client.write_all(&[*b]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        let started = Instant::now();
        let err = read_proxy_header(&mut server, Duration::from_millis(300)).await.expect_err("timeout");
        assert!(matches!(err, ProxyProtocolError::Timeout(_)), "{err:?}");
        assert!(started.elapsed() < Duration::from_millis(650), "the limit is for the whole header, not per read");
        drop(server);
        drip.await.expect("drip");
    }

    #[tokio::test]
    async fn reads_in_chunks_not_bytes() {
        // A reader that counts reads: one chunked read for a header that arrived whole.
        struct Counting<'a> {
            data: &'a [u8],
            reads: usize,
        }
        impl AsyncRead for Counting<'_> {
            fn poll_read(
                mut self: std::pin::Pin<&mut Self>,
                _cx: &mut std::task::Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<io::Result<()>> {
                self.reads += 1;
                let n = self.data.len().min(buf.remaining());
                let (now, later) = self.data.split_at(n);
                buf.put_slice(now);
                self.data = later;
                std::task::Poll::Ready(Ok(()))
            }
        }
        let mut header = v2_inet([1, 2, 3, 4], [5, 6, 7, 8], 1, 2, &[0; 40]);
        header.extend_from_slice(b"after");
        let mut reader = Counting { data: &header, reads: 0 };
        let h = read_proxy_header(&mut reader, LIMIT).await.expect("header");
        assert_eq!(reader.reads, 1);
        assert_eq!(h.leftover, b"after");
    }
}
