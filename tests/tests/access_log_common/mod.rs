//! Reading syslog datagrams the way a syslog server does: the RFC 3164 or RFC 5424 header, then the httplog
//! and tcplog lines field by field (HAProxy 2.6's default formats).
// Each test binary that includes this module uses a part of it.
#![allow(dead_code)]

use std::time::Duration;

use tokio::net::{UdpSocket, UnixDatagram};

/// A syslog message split into its header fields and its message.
#[derive(Debug)]
pub struct Syslog {
    pub pri: u32,
    /// `Nov 25 17:51:13` (RFC 3164) or `2026-11-25T17:51:13.736776+00:00` (RFC 5424).
    pub time: String,
    pub hostname: String,
    pub tag: String,
    pub pid: u32,
    pub message: String,
}

/// `<PRI>Mmm dd hh:mm:ss host tag[pid]: message\n`
pub fn parse_rfc3164(datagram: &[u8]) -> Syslog {
    let text = std::str::from_utf8(datagram).expect("utf-8 datagram");
    let text = text.strip_suffix('\n').expect("a message ends with a line feed");
    let (pri, rest) = text.strip_prefix('<').and_then(|t| t.split_once('>')).expect("<PRI>");
    assert!(rest.len() > 16, "{text}");
    let (time, rest) = rest.split_at(15);
    let rest = rest.strip_prefix(' ').expect("space after the time");
    let (hostname, rest) = rest.split_once(' ').expect("host name");
    let (tag_pid, message) = rest.split_once(": ").expect("tag[pid]: ");
    let (tag, pid) = tag_pid.strip_suffix(']').and_then(|t| t.split_once('[')).expect("tag[pid]");
    Syslog {
        pri: pri.parse().expect("PRI"),
        time: time.to_string(),
        hostname: hostname.to_string(),
        tag: tag.to_string(),
        pid: pid.parse().expect("pid"),
        message: message.to_string(),
    }
}

/// `<PRI>1 time host tag pid - - message\n`
pub fn parse_rfc5424(datagram: &[u8]) -> Syslog {
    let text = std::str::from_utf8(datagram).expect("utf-8 datagram");
    let text = text.strip_suffix('\n').expect("a message ends with a line feed");
    let (pri, rest) = text.strip_prefix('<').and_then(|t| t.split_once(">1 ")).expect("<PRI>1 ");
    let mut fields = rest.splitn(7, ' ');
    let mut next = || fields.next().expect("RFC 5424 header field").to_string();
    let (time, hostname, tag, pid, msgid, data, message) = (next(), next(), next(), next(), next(), next(), next());
    assert_eq!((msgid.as_str(), data.as_str()), ("-", "-"), "{text}");
    Syslog { pri: pri.parse().expect("PRI"), time, hostname, tag, pid: pid.parse().expect("pid"), message }
}

/// The fields of an httplog line.
#[derive(Debug, PartialEq, Eq)]
pub struct HttpLog {
    pub client_ip: String,
    pub client_port: u16,
    pub date: String,
    pub frontend: String,
    pub backend: String,
    pub server: String,
    /// TR Tw Tc Tr Ta
    pub timers: Vec<i64>,
    pub status: i32,
    pub bytes: u64,
    pub request_cookie: String,
    pub response_cookie: String,
    pub termination: String,
    /// ac fc bc sc rc
    pub counts: Vec<String>,
    /// sq bq
    pub queues: Vec<u64>,
    /// `{...}` groups: request captures, then response captures.
    pub captures: Vec<String>,
    pub request_line: String,
}

