//! Reading the TLS ClientHello that opens a :443 connection, to learn the server name and ALPN offer, while
//! keeping every byte read so it can be forwarded to a pod (passthrough) or replayed to rustls (termination).

#![forbid(unsafe_code)]

use std::io;
use std::time::Duration;

use router_common::tls::{parse_client_hello, HelloError, Parsed, MAX_HELLO, MAX_RECORDS};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;

/// Bytes of a TLS record header (type, version, length).
const RECORD_HEADER: usize = 5;
/// Most bytes read while looking for the hello: the largest hello the reader reassembles ([`MAX_HELLO`]) plus a
/// record header for each record it may be spread over. A stream still incomplete at this size is refused.
const MAX_BUFFERED: usize = MAX_HELLO + MAX_RECORDS * RECORD_HEADER;

/// What the ClientHello told, and the bytes it came in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspected {
    /// Every byte read from the connection, the `initial` bytes included, in order: the hello and possibly
    /// bytes after it. Forward them to the pod, or put them in front of the stream for rustls.
    pub buffered: Vec<u8>,
    /// The SNI host name, lowercased, without a trailing dot; `None` when the client sent none.
    pub server_name: Option<String>,
    /// Whether the client's ALPN list contains `h2`.
    pub offers_h2: bool,
}

/// Why no ClientHello could be read; the caller closes the connection.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// No complete hello within the inspect delay.
    #[error("no complete ClientHello within the inspect delay")]
    Timeout,
    /// The client closed before a complete hello.
    #[error("connection closed before a complete ClientHello")]
    Closed,
    /// The first bytes are not a TLS handshake record (plain HTTP on :443, for instance).
    #[error("not a TLS connection")]
    NotTls,
    /// A TLS stream whose hello breaks the format, or that does not open with a ClientHello; the text names
    /// the part.
    #[error("malformed ClientHello: {0}")]
    Malformed(&'static str),
    /// A hello larger than the reader reassembles.
    #[error("ClientHello larger than {MAX_HELLO} bytes or spread over more than {MAX_RECORDS} records")]
    TooLarge,
    /// Reading the connection failed.
    #[error("reading the ClientHello: {0}")]
    Io(#[from] io::Error),
}

impl InspectError {
    /// A short fixed label for metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            InspectError::Timeout => "timeout",
            InspectError::Closed => "closed",
            InspectError::NotTls => "not_tls",
            InspectError::Malformed(_) => "malformed",
            InspectError::TooLarge => "too_large",
            InspectError::Io(_) => "io",
        }
    }
}

impl From<HelloError> for InspectError {
    fn from(error: HelloError) -> Self {
        match error {
            HelloError::NotTls => InspectError::NotTls,
            HelloError::NotClientHello => InspectError::Malformed("TLS stream does not open with a ClientHello"),
            HelloError::Malformed(what) => InspectError::Malformed(what),
            HelloError::TooLarge => InspectError::TooLarge,
        }
    }
}

/// Reads from `stream` until the bytes read, after `initial` (bytes of the same connection already read, such
/// as those left over after a PROXY header), hold a complete ClientHello, and returns what it says with all
/// the bytes. `limit` bounds the whole wait (ROUTER_INSPECT_DELAY), not each read.
///
/// Fails as soon as the bytes rule out a hello: plain HTTP is refused after its first byte.
pub async fn read_client_hello<S: AsyncRead + Unpin>(
    stream: &mut S,
    initial: Vec<u8>,
    limit: Duration,
) -> Result<Inspected, InspectError> {
    let deadline = Instant::now() + limit;
    let mut buf = initial;
    let mut scratch = vec![0u8; MAX_HELLO];
    loop {
        if let Some((server_name, offers_h2)) = examine(&buf, &mut scratch)? {
            return Ok(Inspected { buffered: buf, server_name, offers_h2 });
        }
        let room = MAX_BUFFERED.saturating_sub(buf.len());
        if room == 0 {
            return Err(InspectError::TooLarge);
        }
        buf.reserve(room);
        let mut limited = (&mut *stream).take(room as u64);
        match tokio::time::timeout_at(deadline, limited.read_buf(&mut buf)).await {
            Ok(Ok(0)) => return Err(InspectError::Closed),
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Err(InspectError::Io(error)),
            Err(_) => return Err(InspectError::Timeout),
        }
    }
}

