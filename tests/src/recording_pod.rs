//! A pod on raw TCP that keeps every byte each connection brought it, for tests that must see exactly what
//! reached a pod (a request refused by the router must not arrive whole, or at all). It answers `200 ok` to
//! each complete request (a head, then a Content-Length or chunked body up to its last chunk) and notes when
//! the router closed the connection. Each connection is served for at most `CONNECTION_LIMIT`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const CONNECTION_LIMIT: Duration = Duration::from_secs(60);
const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Pod: recording\r\n\r\nok";

/// What one connection brought.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    pub bytes: Vec<u8>,
    /// Complete requests answered.
    pub answered: usize,
    /// The router closed (or reset) the connection.
    pub closed: bool,
}

impl Recorded {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

type Connections = Arc<Mutex<Vec<Arc<Mutex<Recorded>>>>>;

pub struct RecordingPod {
    pub addr: SocketAddr,
    connections: Connections,
    task: JoinHandle<()>,
}

impl RecordingPod {
    /// Starts a recording pod on a free port of 127.0.0.1.
    pub async fn start() -> RecordingPod {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind recording pod");
        let addr = listener.local_addr().expect("recording pod address");
        let connections: Connections = Arc::default();
        let list = connections.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let record = Arc::new(Mutex::new(Recorded::default()));
                list.lock().expect("connection list").push(record.clone());
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(CONNECTION_LIMIT, serve(stream, record)).await;
                });
            }
        });
        RecordingPod { addr, connections, task }
    }

    /// What each connection accepted so far brought, in order of acceptance.
    pub fn recorded(&self) -> Vec<Recorded> {
        let list = self.connections.lock().expect("connection list");
        list.iter().map(|record| record.lock().expect("record").clone()).collect()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.lock().expect("connection list").len()
    }

    /// Waits up to `limit` until every connection accepted so far was closed by the router; returns the
    /// records then (or as they are when the limit passed).
    pub async fn wait_all_closed(&self, limit: Duration) -> Vec<Recorded> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let recorded = self.recorded();
            if recorded.iter().all(|r| r.closed) || tokio::time::Instant::now() >= deadline {
                return recorded;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for RecordingPod {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, record: Arc<Mutex<Recorded>>) {
    let mut buffer = [0u8; 16 * 1024];
    // Where the request being received starts in the recorded bytes.
    let mut request_start = 0;
    loop {
        let n = match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let complete = {
            let mut record = record.lock().expect("record");
            record.bytes.extend_from_slice(&buffer[..n]);
            let end = complete_request(&record.bytes[request_start..]);
            if let Some(end) = end {
                request_start += end;
                record.answered += 1;
            }
            end.is_some()
        };
        if complete && stream.write_all(ANSWER).await.is_err() {
            break;
        }
    }
    record.lock().expect("record").closed = true;
}

/// The length of the complete request at the start of `bytes`, if it is all there.
fn complete_request(bytes: &[u8]) -> Option<usize> {
    let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_ascii_lowercase();
    let body = &bytes[head_end..];
    let header = |name: &str| {
        head.lines().find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(':')).map(str::trim))
    };
    if header("transfer-encoding").is_some_and(|value| value.contains("chunked")) {
        let last_chunk = if body.starts_with(b"0\r\n\r\n") {
            Some(0)
        } else {
            body.windows(7).position(|w| w == b"\r\n0\r\n\r\n").map(|at| at + 2)
        };
        return last_chunk.map(|at| head_end + at + 5);
    }
    let length: usize = header("content-length").and_then(|value| value.parse().ok()).unwrap_or(0);
    (body.len() >= length).then_some(head_end + length)
}

#[cfg(test)]
mod tests {
    use super::complete_request;

    #[test]
    fn requests_end_where_their_framing_says() {
        assert_eq!(complete_request(b"GET / HTTP/1.1\r\nHost: a\r\n\r\nrest"), Some(27));
        assert_eq!(complete_request(b"GET / HTTP/1.1\r\nHost: a\r\n"), None);
        let sized = b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nab";
        assert_eq!(complete_request(sized), None);
        assert_eq!(complete_request(b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"), Some(41));
        let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n";
        assert_eq!(complete_request(chunked), None);
        let whole = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        assert_eq!(complete_request(whole), Some(whole.len()));
        let empty = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        assert_eq!(complete_request(empty), Some(empty.len()));
    }
}
