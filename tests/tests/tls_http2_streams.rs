//! HTTP/2 streams over an edge route under the conditions of a load test and of real clients: many concurrent
//! streams on several connections, small flow-control windows, streams the client resets mid-body, response
//! bodies that last longer than the client timers, PINGs between requests, and GOAWAY on shutdown while
//! bodies are still streaming. Every stream must end with its whole body or with the reset its client asked
//! for; nothing else may break a stream or a connection.
//!
//! The pod is written here: `/bytes/<n>` answers n bytes of a known pattern, `/drip/<chunks>/<size>/<ms>`
//! streams `chunks` chunks of `size` pattern bytes `ms` apart, and every seventh response on a pod connection
//! says `Connection: close` and closes it (as nginx does after `keepalive_requests`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use router::config::Settings;
use router::server::RunningRouter;
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::TestCa;
use router_tests::start_tls_router;
use router_tests::tls_client::{client_config, negotiated_alpn, tls_connect, Trust};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

const HOST: &str = "streams.example.com";
/// Every this many responses, a pod connection is closed by the pod (`Connection: close`).
const POD_CLOSES_EVERY: usize = 7;
/// Upper bound on any one test's traffic.
const TEST_LIMIT: Duration = Duration::from_secs(60);

/// Byte `i` of every body the pod sends.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

fn pattern_bytes(from: usize, len: usize) -> Bytes {
    (from..from + len).map(pattern).collect::<Vec<u8>>().into()
}

