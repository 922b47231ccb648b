//! The admin listener: health, readiness through the lifecycle, and metrics.

use std::time::Duration;

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::client::get;
use router_tests::manifests::{route, service, ManifestDir};
use router_tests::{eventually, start_router};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_and_metrics_report_requests_by_route_and_code() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    dir.write(
        "web.yaml",
        &[service("ns", "web", &[web.addr]), route("ns", "web", "m.example.com", "/", "web")].concat(),
    );
    let router = start_router(dir.path()).await;
    for _ in 0..3 {
        assert_eq!(get(router.http_addr, "m.example.com", "/").await.status, 200);
    }
    assert_eq!(get(router.http_addr, "nothing.example.com", "/").await.status, 503);

    assert_eq!(get(router.stats_addr, "admin", "/healthz").await.status, 200);
    assert_eq!(get(router.stats_addr, "admin", "/healthz/ready").await.status, 200);
    let metrics = get(router.stats_addr, "admin", "/metrics").await;
    assert_eq!(metrics.status, 200);
    let text = metrics.body;
    assert!(
        text.contains(
            r#"router_http_requests_total{backend="be_http:ns:web",namespace="ns",route="web",code="200"} 3"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"router_http_requests_total{backend="openshift_default",namespace="",route="",code="503"} 1"#),
        "{text}"
    );
    assert!(text.contains("router_routes_loaded 1"), "{text}");
    assert!(text.contains("router_table_generation "), "{text}");
    assert!(text.contains("router_table_build_seconds_count "), "{text}");
    assert_eq!(get(router.stats_addr, "admin", "/nope").await.status, 404);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_waits_for_the_first_table_and_fails_while_draining() {
    // A manifest path that does not exist yet: no complete state, so not ready.
    let dir = ManifestDir::new();
    let pending = dir.path().join("later");
    let mut settings = Settings::for_loopback(&pending);
    settings.graceful_shutdown_delay = Duration::from_secs(2);
    let router = router::server::start(settings).await.expect("router starts");
    let not_ready = get(router.stats_addr, "admin", "/healthz/ready").await;
    assert_eq!(not_ready.status, 503, "{}", not_ready.body);
    assert_eq!(get(router.stats_addr, "admin", "/healthz").await.status, 200, "alive while not ready");

    let web = TestBackend::start("web").await;
    std::fs::create_dir(&pending).expect("create manifest dir");
    std::fs::write(
        pending.join("web.yaml"),
        [service("ns", "web", &[web.addr]), route("ns", "web", "r.example.com", "/", "web")].concat(),
    )
    .expect("write manifest");
    let stats = router.stats_addr;
    eventually("readiness after the first table", Duration::from_secs(10), || async move {
        (get(stats, "admin", "/healthz/ready").await.status == 200).then_some(())
    })
    .await;

    let http = router.http_addr;
    eventually("the route from the new directory", Duration::from_secs(10), || async move {
        (get(http, "r.example.com", "/").await.status == 200).then_some(())
    })
    .await;
    let stopping = tokio::spawn(router.shutdown());
    eventually("readiness to fail once draining", Duration::from_secs(5), || async move {
        (get(stats, "admin", "/healthz/ready").await.status == 503).then_some(())
    })
    .await;
    assert_eq!(get(http, "r.example.com", "/").await.backend(), "web", "still serving during the shutdown delay");
    stopping.await.expect("shutdown completes");
    assert!(tokio::net::TcpStream::connect(http).await.is_err(), "listener closed after shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_fails_clearly_when_the_port_is_taken() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut settings = Settings::for_loopback("/nonexistent");
    settings.http_port = taken.local_addr().expect("addr").port();
    let error = router::server::start(settings).await.err().expect("bind must fail");
    let message = error.to_string();
    assert!(message.contains("cannot listen on 127.0.0.1:") && message.contains("http"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_an_in_flight_request_finish() {
    let web = TestBackend::start("slow").await;
    let dir = ManifestDir::new();
    dir.write(
        "web.yaml",
        &[service("ns", "web", &[web.addr]), route("ns", "web", "s.example.com", "/", "web")].concat(),
    );
    let router = start_router(dir.path()).await;
    let http = router.http_addr;
    let in_flight = tokio::spawn(async move { get(http, "s.example.com", "/slow/800").await });
    // Give the request time to reach the backend, then stop.
    tokio::time::sleep(Duration::from_millis(200)).await;
    router.shutdown().await;
    let reply = in_flight.await.expect("request task");
    assert_eq!(reply.status, 200, "the in-flight request completes during shutdown");
    assert_eq!(reply.backend(), "slow");
}
