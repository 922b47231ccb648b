//! Hostile clients beside a normal load, the router as its own process: 4,000 slowloris connections (a request
//! head dribbled a byte at a time) and 4,000 clients that ask for a 1 MiB answer and never read it, while a
//! fixed-rate load of keep-alive and per-request clients runs. The load gets every answer; the router closes
//! each slowloris connection at ROUTER_SLOWLORIS_TIMEOUT; its memory stays bounded per hostile connection (the
//! answers wait in the kernel's socket buffers and the pod is held back, nothing piles up in the router; the
//! figure is printed). The router runs inside a memory cgroup with a 2 GiB limit that never kills it (the
//! cgroup also pays for the socket buffers holding the unread answers: its peak is printed; the DaemonSet
//! requests 256 MiB and sets no limit, which must leave room for the route table: 0.8 GB at 100,000 routes).
//! An idle flood (connections that send nothing, three times ROUTER_MAX_CONNECTIONS) is held at the limit, the
//! rest waiting in the listen backlog as HAProxy's `maxconn` leaves them; each is ended at the head timeout,
//! and a client queued behind the flood is served once its turn comes.
//! 10,000 of each would need more descriptors than this machine's hard limit (20,000) gives one process: each
//! non-reader holds a client and a pod connection in the router.

use std::net::SocketAddr;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use router_tests::backend::TestBackend;
use router_tests::binaries::router_binary;
use router_tests::load::{self, Load, Shape, Tally};
use router_tests::manifests::{route, service, ManifestDir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const HOST: &str = "plain.example.com";
const BIG: &str = "big.example.com";
const SLOWLORIS: usize = 4_000;
const NON_READERS: usize = 4_000;
/// The answer of the pod behind `BIG`.
const BIG_BODY: usize = 1 << 20;
/// The router's slowloris timeout in this test (the default is 10 s).
const HEAD_TIMEOUT: Duration = Duration::from_secs(3);
/// The ceiling this test holds the router to, on average per hostile connection (half of them hold nothing but
/// a head): a few chunks of each stalled answer, never the answers themselves (4,000 whole answers would be
/// 512 KiB on average). Measured in a debug build: 32 to 53 KB on an idle machine, 85 to 131 KB with the other
/// tests running beside it (the router then reads more of each answer from its pod before the client's
/// buffers are seen full).
const BYTES_PER_CONNECTION_LIMIT: u64 = 256 << 10;

/// The router's memory limit in this test.
const MEMORY_LIMIT: u64 = 2 << 30;

/// A memory cgroup (v1, as this machine mounts it) below this process's own, removed when dropped.
struct MemoryCgroup(std::path::PathBuf);

impl MemoryCgroup {
    fn create(limit: u64) -> MemoryCgroup {
        let own = std::fs::read_to_string("/proc/self/cgroup").expect("/proc/self/cgroup");
        let path = own.lines().find_map(|line| line.split_once(":memory:").map(|(_, path)| path.to_owned()));
        let path = path.expect("a v1 memory cgroup (this machine's kind mounts one)");
        let dir = std::path::Path::new("/sys/fs/cgroup/memory")
            .join(path.trim_start_matches('/'))
            .join(format!("router-hostile-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("create the memory cgroup");
        std::fs::write(dir.join("memory.limit_in_bytes"), limit.to_string()).expect("set its limit");
        MemoryCgroup(dir)
    }

    fn add(&self, pid: u32) {
        std::fs::write(self.0.join("cgroup.procs"), pid.to_string()).expect("move the router into the cgroup");
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.0.join(file)).unwrap_or_default()
    }

    /// Processes the kernel's OOM killer ended in this cgroup.
    fn oom_kills(&self) -> u64 {
        let control = self.read("memory.oom_control");
        control.lines().find_map(|line| line.strip_prefix("oom_kill ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// The router binary as its own process, with its HTTP and admin addresses on loopback.
struct RouterProcess {
    child: Child,
    http: SocketAddr,
    stats: SocketAddr,
}

impl RouterProcess {
    /// Serves `dir`'s manifests with the test's head timeout and `env`, inside a new memory cgroup of
    /// `MEMORY_LIMIT`.
    fn start(dir: &ManifestDir, env: &[(&str, &str)]) -> (RouterProcess, MemoryCgroup) {
        let (http, stats) = (free_port(), free_port());
        let child = Command::new(router_binary())
            .args(["--manifests", &dir.path().display().to_string(), "--allow-loopback-endpoints"])
            .args(["--listen-addr", "127.0.0.1", "--http-port", &http.to_string(), "--https-port", "0"])
            .args(["--stats-port", &stats.to_string()])
            .env("ROUTER_SLOWLORIS_TIMEOUT", format!("{}s", HEAD_TIMEOUT.as_secs()))
            .envs(env.iter().copied())
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("start the router");
        let cgroup = MemoryCgroup::create(MEMORY_LIMIT);
        cgroup.add(child.id());
        let loopback = |port| SocketAddr::from(([127, 0, 0, 1], port));
        (RouterProcess { child, http: loopback(http), stats: loopback(stats) }, cgroup)
    }

    /// The value of an unlabelled series on the admin port's /metrics.
    async fn metric(&self, name: &str) -> f64 {
        let text = router_tests::client::get(self.stats, "admin", "/metrics").await.body;
        text.lines()
            .find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
    }
}

/// One request on a new connection; `Some` when it is answered 200.
async fn one_request(addr: SocketAddr) -> Option<()> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    let request = format!("GET / HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.ok()?;
    answer.starts_with(b"HTTP/1.1 200").then_some(())
}

impl Drop for RouterProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("router status");
    let kb = status.lines().find_map(|line| line.strip_prefix("VmRSS:")).expect("VmRSS");
    kb.trim().trim_end_matches("kB").trim().parse::<u64>().expect("RSS in kB") * 1024
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port()
}

/// Raises this process's descriptor limit to its hard limit (the router inherits it).
fn raise_descriptor_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local rlimit.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
    limit.rlim_cur
}

/// A request head dribbled one byte per 500 ms; returns how long the router took to end the connection.
async fn slowloris(addr: SocketAddr, closed: Arc<AtomicU64>) -> Option<Duration> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    let opened = Instant::now();
    stream.write_all(format!("GET / HTTP/1.1\r\nHost: {HOST}\r\nX-Slow: ").as_bytes()).await.ok()?;
    let mut buffer = [0u8; 512];
    loop {
        tokio::select! {
            read = stream.read(&mut buffer) => {
                // An answer (408) or the close: the router ended it.
                let _ = read;
                closed.fetch_add(1, Ordering::Relaxed);
                return Some(opened.elapsed());
            }
            _ = tokio::time::sleep(Duration::from_millis(500)) => {
                if stream.write_all(b"a").await.is_err() {
                    closed.fetch_add(1, Ordering::Relaxed);
                    return Some(opened.elapsed());
                }
                if opened.elapsed() > HEAD_TIMEOUT * 4 {
                    return None;
                }
            }
        }
    }
}

/// Asks for the big answer and never reads it; holds the connection until `hold` ends.
async fn non_reader(addr: SocketAddr, hold: Duration) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr).await else { return false };
    let sent = stream.write_all(format!("GET /big HTTP/1.1\r\nHost: {BIG}\r\n\r\n").as_bytes()).await;
    tokio::time::sleep(hold).await;
    drop(stream);
    sent.is_ok()
}

/// A pod that answers every request with `BIG_BODY` bytes, writing as fast as its reader takes them.
async fn big_pod() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if !matches!(stream.read(&mut byte).await, Ok(1)) {
                        return;
                    }
                    head.push(byte[0]);
                }
                let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {BIG_BODY}\r\nX-Backend: big\r\n\r\n");
                if stream.write_all(answer.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = vec![0u8; 64 << 10];
                for _ in 0..BIG_BODY / chunk.len() {
                    if stream.write_all(&chunk).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_and_non_readers_beside_a_load_fail_no_request_and_stay_bounded() {
    let limit = raise_descriptor_limit();
    assert!(limit >= (SLOWLORIS + NON_READERS + 1_000) as u64, "descriptor limit {limit} too low for this test");
    let web = TestBackend::start("web").await;
    let big = big_pod().await;
    let dir = ManifestDir::new();
    dir.write("web.yaml", &[service("ns", "web", &[web.addr]), route("ns", "web", HOST, "/", "web")].concat());
    dir.write("big.yaml", &[service("ns", "big", &[big]), route("ns", "big", BIG, "/", "big")].concat());
    let (mut router, cgroup) = RouterProcess::start(&dir, &[]);
    let (pid, addr) = (router.child.id(), router.http);

    let tally = Arc::new(Tally::default());
    let shape = Shape {
        host: HOST.into(),
        path: "/load".into(),
        backends: vec!["web".into()],
        pace: Duration::from_millis(5),
        requests_per_client: 20_000,
        limit: Duration::from_secs(90),
    };
    router_tests::eventually("the router serving", Duration::from_secs(30), || one_request(addr)).await;
    let load = Load::start(&load::tcp(addr), &shape, &tally, 2, 1);
    tally.moves(200).await;
    let idle_rss = rss_bytes(pid);

    // The hostile clients get a runtime of their own: on the load's, a load client's request could wait
    // seconds behind thousands of their tasks after its connection opened, and meet the router's head timer
    // (a 408 the router rightly gives, counted against the load).
    let hostile = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let closed = Arc::new(AtomicU64::new(0));
    let slow: Vec<_> = (0..SLOWLORIS).map(|_| hostile.spawn(slowloris(addr, closed.clone()))).collect();
    let hold = HEAD_TIMEOUT * 2;
    let readers: Vec<_> = (0..NON_READERS).map(|_| hostile.spawn(non_reader(addr, hold))).collect();
    // All hostile connections open, the non-readers' bursts written (or stuck in full buffers). The load must
    // go on; 30 s for its 200 requests, as this process's own 8,000 connections and the debug router share
    // two cores with whatever tests run beside (10 s was once too short in a whole-suite run: 44 answered,
    // none failed).
    tokio::time::sleep(HEAD_TIMEOUT / 2).await;
    tally.moves_within(200, Duration::from_secs(30)).await;
    let loaded_rss = rss_bytes(pid);

    let mut ended = Vec::new();
    for task in slow {
        ended.push(task.await.expect("slowloris task"));
    }
    let mut asked = 0;
    for task in readers {
        asked += usize::from(task.await.expect("non-reader task"));
    }
    hostile.shutdown_background();
    tally.moves(200).await;
    load.stop().await;

    let per_connection = loaded_rss.saturating_sub(idle_rss) / (SLOWLORIS + NON_READERS) as u64;
    let peak: u64 = cgroup.read("memory.max_usage_in_bytes").trim().parse().unwrap_or(0);
    assert!(router.child.try_wait().expect("poll the router").is_none(), "the router is alive");
    assert_eq!(cgroup.oom_kills(), 0, "never OOM-killed under its {} MiB limit", MEMORY_LIMIT >> 20);
    let slowest = ended.iter().flatten().max().copied().unwrap_or_default();
    eprintln!(
        "FIGURE: {SLOWLORIS} slowloris + {NON_READERS} non-readers of a 1 MiB answer ({asked} asked): load {}; \
         router RSS {} MiB idle, {} MiB with them: {per_connection} bytes per hostile connection; \
         slowloris connections closed {} of {SLOWLORIS}, the last after {slowest:?}; memory cgroup peak {} MiB of {} MiB",
        tally.summary(),
        idle_rss >> 20,
        loaded_rss >> 20,
        closed.load(Ordering::Relaxed),
        peak >> 20,
        MEMORY_LIMIT >> 20,
    );
    assert_eq!(tally.failed(), 0, "the load beside them: {}", tally.summary());
    // Each gives up after 4 times the head timeout: none had to.
    assert!(ended.iter().all(Option::is_some), "every slowloris connection was ended by the router");
    assert!(per_connection < BYTES_PER_CONNECTION_LIMIT, "{per_connection} bytes per hostile connection");
    drop(router);
    drop(cgroup);
}

/// An idle connection: opened, nothing sent; returns how long until the router ended it (`None`: it never did
/// within `give_up`).
async fn idle(addr: SocketAddr, give_up: Duration) -> Option<Duration> {
    let opened = Instant::now();
    let mut stream = TcpStream::connect(addr).await.ok()?;
    let mut buffer = [0u8; 512];
    loop {
        match tokio::time::timeout(give_up.saturating_sub(opened.elapsed()), stream.read(&mut buffer)).await {
            Ok(Ok(0) | Err(_)) => return Some(opened.elapsed()),
            Ok(Ok(_)) => continue,
            Err(_) => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_flood_is_held_at_max_connections_and_a_client_behind_it_is_served() {
    const MAX_CONNECTIONS: usize = 1_000;
    // Three times the limit: the rest wait in the listen backlog (the kernel completes their handshakes).
    const FLOOD: usize = 3_000;
    let limit = raise_descriptor_limit();
    assert!(limit >= (FLOOD + 1_000) as u64, "descriptor limit {limit} too low for this test");
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    dir.write("web.yaml", &[service("ns", "web", &[web.addr]), route("ns", "web", HOST, "/", "web")].concat());
    let max = MAX_CONNECTIONS.to_string();
    let (mut router, cgroup) = RouterProcess::start(&dir, &[("ROUTER_MAX_CONNECTIONS", &max)]);
    let (pid, addr) = (router.child.id(), router.http);
    router_tests::eventually("the router serving", Duration::from_secs(30), || one_request(addr)).await;
    let idle_rss = rss_bytes(pid);

    // Each flood connection is ended by the router once accepted and idle for the head timeout: the flood drains
    // in waves of MAX_CONNECTIONS, FLOOD / MAX_CONNECTIONS head timeouts in all.
    let give_up = HEAD_TIMEOUT * (FLOOD / MAX_CONNECTIONS + 3) as u32;
    let flood: Vec<_> = (0..FLOOD).map(|_| tokio::spawn(idle(addr, give_up))).collect();
    router_tests::eventually("the router holding the limit", Duration::from_secs(10), || async {
        let open = router.metric("router_client_connections").await;
        (open >= MAX_CONNECTIONS as f64).then_some(())
    })
    .await;
    let held = router.metric("router_client_connections").await;
    let flooded_rss = rss_bytes(pid);
    // A client behind the flood: it waits in the backlog for the flood ahead of it, and is then served.
    let queued = Instant::now();
    let behind = tokio::spawn(async move { tokio::time::timeout(give_up, one_request(addr)).await.ok().flatten() });
    tokio::time::sleep(HEAD_TIMEOUT / 2).await;
    let still_held = router.metric("router_client_connections").await;
    let waits = router.metric("router_connection_limit_waits_total").await;

    let served = behind.await.expect("client task");
    let waited = queued.elapsed();
    let mut ended = Vec::new();
    for task in flood {
        ended.push(task.await.expect("flood task"));
    }
    let per_connection = flooded_rss.saturating_sub(idle_rss) / MAX_CONNECTIONS as u64;
    let slowest = ended.iter().flatten().max().copied().unwrap_or_default();
    eprintln!(
        "FIGURE: an idle flood of {FLOOD} connections at ROUTER_MAX_CONNECTIONS={MAX_CONNECTIONS}: {held} then \
         {still_held} open in the router ({waits} waits counted); router RSS {} MiB idle, {} MiB flooded: \
         {per_connection} bytes per idle connection; a client behind the flood served after {waited:?}; flood \
         connections ended by the router {} of {FLOOD}, the last after {slowest:?}; memory cgroup peak {} MiB",
        idle_rss >> 20,
        flooded_rss >> 20,
        ended.iter().flatten().count(),
        cgroup.read("memory.max_usage_in_bytes").trim().parse::<u64>().unwrap_or(0) >> 20,
    );
    assert_eq!(held, MAX_CONNECTIONS as f64, "the router holds exactly ROUTER_MAX_CONNECTIONS");
    assert_eq!(still_held, MAX_CONNECTIONS as f64, "and never more while the flood lasts");
    assert!(waits >= 1.0, "connections waiting for a slot are counted");
    assert!(served.is_some(), "the client behind the flood is served once the idle connections time out");
    assert!(ended.iter().all(Option::is_some), "the router ends every idle connection at its head timeout");
    assert!(router.child.try_wait().expect("poll the router").is_none(), "the router is alive");
    assert_eq!(cgroup.oom_kills(), 0, "never OOM-killed");
    drop(router);
    drop(cgroup);
}