pub fn parse_httplog(line: &str) -> HttpLog {
    let mut rest = line;
    let mut word = || {
        let (token, after) = rest.split_once(' ').unwrap_or((rest, ""));
        rest = after;
        token.to_string()
    };
    let client = word();
    let date = word();
    let frontend = word();
    let backend_server = word();
    let timers = word();
    let status = word();
    let bytes = word();
    let request_cookie = word();
    let response_cookie = word();
    let termination = word();
    let counts = word();
    let queues = word();
    let mut captures = Vec::new();
    while rest.starts_with('{') {
        let end = rest.find("} ").map(|i| i + 1).unwrap_or(rest.len());
        captures.push(rest[1..end - 1].to_string());
        rest = rest[end..].trim_start();
    }
    let request_line =
        rest.strip_prefix('"').and_then(|r| r.strip_suffix('"')).unwrap_or_else(|| panic!("quoted request: {line}"));
    let (client_ip, client_port) = client.rsplit_once(':').expect("client ip:port");
    let (backend, server) = backend_server.split_once('/').expect("backend/server");
    HttpLog {
        client_ip: client_ip.to_string(),
        client_port: client_port.parse().expect("client port"),
        date: date.strip_prefix('[').and_then(|d| d.strip_suffix(']')).expect("[date]").to_string(),
        frontend,
        backend: backend.to_string(),
        server: server.to_string(),
        timers: timers.split('/').map(|t| t.parse().expect("timer")).collect(),
        status: status.parse().expect("status"),
        bytes: bytes.parse().expect("bytes"),
        request_cookie,
        response_cookie,
        termination,
        counts: counts.split('/').map(str::to_string).collect(),
        queues: queues.split('/').map(|q| q.parse().expect("queue")).collect(),
        captures,
        request_line: request_line.to_string(),
    }
}

/// The fields of a tcplog line.
#[derive(Debug)]
pub struct TcpLog {
    pub client_ip: String,
    pub frontend: String,
    pub backend: String,
    pub server: String,
    /// Tw Tc Tt
    pub timers: Vec<i64>,
    pub bytes: u64,
    pub termination: String,
    pub counts: Vec<String>,
}

pub fn parse_tcplog(line: &str) -> TcpLog {
    let words: Vec<&str> = line.split(' ').collect();
    assert_eq!(words.len(), 9, "tcplog has 9 fields: {line}");
    let (client_ip, _) = words[0].rsplit_once(':').expect("client");
    let (backend, server) = words[3].split_once('/').expect("backend/server");
    TcpLog {
        client_ip: client_ip.to_string(),
        frontend: words[2].to_string(),
        backend: backend.to_string(),
        server: server.to_string(),
        timers: words[4].split('/').map(|t| t.parse().expect("timer")).collect(),
        bytes: words[5].parse().expect("bytes"),
        termination: words[6].to_string(),
        counts: words[7].split('/').map(str::to_string).collect(),
    }
}

/// The next datagram, or a panic after 5 s.
pub async fn next_udp(socket: &UdpSocket) -> Vec<u8> {
    let mut buf = vec![0u8; 65536];
    let n = tokio::time::timeout(Duration::from_secs(5), socket.recv(&mut buf))
        .await
        .expect("a syslog datagram within 5 s")
        .expect("recv");
    buf.truncate(n);
    buf
}

pub async fn next_unix(socket: &UnixDatagram) -> Vec<u8> {
    let mut buf = vec![0u8; 65536];
    let n = tokio::time::timeout(Duration::from_secs(5), socket.recv(&mut buf))
        .await
        .expect("a syslog datagram within 5 s")
        .expect("recv");
    buf.truncate(n);
    buf
}

/// No datagram for `quiet`.
pub async fn nothing_for(socket: &UdpSocket, quiet: Duration) -> Option<String> {
    let mut buf = vec![0u8; 65536];
    match tokio::time::timeout(quiet, socket.recv(&mut buf)).await {
        Ok(Ok(n)) => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
        _ => None,
    }
}

/// Whether something listens on TCP 127.0.0.1:`port`, read from /proc/net/tcp (no connection made: a probe
/// connection would be one more line in the log under test, and whether a proxy logs a connection closed
/// before it accepted it depends on timing).
pub fn listening_on_loopback(port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let local = format!("0100007F:{port:04X}");
    // Fields: sl, local_address, rem_address, st (0A is LISTEN), ...
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.get(1) == Some(&local.as_str()) && fields.get(3) == Some(&"0A")
    })
}