/// The server name and ALPN verdict of the hello at the start of `buf`; `None` while it is incomplete.
fn examine(buf: &[u8], scratch: &mut [u8]) -> Result<Option<(Option<String>, bool)>, InspectError> {
    let hello = match parse_client_hello(buf, scratch)? {
        Parsed::NeedMore => return Ok(None),
        Parsed::Hello(hello) => hello,
    };
    let server_name = match hello.server_name {
        Some(name) => normalize_server_name(name.as_bytes())?,
        None => None,
    };
    Ok(Some((server_name, hello.alpn.contains(b"h2"))))
}

/// Lowercases a host name and drops one trailing dot; a name that is only a dot counts as none. Names with
/// bytes outside ASCII are refused, as rustls refuses them.
fn normalize_server_name(name: &[u8]) -> Result<Option<String>, InspectError> {
    if !name.is_ascii() {
        return Err(InspectError::Malformed("server_name is not ASCII"));
    }
    let name = name.strip_suffix(b".").unwrap_or(name);
    if name.is_empty() {
        return Ok(None);
    }
    let lower: String = name.iter().map(|&b| char::from(b.to_ascii_lowercase())).collect();
    Ok(Some(lower))
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncWriteExt, ReadBuf};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    const OPENSSL_SNI: &[u8] = include_bytes!("../../../router-common/src/tls/testdata/openssl_sni.bin");
    const OPENSSL_NO_SNI: &[u8] = include_bytes!("../../../router-common/src/tls/testdata/openssl_no_sni.bin");
    const OPENSSL_ALPN: &[u8] = include_bytes!("../../../router-common/src/tls/testdata/openssl_alpn.bin");
    const OPENSSL_TLS12: &[u8] = include_bytes!("../../../router-common/src/tls/testdata/openssl_tls12.bin");
    const CURL: &[u8] = include_bytes!("../../../router-common/src/tls/testdata/curl_alpn.bin");

    /// Each captured hello with the server name and h2 offer it must give.
    const FIXTURES: [(&str, &[u8], Option<&str>, bool); 5] = [
        ("openssl_sni", OPENSSL_SNI, Some("foo.example.com"), false),
        ("openssl_no_sni", OPENSSL_NO_SNI, None, false),
        ("openssl_alpn", OPENSSL_ALPN, Some("foo.example.com"), true),
        ("openssl_tls12", OPENSSL_TLS12, Some("foo.example.com"), false),
        ("curl", CURL, Some("foo.example.com"), true),
    ];

    const LIMIT: Duration = Duration::from_secs(5);

    /// A reader that hands out the given chunks one per read, pending (and waking itself) in between, so
    /// each chunk boundary is a read boundary. After the chunks it reads EOF, or stays pending if `hold`.
    struct Chunks {
        chunks: std::collections::VecDeque<Vec<u8>>,
        ready: bool,
        hold: bool,
    }

    impl Chunks {
        fn new(chunks: Vec<Vec<u8>>, hold: bool) -> Self {
            // An empty read would mean EOF.
            Chunks { chunks: chunks.into_iter().filter(|c| !c.is_empty()).collect(), ready: false, hold }
        }
    }

    impl AsyncRead for Chunks {
        fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            if !self.ready {
                self.ready = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            self.ready = false;
            match self.chunks.pop_front() {
                Some(mut chunk) => {
                    let n = chunk.len().min(buf.remaining());
                    buf.put_slice(&chunk[..n]);
                    if n < chunk.len() {
                        self.chunks.push_front(chunk.split_off(n));
                    }
                    Poll::Ready(Ok(()))
                }
                None if self.hold => Poll::Pending,
                None => Poll::Ready(Ok(())),
            }
        }
    }

    fn check(name: &str, result: Result<Inspected, InspectError>, sent: &[u8], sni: Option<&str>, h2: bool) {
        let got = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got.buffered, sent, "{name}: every byte kept, in order");
        assert_eq!(got.server_name.as_deref(), sni, "{name}");
        assert_eq!(got.offers_h2, h2, "{name}");
    }

    /// A ClientHello in one record with a server_name extension holding `name`, and an ALPN list.
    fn hello_with(name: &[u8], alpn: &[&[u8]]) -> Vec<u8> {
        fn len16(v: &[u8]) -> [u8; 2] {
            u16::try_from(v.len()).expect("short").to_be_bytes()
        }
        let mut entry = vec![0u8];
        entry.extend_from_slice(&len16(name));
        entry.extend_from_slice(name);
        let mut sni = len16(&entry).to_vec();
        sni.extend(entry);
        let mut protocols = Vec::new();
        for p in alpn {
            protocols.push(u8::try_from(p.len()).expect("short"));
            protocols.extend_from_slice(p);
        }
        let mut alpn_ext = len16(&protocols).to_vec();
        alpn_ext.extend(protocols);
        let mut extensions = vec![0, 0];
        extensions.extend_from_slice(&len16(&sni));
        extensions.extend(sni);
        if !alpn.is_empty() {
            extensions.extend_from_slice(&[0, 0x10]);
            extensions.extend_from_slice(&len16(&alpn_ext));
            extensions.extend(alpn_ext);
        }
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
        body.extend_from_slice(&len16(&extensions));
        body.extend(extensions);
        let mut msg = vec![1, 0];
        msg.extend_from_slice(&len16(&body));
        msg.extend(body);
        let mut record = vec![0x16, 3, 1];
        record.extend_from_slice(&len16(&msg));
        record.extend(msg);
        record
    }

    /// Re-frames a single-record hello into records carrying at most `size` handshake bytes each.
    fn fragmented(hello: &[u8], size: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in hello[RECORD_HEADER..].chunks(size) {
            out.extend_from_slice(&[0x16, 3, 1]);
            out.extend_from_slice(&u16::try_from(piece.len()).expect("short").to_be_bytes());
            out.extend_from_slice(piece);
        }
        out
    }

    /// A loopback connection: (the accepted end we inspect, the client end).
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (connected, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let client = connected.expect("connect");
        client.set_nodelay(true).expect("nodelay");
        (accepted.expect("accept").0, client)
    }

    #[tokio::test]
    async fn fixtures_split_at_every_offset() {
        for (name, hello, sni, h2) in FIXTURES {
            for at in 0..=hello.len() {
                let (a, b) = hello.split_at(at);
                let mut reader = Chunks::new(vec![a.to_vec(), b.to_vec()], true);
                let result = read_client_hello(&mut reader, Vec::new(), LIMIT).await;
                check(&format!("{name} split at {at}"), result, hello, sni, h2);
            }
        }
    }

    #[tokio::test]
    async fn fixtures_with_initial_bytes_then_duplex() {
        for (name, hello, sni, h2) in FIXTURES {
            for at in 0..=hello.len() {
                let (initial, rest) = hello.split_at(at);
                let (mut server, mut client) = tokio::io::duplex(4096);
                client.write_all(rest).await.expect("write");
                let result = read_client_hello(&mut server, initial.to_vec(), LIMIT).await;
                check(&format!("{name} with {at} initial bytes"), result, hello, sni, h2);
            }
        }
    }

    #[tokio::test]
    async fn fixtures_in_tiny_writes() {
        for (name, hello, sni, h2) in FIXTURES {
            for size in [1, 2, 3, 7, 64] {
                // A duplex this small makes every read return at most `size` bytes.
                let (mut server, mut client) = tokio::io::duplex(size);
                let data = hello.to_vec();
                let writer = tokio::spawn(async move {
                    for piece in data.chunks(size) {
                        client.write_all(piece).await.expect("write");
                    }
                    client
                });
                let result = read_client_hello(&mut server, Vec::new(), LIMIT).await;
                check(&format!("{name} in {size}-byte writes"), result, hello, sni, h2);
                drop(writer.await.expect("writer"));
            }
        }
    }

    #[tokio::test]
    async fn fragmented_hello_is_reassembled() {
        for size in [1, 16, 100] {
            // One-byte records would need more than MAX_RECORDS records.
            let stream = fragmented(CURL, size);
            let mut reader = Chunks::new(vec![stream.clone()], true);
            let result = read_client_hello(&mut reader, Vec::new(), LIMIT).await;
            if size == 1 {
                let err = result.expect_err("too many records");
                assert!(matches!(err, InspectError::TooLarge), "{err:?}");
                assert_eq!(err.reason(), "too_large");
            } else {
                check(&format!("{size}-byte records"), result, &stream, Some("foo.example.com"), true);
            }
        }
    }

    #[tokio::test]
    async fn bytes_after_the_hello_are_kept() {
        let mut sent = OPENSSL_ALPN.to_vec();
        sent.extend_from_slice(b"\x17\x03\x03\x00\x05early");
        // All of it arrives as leftovers of a PROXY header: nothing more is read.
        let mut never = Chunks::new(Vec::new(), true);
        let result = read_client_hello(&mut never, sent.clone(), LIMIT).await;
        check("initial only", result, &sent, Some("foo.example.com"), true);
        // And over a socket in one write.
        let (mut server, mut client) = pair().await;
        client.write_all(&sent).await.expect("write");
        let got = read_client_hello(&mut server, Vec::new(), LIMIT).await.expect("hello");
        assert!(got.buffered.starts_with(OPENSSL_ALPN) && sent.starts_with(&got.buffered));
    }

    #[tokio::test]
    async fn loopback_hello_in_pieces() {
        let (mut server, mut client) = pair().await;
        let writer = tokio::spawn(async move {
            for piece in CURL.chunks(CURL.len() / 3 + 1) {
                client.write_all(piece).await.expect("write");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            client
        });
        let result = read_client_hello(&mut server, Vec::new(), LIMIT).await;
        check("loopback", result, CURL, Some("foo.example.com"), true);
        drop(writer.await.expect("writer"));
    }

    #[tokio::test]
    async fn server_name_normalized() {
        let cases: [(&[u8], Option<&str>); 4] = [
            (b"WWW.Example.ORG.", Some("www.example.org")),
            (b"api.example.com", Some("api.example.com")),
            (b"a.b.", Some("a.b")),
            (b".", None),
        ];
        for (sent, want) in cases {
            let hello = hello_with(sent, &[b"http/1.1"]);
            let mut reader = Chunks::new(vec![hello.clone()], true);
            let result = read_client_hello(&mut reader, Vec::new(), LIMIT).await;
            check(&String::from_utf8_lossy(sent), result, &hello, want, false);
        }
        let hello = hello_with("bücher.example".as_bytes(), &[]);
        let mut reader = Chunks::new(vec![hello], true);
        let err = read_client_hello(&mut reader, Vec::new(), LIMIT).await.expect_err("not ASCII");
        assert!(matches!(err, InspectError::Malformed("server_name is not ASCII")), "{err:?}");
    }

    #[tokio::test]
    async fn h2_must_be_offered_exactly() {
        for (alpn, want) in [(&[&b"h2c"[..], b"http/1.1"][..], false), (&[&b"http/1.1"[..], b"h2"], true)] {
            let hello = hello_with(b"x.example", alpn);
            let mut reader = Chunks::new(vec![hello.clone()], true);
            check("alpn", read_client_hello(&mut reader, Vec::new(), LIMIT).await, &hello, Some("x.example"), want);
        }
    }

    #[tokio::test]
    async fn plain_http_refused_at_once() {
        let (mut server, mut client) = pair().await;
        client.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").await.expect("write");
        let started = std::time::Instant::now();
        // The client keeps the connection open: the verdict comes from the bytes alone.
        let err = read_client_hello(&mut server, Vec::new(), LIMIT).await.expect_err("not TLS");
        assert!(matches!(err, InspectError::NotTls), "{err:?}");
        assert_eq!(err.reason(), "not_tls");
        assert!(started.elapsed() < LIMIT / 2);
        drop(client);
    }

    #[tokio::test]
    async fn other_handshake_message_is_malformed() {
        // A ServerHello (type 2) where the ClientHello should be.
        let mut stream = hello_with(b"a.example", &[]);
        stream[RECORD_HEADER] = 2;
        let mut reader = Chunks::new(vec![stream], true);
        let err = read_client_hello(&mut reader, Vec::new(), LIMIT).await.expect_err("malformed");
        assert_eq!(err.reason(), "malformed");
    }

    #[tokio::test]
    async fn silent_client_times_out() {
        let (mut server, _client) = pair().await;
        let started = std::time::Instant::now();
        let err = read_client_hello(&mut server, Vec::new(), Duration::from_millis(200)).await.expect_err("timeout");
        assert!(matches!(err, InspectError::Timeout), "{err:?}");
        assert_eq!(err.reason(), "timeout");
        assert!(started.elapsed() >= Duration::from_millis(200));
    }

    #[tokio::test]
    async fn deadline_covers_the_whole_hello() {
        // A byte every 20 ms: each read is quick, the hello as a whole is not.
        let (mut server, mut client) = pair().await;
        let drip = tokio::spawn(async move {
            for b in CURL {
                if client.write_all(&[*b]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        let started = std::time::Instant::now();
        let err = read_client_hello(&mut server, Vec::new(), Duration::from_millis(300)).await.expect_err("timeout");
        assert!(matches!(err, InspectError::Timeout), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
        drop(server);
        drip.abort();
    }

    #[tokio::test]
    async fn eof_before_the_hello_is_closed() {
        let (mut server, mut client) = pair().await;
        client.write_all(&CURL[..CURL.len() / 2]).await.expect("write");
        client.shutdown().await.expect("shutdown");
        let err = read_client_hello(&mut server, Vec::new(), LIMIT).await.expect_err("closed");
        assert!(matches!(err, InspectError::Closed), "{err:?}");
        assert_eq!(err.reason(), "closed");
        // An empty connection as well.
        let (mut server, client) = pair().await;
        drop(client);
        let err = read_client_hello(&mut server, Vec::new(), LIMIT).await.expect_err("closed");
        assert!(matches!(err, InspectError::Closed), "{err:?}");
    }
}
