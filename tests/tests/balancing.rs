//! Traffic shares under weights and each balancing algorithm, through real sockets.

use std::collections::BTreeMap;
use std::time::Duration;

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::client::{get, KeepAliveClient};
use router_tests::manifests::{service, ManifestDir, RouteSpec};
use router_tests::start_router_with;

const NO_COOKIES: (&str, &str) = ("haproxy.router.openshift.io/disable_cookies", "true");

async fn shares(client: &mut KeepAliveClient, host: &str, requests: usize) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for _ in 0..requests {
        let reply = client.get(host, "/").await;
        assert_eq!(reply.status, 200);
        *counts.entry(reply.backend().to_string()).or_insert(0) += 1;
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alternate_backends_share_traffic_by_weight() {
    let (a, b1, b2) = (TestBackend::start("a").await, TestBackend::start("b1").await, TestBackend::start("b2").await);
    let dir = ManifestDir::new();
    // A: weight 60, one pod; B: weight 40 over two pods -> per pod 60 : 20 : 20 (scaled 256 : 85 : 85).
    let route = RouteSpec {
        weight: 60,
        annotations: &[NO_COOKIES],
        extra_spec: "  alternateBackends:\n  - kind: Service\n    name: b\n    weight: 40\n",
        ..RouteSpec::new("ns", "split", "split.test", "a")
    };
    dir.write(
        "all.yaml",
        &[service("ns", "a", &[a.addr]), service("ns", "b", &[b1.addr, b2.addr]), route.yaml()].concat(),
    );
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    let counts = shares(&mut client, "split.test", 426).await;
    // Smooth weighted round robin is exact over a whole cycle of 256 + 85 + 85 = 426 picks.
    assert_eq!(counts.get("a"), Some(&256), "{counts:?}");
    assert_eq!(counts.get("b1"), Some(&85), "{counts:?}");
    assert_eq!(counts.get("b2"), Some(&85), "{counts:?}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_weights_zero_is_503_and_zero_weight_service_gets_no_new_traffic() {
    let (a, b) = (TestBackend::start("a").await, TestBackend::start("b").await);
    let dir = ManifestDir::new();
    let zero = RouteSpec { weight: 0, ..RouteSpec::new("ns", "zero", "zero.test", "a") };
    let half = RouteSpec {
        annotations: &[NO_COOKIES],
        extra_spec: "  alternateBackends:\n  - {kind: Service, name: b, weight: 0}\n",
        ..RouteSpec::new("ns", "half", "half.test", "a")
    };
    dir.write(
        "all.yaml",
        &[service("ns", "a", &[a.addr]), service("ns", "b", &[b.addr]), zero.yaml(), half.yaml()].concat(),
    );
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    assert_eq!(get(router.http_addr, "zero.test", "/").await.status, 503);
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    let counts = shares(&mut client, "half.test", 20).await;
    assert_eq!(counts.get("a"), Some(&20), "{counts:?}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_random_balancing_uses_every_pod() {
    let (a, b, c) = (TestBackend::start("a").await, TestBackend::start("b").await, TestBackend::start("c").await);
    let dir = ManifestDir::new();
    let route = RouteSpec { annotations: &[NO_COOKIES], ..RouteSpec::new("ns", "web", "random.test", "web") };
    dir.write("all.yaml", &[service("ns", "web", &[a.addr, b.addr, c.addr]), route.yaml()].concat());
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    let counts = shares(&mut client, "random.test", 300).await;
    // Expected 100 each; the chance of any below 50 is negligible for a fair draw.
    assert_eq!(counts.len(), 3, "{counts:?}");
    assert!(counts.values().all(|&n| n >= 50), "{counts:?}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_balancing_keeps_a_client_on_one_pod() {
    let (a, b, c) = (TestBackend::start("a").await, TestBackend::start("b").await, TestBackend::start("c").await);
    let dir = ManifestDir::new();
    let route = RouteSpec {
        annotations: &[NO_COOKIES, ("haproxy.router.openshift.io/balance", "source")],
        ..RouteSpec::new("ns", "web", "source.test", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[a.addr, b.addr, c.addr]), route.yaml()].concat());
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    let mut counts = BTreeMap::new();
    for _ in 0..20 {
        // New connections each time: stickiness comes from the address, not the connection.
        *counts.entry(get(router.http_addr, "source.test", "/").await.backend().to_string()).or_insert(0) += 1;
    }
    assert_eq!(counts.len(), 1, "one client address, one pod: {counts:?}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leastconn_sends_new_requests_away_from_a_busy_pod() {
    let (a, b) = (TestBackend::start("a").await, TestBackend::start("b").await);
    let dir = ManifestDir::new();
    let route = RouteSpec {
        annotations: &[NO_COOKIES, ("haproxy.router.openshift.io/balance", "leastconn")],
        ..RouteSpec::new("ns", "web", "least.test", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[a.addr, b.addr]), route.yaml()].concat());
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    let http = router.http_addr;
    // Occupy one pod with a slow request, then check that quick requests all go to the other one.
    let slow = tokio::spawn(async move { get(http, "least.test", "/slow/1500").await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut client = KeepAliveClient::connect(http).await;
    let counts = shares(&mut client, "least.test", 10).await;
    let busy = slow.await.expect("slow request").backend().to_string();
    assert_eq!(counts.len(), 1, "{counts:?}");
    assert!(!counts.contains_key(&busy), "the busy pod {busy} got new requests: {counts:?}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_balance_value_is_reported_and_the_route_still_serves() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let route = RouteSpec {
        annotations: &[
            ("haproxy.router.openshift.io/balance", "fastest"),
            ("haproxy.router.openshift.io/timeout", "soon"),
        ],
        ..RouteSpec::new("ns", "web", "bad.test", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), route.yaml()].concat());
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    assert_eq!(get(router.http_addr, "bad.test", "/").await.backend(), "web");
    let outcome = router_tests::route_outcome(&router, "ns", "web").await;
    let warnings = outcome["warnings"].to_string();
    assert!(warnings.contains("balance") && warnings.contains("timeout"), "{outcome}");
    assert!(router.metrics.render().contains("router_route_warnings_total 2"));
    router.shutdown().await;
}
