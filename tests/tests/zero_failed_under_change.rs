//! Zero failed requests while the world changes under a load: 1,000 route changes in a row (routes added,
//! changed and removed beside the one under load, and that route's own settings changed), and a pod taken out of
//! the EndpointSlice mid-load (its in-flight requests finish, new ones go to the other pod). The load is real
//! HTTP/1.1 from this process on loopback at a fixed rate (each of four clients one request per `PACE`: three
//! keep-alive connections and one connection per request), each request checked (status 200, the answer of a
//! pod of the route, the whole body), bounded in count and in time.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::load::{self, Load, Shape, Tally};
use router_tests::manifests::{route, service, ManifestDir, RouteSpec};
use router_tests::{next_generation, start_router};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const HOST: &str = "steady.example.com";

/// Three keep-alive connections and one connection-per-request client, each one request per 2 ms (2,000
/// requests/s in all: a steady load that leaves CPU to the router and to the tests running beside this one),
/// each stopping after 200,000 requests or 120 s.
fn start_load(router: SocketAddr, tally: &Arc<Tally>) -> Load {
    let shape = Shape {
        host: HOST.into(),
        path: "/load".into(),
        backends: vec!["a".into(), "b".into()],
        pace: Duration::from_millis(2),
        requests_per_client: 200_000,
        limit: Duration::from_secs(120),
    };
    Load::start(&load::tcp(router), &shape, tally, 3, 1)
}

/// The steady route with a server timeout that differs for every `change` (a change of the route under load that
/// keeps it serving).
fn steady_route(change: usize) -> String {
    let timeout = format!("{}s", 30 + change);
    let annotations = [("haproxy.router.openshift.io/timeout", timeout.as_str())];
    RouteSpec { annotations: &annotations, ..RouteSpec::new("ns", "steady", HOST, "web") }.yaml()
}

