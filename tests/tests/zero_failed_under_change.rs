//! Zero failed requests while the world changes under a load: 1,000 route changes in a row (routes added,
//! changed and removed beside the one under load, and that route's own settings changed), and a pod taken out of
//! the EndpointSlice mid-load (its in-flight requests finish, new ones go to the other pod). The load is real
//! HTTP/1.1 from this process on loopback at a fixed rate (each of four clients one request per `PACE`: three
//! keep-alive connections and one connection per request), each request checked (status 200, the answer of a
//! pod of the route, the whole body), bounded in count and in time.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::manifests::{route, service, ManifestDir, RouteSpec};
use router_tests::{next_generation, start_router};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const HOST: &str = "steady.example.com";
/// Each load task stops after this many requests, or when told to, or at `LOAD_LIMIT`.
const REQUESTS_PER_TASK: u64 = 200_000;
const LOAD_LIMIT: Duration = Duration::from_secs(120);
/// One request per client per `PACE` (2,000 requests/s in all): a steady load that leaves CPU to the router
/// and to the tests running beside this one.
const PACE: Duration = Duration::from_millis(2);

fn pacer() -> tokio::time::Interval {
    let mut ticks = tokio::time::interval(PACE);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks
}

/// What the load saw.
#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    failed: AtomicU64,
    /// Requests answered by each pod, by name ("a", "b").
    by_a: AtomicU64,
    by_b: AtomicU64,
    first_failure: std::sync::Mutex<Option<String>>,
}

impl Tally {
    fn fail(&self, why: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let mut first = self.first_failure.lock().unwrap_or_else(|e| e.into_inner());
        first.get_or_insert(why);
    }

    fn answered_by(&self, pod: &str) {
        self.ok.fetch_add(1, Ordering::Relaxed);
        match pod {
            "a" => self.by_a.fetch_add(1, Ordering::Relaxed),
            _ => self.by_b.fetch_add(1, Ordering::Relaxed),
        };
    }

    fn summary(&self) -> String {
        format!(
            "ok {} failed {} (pod a {}, pod b {}); first failure: {:?}",
            self.ok.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
            self.by_a.load(Ordering::Relaxed),
            self.by_b.load(Ordering::Relaxed),
            self.first_failure.lock().unwrap_or_else(|e| e.into_inner()),
        )
    }
}

/// One GET on `stream`; the answering pod's name, or why the exchange failed.
async fn exchange(stream: &mut BufReader<TcpStream>, close: bool) -> Result<String, String> {
    let connection = if close { "close" } else { "keep-alive" };
    let request = format!("GET /load HTTP/1.1\r\nHost: {HOST}\r\nConnection: {connection}\r\n\r\n");
    stream.get_mut().write_all(request.as_bytes()).await.map_err(|e| format!("write: {e}"))?;
    let mut line = String::new();
    stream.read_line(&mut line).await.map_err(|e| format!("status line: {e}"))?;
    if !line.starts_with("HTTP/1.1 200 ") {
        return Err(format!("status line {line:?}"));
    }
    let (mut length, mut pod) = (None, None);
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
            "x-backend" => pod = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let length = length.ok_or("no content-length")?;
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.map_err(|e| format!("body: {e}"))?;
    match pod {
        Some(pod) if pod == "a" || pod == "b" => Ok(pod),
        other => Err(format!("answered by {other:?}")),
    }
}

/// Requests on one keep-alive connection (a new one only after a failure, which is counted) until `stop`.
async fn keep_alive_load(router: SocketAddr, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
    let deadline = Instant::now() + LOAD_LIMIT;
    let mut stream = None;
    let mut pace = pacer();
    for _ in 0..REQUESTS_PER_TASK {
        pace.tick().await;
        if stop.load(Ordering::Relaxed) || Instant::now() > deadline {
            return;
        }
        if stream.is_none() {
            match TcpStream::connect(router).await {
                Ok(connected) => stream = Some(BufReader::new(connected)),
                Err(error) => {
                    tally.fail(format!("connect: {error}"));
                    continue;
                }
            }
        }
        let Some(open) = stream.as_mut() else { continue };
        match exchange(open, false).await {
            Ok(pod) => tally.answered_by(&pod),
            Err(why) => {
                tally.fail(format!("keep-alive: {why}"));
                stream = None;
            }
        }
    }
}

