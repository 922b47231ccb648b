//! Active health checks: a pod that stops answering is taken out of rotation by the TCP checks before any
//! request fails on it, and comes back once it answers again.

use std::time::Duration;

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::client::KeepAliveClient;
use router_tests::manifests::{service, ManifestDir, RouteSpec};
use router_tests::{eventually, start_router_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_take_a_dead_pod_out_and_bring_it_back() {
    let (steady, flaky) = (TestBackend::start("steady").await, TestBackend::start("flaky").await);
    let flaky_addr = flaky.addr;
    let dir = ManifestDir::new();
    let route = RouteSpec {
        annotations: &[
            ("router.openshift.io/haproxy.health.check.interval", "100ms"),
            ("haproxy.router.openshift.io/balance", "roundrobin"),
            ("haproxy.router.openshift.io/disable_cookies", "true"),
        ],
        ..RouteSpec::new("ns", "web", "checked.test", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[steady.addr, flaky.addr]), route.yaml()].concat());
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    let table = router.table.clone();
    let flaky_is = |up: bool| {
        let table = table.clone();
        move || {
            let table = table.load();
            let backend = table.lookup("checked.test", "/").expect("route").clone();
            let state = backend.endpoints.iter().find(|e| e.addr == flaky_addr).map(|e| e.health.is_up());
            async move { (state == Some(up)).then_some(()) }
        }
    };

    drop(flaky);
    eventually("the checks to mark the stopped pod down", Duration::from_secs(5), flaky_is(false)).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    for _ in 0..10 {
        assert_eq!(client.get("checked.test", "/").await.backend(), "steady");
    }
    let metrics = router.metrics.render();
    assert!(!metrics.contains("kind=\"connect\""), "no request hit the dead pod: {metrics}");

    let listener = tokio::net::TcpListener::bind(flaky_addr).await.expect("rebind the pod's port");
    let _back = TestBackend::serve("flaky", listener);
    eventually("the checks to bring the pod back", Duration::from_secs(5), flaky_is(true)).await;
    let mut seen_flaky = false;
    for _ in 0..6 {
        seen_flaky |= client.get("checked.test", "/").await.backend() == "flaky";
    }
    assert!(seen_flaky, "the returned pod gets traffic again");
    router.shutdown().await;
}
