//! Where framed lines go (ROUTER_SYSLOG_ADDRESS, read as HAProxy reads a `log` target): a UDP `host:port`
//! (`udp@`, `udp4@`, `udp6@`, `ipv4@`, `ipv6@` prefixes allowed; port 514 when none is given), a unix datagram
//! socket (a path starting with `/`, or `unix@path`), `stdout` or `stderr`. Lines go in batches: datagrams with
//! `sendmmsg(2)` (one datagram per line, as HAProxy sends them), a stream in one write. Sends never wait: a
//! datagram the kernel cannot take now is dropped, and a unix socket that is gone is looked for again at most
//! once a second.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{UdpSocket, UnixDatagram};
use tokio::time::Instant;

use super::datagrams::send_datagrams;

const DEFAULT_SYSLOG_PORT: u16 = 514;
const UNIX_RECONNECT_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    Udp(SocketAddr),
    Unix(PathBuf),
    Stdout,
    Stderr,
}

#[derive(Debug, thiserror::Error)]
pub enum DestinationError {
    #[error("ROUTER_SYSLOG_ADDRESS {value:?}: cannot resolve: {source}")]
    Resolve { value: String, source: io::Error },
    #[error("ROUTER_SYSLOG_ADDRESS {value:?}: expected host:port, a unix socket path, stdout or stderr")]
    Unusable { value: String },
}

impl Destination {
    pub fn parse(value: &str) -> Result<Destination, DestinationError> {
        let value = value.trim();
        match value {
            "stdout" => return Ok(Destination::Stdout),
            "stderr" => return Ok(Destination::Stderr),
            _ => {}
        }
        if let Some(path) = value.strip_prefix("unix@") {
            return Ok(Destination::Unix(PathBuf::from(path)));
        }
        if value.starts_with('/') {
            return Ok(Destination::Unix(PathBuf::from(value)));
        }
        let host_port = ["udp@", "udp4@", "udp6@", "ipv4@", "ipv6@"]
            .iter()
            .find_map(|prefix| value.strip_prefix(prefix))
            .unwrap_or(value);
        if host_port.is_empty() || host_port.contains('@') {
            return Err(DestinationError::Unusable { value: value.to_string() });
        }
        if let Ok(addr) = host_port.parse::<SocketAddr>() {
            return Ok(Destination::Udp(addr));
        }
        if let Ok(ip) = host_port.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            return Ok(Destination::Udp(SocketAddr::new(ip, DEFAULT_SYSLOG_PORT)));
        }
        // A host name, with or without a port.
        let target =
            if host_port.contains(':') { host_port.to_string() } else { format!("{host_port}:{DEFAULT_SYSLOG_PORT}") };
        target
            .to_socket_addrs()
            .map_err(|source| DestinationError::Resolve { value: value.to_string(), source })?
            .next()
            .map(Destination::Udp)
            .ok_or_else(|| DestinationError::Unusable { value: value.to_string() })
    }
}

/// An open destination.
pub enum Sink {
    Udp(UdpSocket),
    Unix { path: PathBuf, socket: Option<UnixDatagram>, next_try: Instant },
    Stdout(tokio::io::Stdout),
    Stderr(tokio::io::Stderr),
}

impl Sink {
    pub async fn open(destination: &Destination) -> io::Result<Sink> {
        Ok(match destination {
            Destination::Udp(addr) => {
                let local: SocketAddr = match addr {
                    SocketAddr::V4(_) => "0.0.0.0:0".parse().map_err(io::Error::other)?,
                    SocketAddr::V6(_) => "[::]:0".parse().map_err(io::Error::other)?,
                };
                let socket = UdpSocket::bind(local).await?;
                socket.connect(addr).await?;
                Sink::Udp(socket)
            }
            Destination::Unix(path) => {
                let socket = connect_unix(path).ok();
                Sink::Unix { path: path.clone(), socket, next_try: Instant::now() + UNIX_RECONNECT_INTERVAL }
            }
            Destination::Stdout => Sink::Stdout(tokio::io::stdout()),
            Destination::Stderr => Sink::Stderr(tokio::io::stderr()),
        })
    }

    /// Sends a batch of framed messages: `buffer` holds them back to back, message `i` ending at `ends[i]`.
    /// Datagram destinations get one datagram per message in as few `sendmmsg(2)` calls as the kernel takes;
    /// a stream gets the whole buffer in one write. Returns how many messages were lost (the destination was
    /// busy or gone); never waits for a datagram socket.
    pub async fn send_batch(&mut self, buffer: &[u8], ends: &[usize]) -> usize {
        match self {
            Sink::Udp(socket) => send_datagrams(socket.as_raw_fd(), buffer, ends, false).lost,
            Sink::Unix { path, socket, next_try } => {
                if socket.is_none() && Instant::now() >= *next_try {
                    *next_try = Instant::now() + UNIX_RECONNECT_INTERVAL;
                    *socket = connect_unix(path).ok();
                }
                let Some(open) = socket else { return ends.len() };
                let sent = send_datagrams(open.as_raw_fd(), buffer, ends, true);
                if sent.gone {
                    *socket = None;
                    *next_try = Instant::now() + UNIX_RECONNECT_INTERVAL;
                }
                sent.lost
            }
            Sink::Stdout(out) => write_stream(out, buffer, ends.len()).await,
            Sink::Stderr(out) => write_stream(out, buffer, ends.len()).await,
        }
    }
}

/// The whole buffer on a stream; every message of it is lost when the write fails.
async fn write_stream(out: &mut (impl tokio::io::AsyncWrite + Unpin), buffer: &[u8], messages: usize) -> usize {
    match out.write_all(buffer).await {
        Ok(()) => 0,
        Err(_) => messages,
    }
}

fn connect_unix(path: &PathBuf) -> io::Result<UnixDatagram> {
    let socket = UnixDatagram::unbound()?;
    socket.connect(path)?;
    Ok(socket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_parse_as_haproxy_log_targets() {
        let udp = |s: &str| Destination::Udp(s.parse().expect("addr"));
        assert_eq!(Destination::parse("127.0.0.1:1514").expect("udp"), udp("127.0.0.1:1514"));
        assert_eq!(Destination::parse("udp@127.0.0.1:1514").expect("udp@"), udp("127.0.0.1:1514"));
        assert_eq!(Destination::parse("127.0.0.1").expect("no port"), udp("127.0.0.1:514"));
        assert_eq!(Destination::parse("[::1]:1514").expect("v6"), udp("[::1]:1514"));
        assert_eq!(Destination::parse("::1").expect("bare v6"), udp("[::1]:514"));
        assert_eq!(
            Destination::parse("/var/lib/rsyslog/rsyslog.sock").expect("unix"),
            Destination::Unix("/var/lib/rsyslog/rsyslog.sock".into())
        );
        assert_eq!(Destination::parse("unix@/run/log.sock").expect("unix@"), Destination::Unix("/run/log.sock".into()));
        assert_eq!(Destination::parse("stdout").expect("stdout"), Destination::Stdout);
        assert!(Destination::parse("tcp@10.0.0.1:514").is_err());
    }
}
