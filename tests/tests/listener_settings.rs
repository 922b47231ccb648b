//! How the client listeners are bound, with real clients: ROUTER_BIND_PORTS_AFTER_SYNC keeps :80 closed
//! (connections refused) while the source has not delivered its first complete state, the admin port
//! answering `/healthz` and a failing `/healthz/ready` meanwhile; ROUTER_IP_V4_V6_MODE binds the wildcard
//! listeners for IPv4, IPv6 only, or both on one port. (These listeners bind the wildcard address; every
//! connection goes to 127.0.0.1 or ::1.)

use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use router::config::Settings;
use router::listen::IpMode;
use router_tests::backend::TestBackend;
use router_tests::client::get;
use router_tests::eventually;
use router_tests::manifests::{route, service, ManifestDir};
use tokio::net::TcpStream;

const HOST: &str = "bind.example.com";

/// A port free on 127.0.0.1 a moment ago.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

async fn refused(addr: SocketAddr) -> bool {
    matches!(TcpStream::connect(addr).await, Err(error) if error.kind() == ErrorKind::ConnectionRefused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_port_opens_only_after_the_first_complete_sync() {
    let backend = TestBackend::start("late").await;
    let dir = ManifestDir::new();
    // The source's path does not exist yet: no complete state, as with an API server that has not answered.
    let manifests = dir.path().join("later");
    let (http_port, stats_port) = (free_port(), free_port());
    let mut settings = Settings::for_loopback(&manifests);
    settings.http_port = http_port;
    settings.stats_port = stats_port;
    settings.listeners.bind_ports_after_sync = true;
    let starting = tokio::spawn(router::server::start(settings));

    let localhost = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let (http_addr, stats_addr) = (SocketAddr::new(localhost, http_port), SocketAddr::new(localhost, stats_port));
    let not_ready = eventually("the admin port answering", Duration::from_secs(10), || async {
        let ready = TcpStream::connect(stats_addr).await.is_ok();
        if !ready {
            return None;
        }
        Some(get(stats_addr, "localhost", "/healthz/ready").await)
    })
    .await;
    assert_eq!(not_ready.status, 503, "not ready before the first sync: {}", not_ready.body);
    assert_eq!(get(stats_addr, "localhost", "/healthz").await.status, 200, "the process is alive");
    for _ in 0..5 {
        assert!(refused(http_addr).await, ":80 is not bound before the first sync");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!starting.is_finished());

    // The state arrives: the port opens and the route serves.
    std::fs::create_dir(&manifests).expect("create the manifest directory");
    let yaml = [service("ns", "late", &[backend.addr]), route("ns", "late", HOST, "/", "late")].concat();
    std::fs::write(manifests.join("late.yaml"), yaml).expect("write manifests");
    let router = tokio::time::timeout(Duration::from_secs(15), starting)
        .await
        .expect("the ports are bound after the first sync")
        .expect("start task")
        .expect("router starts");
    assert_eq!(router.http_addr.port(), http_port);
    assert_eq!(get(http_addr, HOST, "/").await.backend(), "late");
    assert_eq!(get(stats_addr, "localhost", "/healthz/ready").await.status, 200);
    router.shutdown().await;
}

/// Starts a router on the wildcard address in `mode` and returns it with the port of its :80 listener.
async fn wildcard_router(mode: IpMode, backend: &TestBackend) -> (ManifestDir, router::server::RunningRouter, u16) {
    let dir = ManifestDir::new();
    dir.write("r.yaml", &[service("ns", "dual", &[backend.addr]), route("ns", "dual", HOST, "/", "dual")].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.listen_addr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    settings.listeners.ip_v4_v6_mode = mode;
    let router = router_tests::start_router_with(settings).await;
    let port = router.http_addr.port();
    (dir, router, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ip_mode_decides_which_families_listen() {
    let backend = TestBackend::start("dual").await;
    let v4 = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let v6 = |port| SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port));

    let (_dir, router, port) = wildcard_router(IpMode::V4v6, &backend).await;
    assert_eq!(get(v4(port), HOST, "/").await.backend(), "dual", "IPv4 in v4v6");
    let over_v6 = get(v6(port), HOST, "/").await;
    assert_eq!(over_v6.backend(), "dual", "IPv6 on the same port in v4v6");
    assert_eq!(over_v6.seen_header("x-forwarded-for"), ["::1"]);
    router.shutdown().await;

    let (_dir, router, port) = wildcard_router(IpMode::V6, &backend).await;
    assert_eq!(get(v6(port), HOST, "/").await.backend(), "dual");
    assert!(refused(v4(port)).await, "v6 listens on IPv6 only");
    router.shutdown().await;

    let (_dir, router, port) = wildcard_router(IpMode::V4, &backend).await;
    assert_eq!(get(v4(port), HOST, "/").await.backend(), "dual");
    assert!(refused(v6(port)).await, "v4 (the default) listens on IPv4 only");
    router.shutdown().await;
}
