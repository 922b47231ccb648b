//! A fixed-rate HTTP/1.1 load for the zero-failure tests: clients that each send one GET per `pace` over
//! keep-alive connections or a connection per request, plain or through any stream a connector opens (TLS),
//! and check every answer (status 200, a known backend, the whole body). Bounded in count and in time.
//!
//! A keep-alive client behaves as a browser does: a response that says `Connection: close` ends the
//! connection and the next request opens a new one (counted, not a failure). Everything else that goes wrong is
//! a failure: a refused or reset connection, a connection closed before the whole answer, another status.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Any stream a client talks HTTP/1.1 over.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Opens one connection to the router.
pub type Connector = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = io::Result<Box<dyn Io>>> + Send>> + Send + Sync>;

/// A plain TCP connector to `addr`.
pub fn tcp(addr: SocketAddr) -> Connector {
    Arc::new(move || Box::pin(async move { Ok(Box::new(TcpStream::connect(addr).await?) as Box<dyn Io>) }))
}

/// What the load sends and how fast.
#[derive(Clone, Debug)]
pub struct Shape {
    pub host: String,
    pub path: String,
    /// The backends whose answers count as right.
    pub backends: Vec<String>,
    /// One request per client per `pace`.
    pub pace: Duration,
    /// Each client stops after this many requests, or when told to, or after `limit`.
    pub requests_per_client: u64,
    pub limit: Duration,
}

/// What the load saw.
#[derive(Default)]
pub struct Tally {
    pub ok: AtomicU64,
    pub failed: AtomicU64,
    /// Keep-alive connections the server ended with `Connection: close` on a response.
    pub closed_by_server: AtomicU64,
    by_backend: Mutex<BTreeMap<String, u64>>,
    first_failure: Mutex<Option<String>>,
}

impl Tally {
    pub fn fail(&self, why: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        lock(&self.first_failure).get_or_insert(why);
    }

    fn answered_by(&self, backend: &str) {
        self.ok.fetch_add(1, Ordering::Relaxed);
        *lock(&self.by_backend).entry(backend.to_owned()).or_default() += 1;
    }

    /// Requests answered by `backend`.
    pub fn by(&self, backend: &str) -> u64 {
        lock(&self.by_backend).get(backend).copied().unwrap_or(0)
    }

    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    pub fn summary(&self) -> String {
        format!(
            "ok {} failed {} closed by the server {} (by backend {:?}); first failure: {:?}",
            self.ok.load(Ordering::Relaxed),
            self.failed(),
            self.closed_by_server.load(Ordering::Relaxed),
            lock(&self.by_backend),
            lock(&self.first_failure),
        )
    }

    /// Waits until the load has answered `n` more requests than now (it runs, it is not stuck).
    pub async fn moves(&self, n: u64) {
        self.moves_within(n, Duration::from_secs(10)).await;
    }

    /// [`Tally::moves`] with `limit` for the wait: for a phase where the test itself loads the machine (thousands
    /// of hostile connections opened by the test process, beside other tests on the same two cores).
    pub async fn moves_within(&self, n: u64, limit: Duration) {
        let seen = || self.ok.load(Ordering::Relaxed) + self.failed();
        let from = seen();
        let deadline = Instant::now() + limit;
        while seen() < from + n {
            assert!(Instant::now() < deadline, "the load did not move by {n} in {limit:?}: {}", self.summary());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One answer: which backend gave it, and whether the server ends the connection after it.
struct Answer {
    backend: String,
    closing: bool,
}

/// One GET on `stream`.
async fn exchange(stream: &mut BufReader<Box<dyn Io>>, shape: &Shape, close: bool) -> Result<Answer, String> {
    let connection = if close { "close" } else { "keep-alive" };
    let request = format!("GET {} HTTP/1.1\r\nHost: {}\r\nConnection: {connection}\r\n\r\n", shape.path, shape.host);
    stream.get_mut().write_all(request.as_bytes()).await.map_err(|e| format!("write: {e}"))?;
    let mut line = String::new();
    stream.read_line(&mut line).await.map_err(|e| format!("status line: {e}"))?;
    if !line.starts_with("HTTP/1.1 200 ") {
        return Err(format!("status line {line:?}"));
    }
    let (mut length, mut backend, mut closing) = (None, None, false);
    loop {
        line.clear();
        stream.read_line(&mut line).await.map_err(|e| format!("header: {e}"))?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else { return Err(format!("header line {header:?}")) };
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse::<usize>().ok(),
            "x-backend" => backend = Some(value.trim().to_string()),
            "connection" => closing = value.trim().eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    let length = length.ok_or("no content-length")?;
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.map_err(|e| format!("body: {e}"))?;
    match backend {
        Some(backend) if shape.backends.contains(&backend) => Ok(Answer { backend, closing }),
        other => Err(format!("answered by {other:?}")),
    }
}

fn pacer(pace: Duration) -> tokio::time::Interval {
    let mut ticks = tokio::time::interval(pace);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks
}

/// Requests over keep-alive connections until `stop`: a new connection when the server closed the last one
/// (with `Connection: close`), or after a failure, which is counted.
pub async fn keep_alive(connect: Connector, shape: Shape, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
    let deadline = Instant::now() + shape.limit;
    let mut stream = None;
    let mut pace = pacer(shape.pace);
    for _ in 0..shape.requests_per_client {
        pace.tick().await;
        if stop.load(Ordering::Relaxed) || Instant::now() > deadline {
            return;
        }
        if stream.is_none() {
            match connect().await {
                Ok(connected) => stream = Some(BufReader::new(connected)),
                Err(error) => {
                    tally.fail(format!("connect: {error}"));
                    continue;
                }
            }
        }
        let Some(open) = stream.as_mut() else { continue };
        match exchange(open, &shape, false).await {
            Ok(answer) => {
                tally.answered_by(&answer.backend);
                if answer.closing {
                    tally.closed_by_server.fetch_add(1, Ordering::Relaxed);
                    stream = None;
                }
            }
            Err(why) => {
                tally.fail(format!("keep-alive: {why}"));
                stream = None;
            }
        }
    }
}

/// A new connection for every request until `stop`.
pub async fn connection_per_request(connect: Connector, shape: Shape, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
    let deadline = Instant::now() + shape.limit;
    let mut pace = pacer(shape.pace);
    for _ in 0..shape.requests_per_client {
        pace.tick().await;
        if stop.load(Ordering::Relaxed) || Instant::now() > deadline {
            return;
        }
        let result = match connect().await {
            Ok(connected) => exchange(&mut BufReader::new(connected), &shape, true).await,
            Err(error) => Err(format!("connect: {error}")),
        };
        match result {
            Ok(answer) => tally.answered_by(&answer.backend),
            Err(why) => tally.fail(format!("new connection: {why}")),
        }
    }
}

/// Running load clients, stopped together.
pub struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    /// `keep_alive_clients` keep-alive clients and `per_request_clients` connection-per-request ones.
    pub fn start(
        connect: &Connector,
        shape: &Shape,
        tally: &Arc<Tally>,
        keep_alive_clients: usize,
        per_request_clients: usize,
    ) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for _ in 0..keep_alive_clients {
            tasks.push(tokio::spawn(keep_alive(connect.clone(), shape.clone(), tally.clone(), stop.clone())));
        }
        for _ in 0..per_request_clients {
            let task = connection_per_request(connect.clone(), shape.clone(), tally.clone(), stop.clone());
            tasks.push(tokio::spawn(task));
        }
        Load { stop, tasks }
    }

    pub async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.await.expect("load task");
        }
    }
}