/// The pod: an HTTP/1.1 server on 127.0.0.1 counting the requests it received.
struct Pod {
    addr: SocketAddr,
    requests: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Pod {
    async fn start() -> Pod {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind pod");
        let addr = listener.local_addr().expect("pod address");
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let counter = counter.clone();
                let served_here = Arc::new(AtomicUsize::new(0));
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        counter.fetch_add(1, Ordering::SeqCst);
                        let close = (served_here.fetch_add(1, Ordering::SeqCst) + 1).is_multiple_of(POD_CLOSES_EVERY);
                        answer(request, close)
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Pod { addr, requests, task }
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(request: Request<Incoming>, close: bool) -> Result<Response<PodBody>, Infallible> {
    let path = request.uri().path().to_string();
    let parts: Vec<usize> = path.split('/').skip(2).filter_map(|p| p.parse().ok()).collect();
    let (length, body) = match (path.split('/').nth(1), parts.as_slice()) {
        (Some("bytes"), [n]) => (*n, PodBody::whole(pattern_bytes(0, *n))),
        (Some("drip"), [chunks, size, ms]) => {
            (chunks * size, PodBody::drip(*chunks, *size, Duration::from_millis(*ms as u64)))
        }
        _ => (0, PodBody::whole(Bytes::new())),
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    if close {
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    Ok(response)
}

/// A pod response body: all at once, or chunk by chunk from a task.
struct PodBody {
    chunks: mpsc::Receiver<Bytes>,
}

impl PodBody {
    fn whole(bytes: Bytes) -> PodBody {
        let (tx, chunks) = mpsc::channel(1);
        if !bytes.is_empty() {
            let _ = tx.try_send(bytes);
        }
        PodBody { chunks }
    }

    fn drip(chunks: usize, size: usize, every: Duration) -> PodBody {
        let (tx, rx) = mpsc::channel(1);
        tokio::spawn(async move {
            for chunk in 0..chunks {
                if chunk > 0 {
                    tokio::time::sleep(every).await;
                }
                if tx.send(pattern_bytes(chunk * size, size)).await.is_err() {
                    return;
                }
            }
        });
        PodBody { chunks: rx }
    }
}

impl Body for PodBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.chunks.poll_recv(cx).map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

struct Fixture {
    pod: Pod,
    ca: TestCa,
    _dir: ManifestDir,
    router: RunningRouter,
    https: SocketAddr,
}

/// The pod behind an edge route with its own certificate (so the router offers h2), and the router.
async fn fixture(tune: impl FnOnce(&mut Settings)) -> Fixture {
    let pod = Pod::start().await;
    let ca = TestCa::new("streams-ca");
    let leaf = ca.leaf(&[HOST]);
    let dir = ManifestDir::new();
    let route = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "streams", HOST, "pod")
    };
    dir.write("all.yaml", &[service("ns", "pod", &[pod.addr]), route.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    tune(&mut settings);
    let (router, https) = start_tls_router(settings).await;
    Fixture { pod, ca, _dir: dir, router, https }
}

/// How the client side of a connection is set up.
#[derive(Clone, Copy, Default)]
struct ClientOptions {
    /// Initial stream and connection windows (bytes); hyper's defaults when `None`.
    windows: Option<(u32, u32)>,
    /// PING this often, also while no stream is open.
    ping_every: Option<Duration>,
}

/// An HTTP/2 connection to the router and the task driving it (its result says how the connection ended).
struct H2Connection {
    sender: SendRequest<Empty<Bytes>>,
    driver: JoinHandle<Result<(), hyper::Error>>,
}

async fn connect(fixture: &Fixture, options: ClientOptions) -> H2Connection {
    let config = client_config(Trust::Ca(&fixture.ca.cert_pem), &["h2"], None);
    let tls = tls_connect(fixture.https, Some(HOST), config).await.expect("TLS handshake");
    assert_eq!(negotiated_alpn(&tls).as_deref(), Some("h2"), "the router offers h2 with the route's certificate");
    let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
    builder.timer(TokioTimer::new());
    if let Some((stream, connection)) = options.windows {
        builder.initial_stream_window_size(stream).initial_connection_window_size(connection);
    }
    if let Some(every) = options.ping_every {
        builder.keep_alive_interval(every).keep_alive_timeout(Duration::from_secs(5)).keep_alive_while_idle(true);
    }
    let (sender, connection) = builder.handshake(TokioIo::new(tls)).await.expect("HTTP/2 handshake");
    H2Connection { sender, driver: tokio::spawn(connection) }
}

fn get(path: &str) -> Request<Empty<Bytes>> {
    Request::get(format!("https://{HOST}{path}")).body(Empty::new()).expect("request")
}

/// Sends GET `path` and reads the whole body; `Err` describes how the stream broke.
async fn fetch(mut sender: SendRequest<Empty<Bytes>>, path: String) -> Result<(StatusCode, Bytes), String> {
    let response = sender.send_request(get(&path)).await.map_err(|e| format!("{path}: response head: {e:?}"))?;
    let status = response.status();
    let body = response.into_body().collect().await.map_err(|e| format!("{path}: body: {e:?}"))?;
    Ok((status, body.to_bytes()))
}

/// `fetch` and check the body against the pattern.
async fn fetch_intact(sender: SendRequest<Empty<Bytes>>, path: String, length: usize) -> Result<(), String> {
    let (status, body) = fetch(sender, path.clone()).await?;
    if status != StatusCode::OK {
        return Err(format!("{path}: status {status}"));
    }
    if body.len() != length {
        return Err(format!("{path}: {} bytes instead of {length}", body.len()));
    }
    if body != pattern_bytes(0, length) {
        return Err(format!("{path}: body bytes differ from what the pod sent"));
    }
    Ok(())
}

/// Waits for every task; panics listing the streams that broke.
async fn expect_all_intact(tasks: Vec<JoinHandle<Result<(), String>>>) {
    let total = tasks.len();
    let mut broken = Vec::new();
    for task in tasks {
        if let Err(error) = task.await.expect("stream task") {
            broken.push(error);
        }
    }
    assert!(broken.is_empty(), "{} of {total} streams broke:\n{}", broken.len(), broken.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_streams_finish_intact_with_small_and_large_windows() {
    tokio::time::timeout(TEST_LIMIT, async {
        let fixture = fixture(|_| {}).await;
        let small = ClientOptions { windows: Some((4096, 16 * 1024)), ..ClientOptions::default() };
        let mut connections = Vec::new();
        for options in [small, ClientOptions::default(), small, ClientOptions::default()] {
            connections.push(connect(&fixture, options).await);
        }
        let sizes = [0, 100, 1354, 40_000, 300_000];
        for _round in 0..2 {
            let mut tasks = Vec::new();
            for connection in &connections {
                for i in 0..60 {
                    let length = sizes[i % sizes.len()];
                    let sender = connection.sender.clone();
                    tasks.push(tokio::spawn(fetch_intact(sender, format!("/bytes/{length}?{i}"), length)));
                }
            }
            expect_all_intact(tasks).await;
        }
        assert!(fixture.pod.requests.load(Ordering::SeqCst) >= 480, "every stream reached the pod");
        for connection in connections {
            if connection.driver.is_finished() {
                panic!("a connection ended under load: {:?}", connection.driver.await);
            }
        }
        fixture.router.shutdown().await;
    })
    .await
    .expect("test within its time limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_reset_by_the_client_leave_the_others_and_the_connection_working() {
    tokio::time::timeout(TEST_LIMIT, async {
        let fixture = fixture(|_| {}).await;
        let connection =
            connect(&fixture, ClientOptions { windows: Some((8192, 32 * 1024)), ..Default::default() }).await;
        const LENGTH: usize = 1_000_000;
        let mut tasks = Vec::new();
        for i in 0..30 {
            let mut sender = connection.sender.clone();
            let path = format!("/bytes/{LENGTH}?{i}");
            tasks.push(tokio::spawn(async move {
                if i % 2 == 1 {
                    return fetch_intact(sender, path, LENGTH).await;
                }
                // Take the head and a first piece of the body, then drop the stream: RST_STREAM(CANCEL).
                let response = sender.send_request(get(&path)).await.map_err(|e| format!("{path}: head: {e:?}"))?;
                let mut body = response.into_body();
                match body.frame().await {
                    Some(Ok(_)) => Ok(()),
                    other => Err(format!("{path}: first frame: {other:?}")),
                }
            }));
        }
        expect_all_intact(tasks).await;
        // The connection carries new streams after the resets.
        let tasks = (0..10)
            .map(|i| tokio::spawn(fetch_intact(connection.sender.clone(), format!("/bytes/5000?after{i}"), 5000)))
            .collect();
        expect_all_intact(tasks).await;
        fixture.router.shutdown().await;
    })
    .await
    .expect("test within its time limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_bodies_longer_than_the_client_timers_are_not_cut() {
    tokio::time::timeout(TEST_LIMIT, async {
        // Client timers far shorter than the bodies: they are for a client that sends nothing, not for
        // streams the router is still answering.
        let fixture = fixture(|settings| {
            settings.http_request_timeout = Duration::from_millis(300);
            settings.routing.keep_alive_timeout = Duration::from_millis(600);
        })
        .await;
        // A small window: the client sends WINDOW_UPDATEs while the bodies come.
        let connection =
            connect(&fixture, ClientOptions { windows: Some((16 * 1024, 64 * 1024)), ..Default::default() }).await;
        let tasks = (0..3)
            .map(|i| {
                tokio::spawn(fetch_intact(connection.sender.clone(), format!("/drip/20/16384/100?{i}"), 20 * 16384))
            })
            .collect();
        expect_all_intact(tasks).await;
        fixture.router.shutdown().await;
    })
    .await
    .expect("test within its time limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_between_requests_do_not_start_the_request_head_timer() {
    tokio::time::timeout(TEST_LIMIT, async {
        let fixture = fixture(|settings| {
            settings.http_request_timeout = Duration::from_millis(300);
            settings.routing.keep_alive_timeout = Duration::from_secs(5);
        })
        .await;
        let connection =
            connect(&fixture, ClientOptions { ping_every: Some(Duration::from_millis(100)), ..Default::default() })
                .await;
        fetch_intact(connection.sender.clone(), "/bytes/100?first".into(), 100).await.expect("first request");
        // Idle, with PINGs, for longer than the request head timeout and shorter than the keep-alive timeout.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        if connection.driver.is_finished() {
            panic!("the idle connection was closed: {:?}", connection.driver.await);
        }
        fetch_intact(connection.sender.clone(), "/bytes/100?second".into(), 100).await.expect("second request");
        fixture.router.shutdown().await;
    })
    .await
    .expect("test within its time limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_sends_goaway_and_streams_in_flight_finish() {
    tokio::time::timeout(TEST_LIMIT, async {
        let fixture = fixture(|_| {}).await;
        let connection = connect(&fixture, ClientOptions::default()).await;
        const STREAMS: usize = 8;
        const LENGTH: usize = 20 * 8192;
        // Every stream has its response head before the shutdown begins; the bodies take 2 s more.
        let mut heads = Vec::new();
        for i in 0..STREAMS {
            let mut sender = connection.sender.clone();
            heads.push(tokio::spawn(async move { sender.send_request(get(&format!("/drip/20/8192/100?{i}"))).await }));
        }
        let mut bodies = Vec::new();
        for head in heads {
            let response = head.await.expect("task").expect("response head before shutdown");
            assert_eq!(response.status(), StatusCode::OK);
            bodies.push(tokio::spawn(async move {
                let body = response.into_body().collect().await.map_err(|e| format!("body: {e:?}"))?.to_bytes();
                if body.len() != LENGTH || body != pattern_bytes(0, LENGTH) {
                    return Err(format!("{} bytes instead of {LENGTH} intact ones", body.len()));
                }
                Ok(())
            }));
        }
        let Fixture { pod: _pod, _dir: _manifests, router, .. } = fixture;
        let shutdown = tokio::spawn(router.shutdown());
        // GOAWAY: the connection takes no new stream.
        let mut sender = connection.sender.clone();
        let refused = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                if sender.ready().await.is_err() {
                    return;
                }
                if sender.send_request(get("/bytes/10?late")).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(refused.is_ok(), "a new stream was still served after the shutdown began");
        // ...and the streams in flight end with their whole bodies.
        expect_all_intact(bodies).await;
        shutdown.await.expect("router shutdown");
        let ended = connection.driver.await.expect("connection task");
        assert!(ended.is_ok(), "the connection ended with an error: {ended:?}");
    })
    .await
    .expect("test within its time limit");
}