/// A new connection for every request until `stop`.
async fn connection_per_request_load(router: SocketAddr, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
    let deadline = Instant::now() + LOAD_LIMIT;
    let mut pace = pacer();
    for _ in 0..REQUESTS_PER_TASK {
        pace.tick().await;
        if stop.load(Ordering::Relaxed) || Instant::now() > deadline {
            return;
        }
        let result = match TcpStream::connect(router).await {
            Ok(connected) => exchange(&mut BufReader::new(connected), true).await,
            Err(error) => Err(format!("connect: {error}")),
        };
        match result {
            Ok(pod) => tally.answered_by(&pod),
            Err(why) => tally.fail(format!("new connection: {why}")),
        }
    }
}

/// Three keep-alive connections and one connection-per-request client, until the returned flag is set.
fn start_load(router: SocketAddr, tally: &Arc<Tally>) -> (Arc<AtomicBool>, Vec<tokio::task::JoinHandle<()>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks: Vec<_> =
        (0..3).map(|_| tokio::spawn(keep_alive_load(router, tally.clone(), stop.clone()))).collect();
    tasks.push(tokio::spawn(connection_per_request_load(router, tally.clone(), stop.clone())));
    (stop, tasks)
}

async fn stop_load(stop: Arc<AtomicBool>, tasks: Vec<tokio::task::JoinHandle<()>>) {
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.expect("load task");
    }
}

/// Waits until the load has answered `n` more requests than now (it is running, not stuck).
async fn load_moves(tally: &Tally, n: u64) {
    let from = tally.ok.load(Ordering::Relaxed) + tally.failed.load(Ordering::Relaxed);
    router_tests::eventually("the load to move", Duration::from_secs(10), || {
        let now = tally.ok.load(Ordering::Relaxed) + tally.failed.load(Ordering::Relaxed);
        async move { (now >= from + n).then_some(()) }
    })
    .await;
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
    let (stop, tasks) = start_load(router.http_addr, &tally);
    load_moves(&tally, 100).await;

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
    load_moves(&tally, 100).await;
    stop_load(stop, tasks).await;
    eprintln!("{applied} route changes applied in {took:?} under load: {}", tally.summary());
    assert_eq!(tally.failed.load(Ordering::Relaxed), 0, "{}", tally.summary());
    assert!(tally.by_a.load(Ordering::Relaxed) > 0 && tally.by_b.load(Ordering::Relaxed) > 0, "{}", tally.summary());
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_taken_out_of_the_endpoints_under_load_fails_no_request_and_gets_no_new_ones() {
    let (a, b) = (TestBackend::start("a").await, TestBackend::start("b").await);
    let (dir, router) = serving(&[a.addr, b.addr]).await;
    let tally = Arc::new(Tally::default());
    let (stop, tasks) = start_load(router.http_addr, &tally);
    load_moves(&tally, 200).await;
    assert!(tally.by_b.load(Ordering::Relaxed) > 0, "both pods serve first: {}", tally.summary());

    let generation = router.table.load().generation;
    dir.write("web.yaml", &service("ns", "web", &[a.addr]));
    next_generation(&router, generation).await;
    // Requests already sent to b when the table changed finish there; from here on, none start there.
    load_moves(&tally, 50).await;
    let b_after_change = tally.by_b.load(Ordering::Relaxed);
    load_moves(&tally, 500).await;
    stop_load(stop, tasks).await;
    eprintln!("pod b removed under load: {}", tally.summary());
    assert_eq!(tally.failed.load(Ordering::Relaxed), 0, "{}", tally.summary());
    assert_eq!(tally.by_b.load(Ordering::Relaxed), b_after_change, "no new request reached b: {}", tally.summary());
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
    let (stop, tasks) = start_load(router.http_addr, &tally);
    load_moves(&tally, 200).await;
    // Killed with its connections open (the router's pooled ones among them) and still listed in the endpoints,
    // as a pod is for the seconds before its EndpointSlice changes: connects are refused, open connections reset.
    a.kill();
    load_moves(&tally, 1_000).await;
    stop_load(stop, tasks).await;
    eprintln!("pod a killed under load: {}", tally.summary());
    assert_eq!(tally.failed.load(Ordering::Relaxed), 0, "{}", tally.summary());
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
