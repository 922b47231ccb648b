//! The Kubernetes source never freezes on one object (real kube-apiserver 1.20): an empty EndpointSlice, which
//! the apiserver sends with `endpoints: null`, is a service without endpoints; a Route the router cannot read
//! and an FQDN EndpointSlice are left out, listed on `/debug/skipped` and counted, while every other object of
//! their kind keeps flowing.
//!
//! The tests of this file run one at a time (two apiservers at once are too much for a 2-core machine).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use router::config::Settings;
use router::server::RunningRouter;
use router_tests::apiserver::objects::{apply_all, endpoint_slices, namespace, route, service};
use router_tests::apiserver::{apply_json, get as get_object, ControlPlane, Identity};
use router_tests::backend::TestBackend;
use router_tests::client::{get, KeepAliveClient, Reply};
use router_tests::{eventually, start_router_with};
use serde_json::{json, Value};

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `slice` of `service` with no endpoints (what the EndpointSlice controller leaves for a Service scaled to
/// zero).
fn empty_slice(namespace: &str, service: &str, slice: &str) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
        "metadata": {"name": slice, "namespace": namespace, "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": []
    })
}

/// Polls `host` on the router until it answers `status`; returns how long that took.
async fn until_status(router: &RunningRouter, host: &str, status: u16, what: &str) -> Duration {
    let (addr, started) = (router.http_addr, Instant::now());
    eventually(
        what,
        Duration::from_secs(10),
        || async move { (get(addr, host, "/").await.status == status).then_some(()) },
    )
    .await;
    started.elapsed()
}

/// Basic credentials for the admin port: with the Kubernetes source and none set, /debug/* would take only
/// bearer tokens the apiserver reviews.
const STATS_USER: &str = "admin";
const STATS_PASSWORD: &str = "s3cret";

/// `GET /debug/skipped` with the basic credentials ("admin:s3cret").
async fn debug_skipped(stats: SocketAddr) -> Reply {
    let authorization = [("authorization", "Basic YWRtaW46czNjcmV0")];
    KeepAliveClient::connect(stats).await.get_with("admin", "/debug/skipped", &authorization).await
}

/// The router's settings for `plane` with the admin port's basic credentials.
fn settings_of(plane: &ControlPlane) -> Settings {
    let mut settings = plane.router_settings(Identity::Router);
    settings.stats_auth.stats_username = Some(STATS_USER.into());
    settings.stats_auth.stats_password = Some(STATS_PASSWORD.into());
    settings
}

/// The `/debug/skipped` entries as `kind namespace/name`.
async fn skipped(stats: SocketAddr) -> Vec<String> {
    let reply = debug_skipped(stats).await;
    let body: Value = serde_json::from_str(&reply.body).expect("/debug/skipped is JSON");
    let entries = body["skipped"].as_array().cloned().unwrap_or_default();
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    entries.iter().map(|e| format!("{} {}/{}", text(&e["kind"]), text(&e["namespace"]), text(&e["name"]))).collect()
}

/// The `router_kube_objects_skipped_total` sample of `resource`, 0 when absent.
fn skipped_count(router: &RunningRouter, resource: &str) -> u64 {
    let prefix = format!("router_kube_objects_skipped_total{{resource=\"{resource}\"}} ");
    let text = router.metrics.render();
    text.lines().find_map(|line| line.strip_prefix(&prefix).and_then(|n| n.trim().parse().ok())).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_scaled_to_zero_answers_503_and_200_again_when_refilled() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let web = TestBackend::start("web").await;
    apply_all(&client, [namespace("app", &[]), service("app", "web"), service("app", "idle")]).await;
    apply_all(&client, endpoint_slices("app", "web", "web", &[web.addr])).await;
    apply_json(&client, route("app", "web", "web.example.com", "/", "web", &[])).await;
    apply_json(&client, route("app", "idle", "idle.example.com", "/", "idle", &[])).await;
    let router = start_router_with(settings_of(&plane)).await;
    assert_eq!(get(router.http_addr, "web.example.com", "/").await.backend(), "web");

    // Scaled to zero while the router runs: 503, then 200 again when refilled.
    let emptied = Instant::now();
    apply_json(&client, empty_slice("app", "web", "web-0")).await;
    let stored = get_object(&client, "discovery.k8s.io/v1beta1", "EndpointSlice", Some("app"), "web-0").await;
    let stored = stored.expect("the emptied slice exists");
    assert_eq!(stored.data.get("endpoints"), Some(&Value::Null), "the apiserver sends an empty slice as null");
    until_status(&router, "web.example.com", 503, "503 once the slice is emptied").await;
    println!("FIGURE: EndpointSlice emptied -> 503: {:?}", emptied.elapsed());
    let refilled = Instant::now();
    apply_all(&client, endpoint_slices("app", "web", "web", &[web.addr])).await;
    until_status(&router, "web.example.com", 200, "200 once the slice is refilled").await;
    println!("FIGURE: EndpointSlice refilled -> 200: {:?}", refilled.elapsed());
    assert!(skipped(router.stats_addr).await.is_empty(), "nothing is skipped");

    // A router started while an empty slice exists (its first list holds the null) syncs and becomes ready.
    apply_json(&client, empty_slice("app", "idle", "idle-0")).await;
    let second = start_router_with(settings_of(&plane)).await;
    assert_eq!(get(second.http_addr, "web.example.com", "/").await.backend(), "web");
    assert_eq!(get(second.http_addr, "idle.example.com", "/").await.status, 503, "no endpoints: 503");
    second.shutdown().await;
    router.shutdown().await;
}

