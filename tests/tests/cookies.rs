//! Sticky sessions: the router's cookie pins a client to a pod, stays hidden from pods, and re-pins when
//! its pod goes away.

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::client::KeepAliveClient;
use router_tests::manifests::{service, ManifestDir, RouteSpec};
use router_tests::{next_generation, start_router_with};

fn set_cookie(reply: &router_tests::client::Reply) -> Option<String> {
    reply.headers.get("set-cookie").and_then(|v| v.to_str().ok()).map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookie_pins_the_client_and_follows_a_gone_pod() {
    let (a, b, c) = (TestBackend::start("a").await, TestBackend::start("b").await, TestBackend::start("c").await);
    let dir = ManifestDir::new();
    let route = RouteSpec {
        annotations: &[
            ("router.openshift.io/cookie_name", "session_pin"),
            ("haproxy.router.openshift.io/balance", "roundrobin"),
        ],
        ..RouteSpec::new("ns", "web", "sticky.test", "web")
    };
    dir.write("svc.yaml", &service("ns", "web", &[a.addr, b.addr, c.addr]));
    dir.write("route.yaml", &route.yaml());
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;

    let first = client.get("sticky.test", "/").await;
    let cookie = set_cookie(&first).expect("a sticky cookie is inserted");
    assert!(cookie.starts_with("session_pin=") && cookie.contains("path=/") && cookie.contains("HttpOnly"), "{cookie}");
    assert_eq!(first.headers["cache-control"], "private", "responses that set the cookie are not cacheable");
    let pair = cookie.split(';').next().expect("name=value").to_string();
    let pinned = first.backend().to_string();
    for _ in 0..6 {
        let reply = client.get_with("sticky.test", "/", &[("cookie", &format!("theme=dark; {pair}"))]).await;
        assert_eq!(reply.backend(), pinned);
        assert!(set_cookie(&reply).is_none(), "no new cookie while the pin is valid");
        assert_eq!(reply.seen_header("cookie"), ["theme=dark"], "the pod never sees the router's cookie");
    }

    // The pinned pod disappears: the client is re-pinned to another one with a fresh cookie.
    let remaining: Vec<_> = [&a, &b, &c].into_iter().filter(|t| t.name != pinned).map(|t| t.addr).collect();
    let generation = router.table.load().generation;
    dir.write("svc.yaml", &service("ns", "web", &remaining));
    next_generation(&router, generation).await;
    let moved = client.get_with("sticky.test", "/", &[("cookie", &pair)]).await;
    assert_eq!(moved.status, 200);
    assert_ne!(moved.backend(), pinned);
    assert!(set_cookie(&moved).is_some(), "a new pin is issued");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_cookies_and_default_names() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let plain = RouteSpec::new("ns", "plain", "plain.test", "web");
    let off = RouteSpec {
        annotations: &[("haproxy.router.openshift.io/disable_cookies", "true")],
        ..RouteSpec::new("ns", "off", "off.test", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), plain.yaml(), off.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.routing.cookie_name = Some("ROUTERCOOKIE".into());
    let router = start_router_with(settings).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    let plain = client.get("plain.test", "/").await;
    assert!(set_cookie(&plain).expect("cookie").starts_with("ROUTERCOOKIE="), "ROUTER_COOKIE_NAME names it");
    assert!(set_cookie(&client.get("off.test", "/").await).is_none());
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_weight_pod_keeps_its_sticky_clients() {
    let (old, new) = (TestBackend::start("old").await, TestBackend::start("new").await);
    let dir = ManifestDir::new();
    let both = RouteSpec {
        extra_spec: "  alternateBackends:\n  - {kind: Service, name: new, weight: 0}\n",
        ..RouteSpec::new("ns", "web", "canary.test", "old")
    };
    dir.write("svc.yaml", &[service("ns", "old", &[old.addr]), service("ns", "new", &[new.addr])].concat());
    dir.write(
        "route.yaml",
        &RouteSpec {
            weight: 0,
            extra_spec: "  alternateBackends:\n  - {kind: Service, name: new, weight: 100}\n",
            ..RouteSpec::new("ns", "web", "canary.test", "old")
        }
        .yaml(),
    );
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    let first = client.get("canary.test", "/").await;
    assert_eq!(first.backend(), "new");
    let pair = set_cookie(&first).expect("cookie").split(';').next().expect("pair").to_string();

    // Now the pinned service drops to weight 0: new clients go elsewhere, the pinned one stays.
    let generation = router.table.load().generation;
    dir.write("route.yaml", &both.yaml());
    next_generation(&router, generation).await;
    assert_eq!(client.get_with("canary.test", "/", &[("cookie", &pair)]).await.backend(), "new");
    let mut fresh = KeepAliveClient::connect(router.http_addr).await;
    assert_eq!(fresh.get("canary.test", "/").await.backend(), "old");
    router.shutdown().await;
}