/// A router serving the steady route with `pods` behind its service; the manifest directory stays changeable.
async fn serving(pods: &[SocketAddr]) -> (ManifestDir, RunningRouter) {
    let dir = ManifestDir::new();
    dir.write("web.yaml", &service("ns", "web", pods));
    dir.write("steady.yaml", &steady_route(0));
    let router = start_router(dir.path()).await;
    (dir, router)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_route_changes_under_load_fail_no_request() {
    let (a, b) = (TestBackend::start("a").await, TestBackend::start("b").await);
    let (dir, router) = serving(&[a.addr, b.addr]).await;
    let tally = Arc::new(Tally::default());
    let load = start_load(router.http_addr, &tally);
    tally.moves(100).await;

    let started = Instant::now();
    let mut generation = router.table.load().generation;
    let mut applied = 0;
    for change in 0..1_000usize {
        // Fifty other routes' files, each added, then changed (another path), then removed, in turn; every tenth
        // change is the route under load itself.
        // (Slots 9, 19, ... are always the steady route's turn, so the others cycle whole.)
        let slot = change % 50;
        let (file, name, host) =
            (format!("other-{slot}.yaml"), format!("other-{slot}"), format!("o{slot}.example.com"));
        if change % 10 == 9 {
            dir.write("steady.yaml", &steady_route(change));
        } else {
            match (change / 50) % 3 {
                0 => _ = dir.write(&file, &route("ns", &name, &host, "/", "web")),
                1 => _ = dir.write(&file, &route("ns", &name, &host, "/v2", "web")),
                _ => dir.remove(&file),
            }
        }
        generation = next_generation(&router, generation).await;
        applied += 1;
    }
    let took = started.elapsed();
    tally.moves(100).await;
    load.stop().await;
    eprintln!("{applied} route changes applied in {took:?} under load: {}", tally.summary());
    assert_eq!(tally.failed(), 0, "{}", tally.summary());
    assert!(tally.by("a") > 0 && tally.by("b") > 0, "{}", tally.summary());
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_taken_out_of_the_endpoints_under_load_fails_no_request_and_gets_no_new_ones() {
    let (a, b) = (TestBackend::start("a").await, TestBackend::start("b").await);
    let (dir, router) = serving(&[a.addr, b.addr]).await;
    let tally = Arc::new(Tally::default());
    let load = start_load(router.http_addr, &tally);
    tally.moves(200).await;
    assert!(tally.by("b") > 0, "both pods serve first: {}", tally.summary());

    let generation = router.table.load().generation;
    dir.write("web.yaml", &service("ns", "web", &[a.addr]));
    next_generation(&router, generation).await;
    // Requests already sent to b when the table changed finish there; from here on, none start there.
    tally.moves(50).await;
    let b_after_change = tally.by("b");
    tally.moves(500).await;
    load.stop().await;
    eprintln!("pod b removed under load: {}", tally.summary());
    assert_eq!(tally.failed(), 0, "{}", tally.summary());
    assert_eq!(tally.by("b"), b_after_change, "no new request reached b: {}", tally.summary());
    router.shutdown().await;
}

/// A `test-backend` process serving pod `name` on a free loopback port; killed (SIGKILL) on `kill` or drop.
struct PodProcess(std::process::Child, SocketAddr);

impl PodProcess {
    fn start(name: &str) -> PodProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
        let child = std::process::Command::new(router_tests::binaries::test_backend_binary())
            .arg(format!("{name}={addr}"))
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start test-backend");
        PodProcess(child, addr)
    }

    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for PodProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_killed_under_load_fails_no_request() {
    let (mut a, b) = (PodProcess::start("a"), PodProcess::start("b"));
    let (_dir, router) = serving(&[a.1, b.1]).await;
    router_tests::eventually("both pods listening", Duration::from_secs(10), || async {
        let up = TcpStream::connect(a.1).await.is_ok() && TcpStream::connect(b.1).await.is_ok();
        up.then_some(())
    })
    .await;
    let tally = Arc::new(Tally::default());
    let load = start_load(router.http_addr, &tally);
    tally.moves(200).await;
    // Killed with its connections open (the router's pooled ones among them) and still listed in the endpoints,
    // as a pod is for the seconds before its EndpointSlice changes: connects are refused, open connections reset.
    a.kill();
    tally.moves(1_000).await;
    load.stop().await;
    eprintln!("pod a killed under load: {}", tally.summary());
    assert_eq!(tally.failed(), 0, "{}", tally.summary());
    router.shutdown().await;
}

/// A pod that reads each request head and closes the connection without answering (as a pod killed while the
/// request was on its way does), counting the requests it read.
async fn closing_pod() -> (SocketAddr, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let read = Arc::new(AtomicU64::new(0));
    let counter = read.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                let mut line = String::new();
                while stream.read_line(&mut line).await.is_ok_and(|n| n > 0) && line != "\r\n" {
                    line.clear();
                }
                counter.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    (addr, read)
}

/// One request on a new connection; its status code.
async fn status_of(router: SocketAddr, method: &str) -> u16 {
    let mut stream = TcpStream::connect(router).await.expect("connect to the router");
    let request = format!("{method} /once HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer).await;
    answer.get(9..12).and_then(|code| code.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_a_pod_closes_unanswered_goes_to_another_pod_when_idempotent() {
    let b = TestBackend::start("b").await;
    let (closer, closer_read) = closing_pod().await;
    let (_dir, router) = serving(&[closer, b.addr]).await;

    let mut gets = Vec::new();
    for _ in 0..20 {
        gets.push(status_of(router.http_addr, "GET").await);
    }
    assert!(closer_read.load(Ordering::Relaxed) > 0, "the closing pod was picked");
    assert!(gets.iter().all(|&status| status == 200), "every GET answered by the other pod: {gets:?}");

    // A POST may have done something at the pod before it went away: never sent twice, a 502 instead.
    let before = closer_read.load(Ordering::Relaxed);
    let mut posts = Vec::new();
    for _ in 0..20 {
        posts.push(status_of(router.http_addr, "POST").await);
    }
    let closed = closer_read.load(Ordering::Relaxed) - before;
    assert!(closed > 0, "the closing pod was picked for a POST");
    assert_eq!(posts.iter().filter(|&&status| status == 502).count() as u64, closed, "{posts:?}");
    assert!(posts.iter().all(|&status| status == 200 || status == 502), "{posts:?}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_fails_readiness_first_serves_through_the_delay_and_cuts_nothing_in_flight() {
    let (a, b) = (TestBackend::start("a").await, TestBackend::start("b").await);
    let dir = ManifestDir::new();
    dir.write("web.yaml", &service("ns", "web", &[a.addr, b.addr]));
    dir.write("steady.yaml", &steady_route(0));
    let mut settings = router::config::Settings::for_loopback(dir.path());
    settings.graceful_shutdown_delay = Duration::from_secs(2);
    let router = router_tests::start_router_with(settings).await;
    let (http, stats) = (router.http_addr, router.stats_addr);
    let tally = Arc::new(Tally::default());
    let load = start_load(http, &tally);
    tally.moves(200).await;
    // Requests that outlast the delay: in flight when the listeners close.
    let slow: Vec<_> = (0..4)
        .map(|_| tokio::spawn(async move { router_tests::client::get(http, HOST, "/slow/3000").await }))
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;

    let readiness = router.readiness.clone();
    let stopping = tokio::spawn(router.shutdown());
    router_tests::eventually("readiness failing", Duration::from_secs(1), || {
        let reason = readiness.not_ready_reason();
        async move { (reason == Some("shutting down")).then_some(()) }
    })
    .await;
    let probe = router_tests::client::get(stats, "probe", "/healthz/ready").await;
    assert_eq!(probe.status, 503, "the load balancer's probe fails first");
    // The delay: everything is still served while the load balancer takes the node out.
    tally.moves(500).await;
    load.stop().await;
    eprintln!("SIGTERM with a 2 s graceful delay under load: {}", tally.summary());
    assert_eq!(tally.failed(), 0, "{}", tally.summary());
    for request in slow {
        let reply = request.await.expect("slow request");
        assert_eq!(reply.status, 200, "a request in flight when the listeners closed completes");
    }
    tokio::time::timeout(Duration::from_secs(10), stopping).await.expect("stopped").expect("task");
    assert!(TcpStream::connect(http).await.is_err(), "the listener is closed");
}