/// A Route the apiserver accepts (the CRD keeps unknown spec fields) but the router cannot read: a header action
/// that is a string instead of an object.
fn unreadable_route(namespace: &str, name: &str, host: &str, service: &str) -> Value {
    let mut object = route(namespace, name, host, "/", service, &[]);
    object["spec"]["httpHeaders"] = json!({"actions": {"request": [{"name": "X-Test", "action": "Set"}]}});
    object
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_the_router_cannot_use_is_skipped_and_the_others_keep_flowing() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let (web, external) = (TestBackend::start("web").await, TestBackend::start("external").await);
    apply_all(&client, [namespace("app", &[]), service("app", "web")]).await;
    apply_all(&client, endpoint_slices("app", "web", "web", &[web.addr])).await;
    // An FQDN slice of the same service whose name happens to read as the other backend's address.
    apply_json(
        &client,
        json!({
            "apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
            "metadata": {"name": "web-fqdn", "namespace": "app", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "FQDN",
            "ports": [{"name": "http", "port": external.addr.port(), "protocol": "TCP"}],
            "endpoints": [{"addresses": [external.addr.ip().to_string()], "conditions": {"ready": true}}]
        }),
    )
    .await;
    apply_json(&client, route("app", "good", "good.example.com", "/", "web", &[])).await;
    apply_json(&client, unreadable_route("app", "bad", "bad.example.com", "web")).await;

    // The first list of routes holds the unreadable one: the router still syncs and serves the others.
    let router = start_router_with(settings_of(&plane)).await;
    assert_eq!(get(router.http_addr, "good.example.com", "/").await.backend(), "web");
    assert_eq!(get(router.http_addr, "bad.example.com", "/").await.status, 503, "the unreadable route is left out");
    for _ in 0..10 {
        assert_eq!(get(router.http_addr, "good.example.com", "/").await.backend(), "web", "never the FQDN slice");
    }
    assert_eq!(skipped(router.stats_addr).await, ["EndpointSlice app/web-fqdn", "Route app/bad"]);
    assert_eq!((skipped_count(&router, "routes"), skipped_count(&router, "endpointslices")), (1, 1));
    let body = debug_skipped(router.stats_addr).await.body;
    assert!(body.contains("cannot be decoded") && body.contains("FQDN"), "reasons: {body}");

    // Routes created or fixed later are served; the skipped one leaves the list; nothing is counted twice.
    apply_json(&client, route("app", "later", "later.example.com", "/", "web", &[])).await;
    until_status(&router, "later.example.com", 200, "a route created after the skipped one").await;
    apply_json(&client, unreadable_route("app", "later", "later.example.com", "web")).await;
    until_status(&router, "later.example.com", 503, "a route that became unreadable to leave").await;
    let mut fixed = route("app", "bad", "bad.example.com", "/", "web", &[]);
    fixed["spec"]["httpHeaders"] = json!({"actions": {"request": [{"name": "X-Test", "action": {"type": "Delete"}}]}});
    apply_json(&client, fixed).await;
    until_status(&router, "bad.example.com", 200, "the fixed route to be served").await;
    assert_eq!(skipped(router.stats_addr).await, ["EndpointSlice app/web-fqdn", "Route app/later"]);
    assert_eq!(skipped_count(&router, "routes"), 2);
    router.shutdown().await;
}
