//! The Kubernetes source against a real kube-apiserver 1.20: routes, services and v1beta1 EndpointSlices
//! become traffic; admission outcomes become route status; changes apply on open connections.
//!
//! Each test owns its control plane; the tests of this file run one at a time (two apiservers at once are
//! too much for a 2-core machine).

use std::time::{Duration, Instant};

use router_tests::apiserver::objects::{
    admitted, apply_all, endpoint_slices, namespace, route, service, wait_admitted,
};
use router_tests::apiserver::{apply_json, delete, ControlPlane, Identity};
use router_tests::backend::TestBackend;
use router_tests::client::{get, KeepAliveClient};
use router_tests::{eventually, next_generation, start_router_with};

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
const ROUTER: &str = "default";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_created_in_the_apiserver_is_served_and_admitted() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let (blue, green) = (TestBackend::start("blue").await, TestBackend::start("green").await);
    apply_all(&client, [namespace("shop", &[]), service("shop", "web")]).await;
    apply_all(&client, endpoint_slices("shop", "web", "web-a", &[blue.addr])).await;

    let router = start_router_with(plane.router_settings(Identity::Router)).await;
    let created = Instant::now();
    apply_json(&client, route("shop", "web", "web.example.com", "/", "web", &[])).await;
    let addr = router.http_addr;
    eventually("the first 200 for the new route", Duration::from_secs(20), || async move {
        (get(addr, "web.example.com", "/").await.status == 200).then_some(())
    })
    .await;
    println!("FIGURE: Route create -> first 200 through the router: {:?}", created.elapsed());
    wait_admitted(&client, "shop", "web", ROUTER, "True", "").await;

    // A rebuild that changes nothing for the route writes nothing.
    let writes = |router: &router::server::RunningRouter| {
        let text = router.metrics.render();
        text.lines()
            .filter(|l| l.starts_with("router_route_status_writes_total"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // The write is counted when the apiserver's answer reaches the router, which can be after the status is
    // visible to other watchers.
    let before = eventually("the admission's status write counted", Duration::from_secs(10), || {
        let counted = writes(&router);
        async move { (!counted.is_empty()).then_some(counted) }
    })
    .await;
    let generation = router.table.load().generation;
    apply_json(&client, service("shop", "unrelated")).await;
    next_generation(&router, generation).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(writes(&router), before, "no status write when our entry is unchanged");

    // New endpoints: a keep-alive connection opened before the change follows them and stays open.
    let mut kept = KeepAliveClient::connect(router.http_addr).await;
    assert_eq!(kept.get("web.example.com", "/").await.backend(), "blue");
    apply_all(&client, endpoint_slices("shop", "web", "web-b", &[green.addr])).await;
    delete(&client, "discovery.k8s.io/v1beta1", "EndpointSlice", Some("shop"), "web-a-0").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while kept.get("web.example.com", "/").await.backend() != "green" {
        assert!(Instant::now() < deadline, "traffic did not follow the endpoints to green");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(kept.is_open(), "the endpoints change must not close client connections");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_conflict_is_written_to_the_losers_status_and_resolved_when_the_winner_goes() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let (old, new) = (TestBackend::start("old").await, TestBackend::start("new").await);
    apply_all(&client, [namespace("team", &[]), service("team", "old"), service("team", "new")]).await;
    apply_all(&client, endpoint_slices("team", "old", "old", &[old.addr])).await;
    apply_all(&client, endpoint_slices("team", "new", "new", &[new.addr])).await;
    apply_json(&client, route("team", "first", "shared.example.com", "/", "old", &[])).await;
    // creationTimestamp has one-second resolution: make the second route clearly younger.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    apply_json(&client, route("team", "second", "shared.example.com", "/", "new", &[])).await;

    let router = start_router_with(plane.router_settings(Identity::Router)).await;
    wait_admitted(&client, "team", "first", ROUTER, "True", "").await;
    wait_admitted(&client, "team", "second", ROUTER, "False", "HostAlreadyClaimed").await;
    assert_eq!(get(router.http_addr, "shared.example.com", "/").await.backend(), "old");

    // A second router with another name writes its own entry and leaves ours alone.
    let mut other_settings = plane.router_settings(Identity::Router);
    other_settings.router_name = "other".into();
    let other = start_router_with(other_settings).await;
    wait_admitted(&client, "team", "second", "other", "False", "HostAlreadyClaimed").await;
    let ours = admitted(&client, "team", "second", ROUTER).await;
    assert_eq!(ours, Some(("False".into(), "HostAlreadyClaimed".into())), "our entry is kept");

    delete(&client, "route.openshift.io/v1", "Route", Some("team"), "first").await;
    wait_admitted(&client, "team", "second", ROUTER, "True", "").await;
    wait_admitted(&client, "team", "second", "other", "True", "").await;
    let addr = router.http_addr;
    eventually("the second route to serve the host", Duration::from_secs(20), || async move {
        (get(addr, "shared.example.com", "/").await.backend() == "new").then_some(())
    })
    .await;
    other.shutdown().await;
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_is_served_as_routes() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let web = TestBackend::start("web").await;
    apply_all(&client, [namespace("kube-users", &[]), service("kube-users", "web")]).await;
    apply_all(&client, endpoint_slices("kube-users", "web", "web", &[web.addr])).await;
    apply_json(
        &client,
        serde_json::json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "site", "namespace": "kube-users"},
            "spec": {"rules": [{"host": "site.example.com", "http": {"paths": [
                {"path": "/app", "pathType": "Prefix",
                 "backend": {"service": {"name": "web", "port": {"number": 80}}}},
                {"path": "/exact", "pathType": "Exact",
                 "backend": {"service": {"name": "web", "port": {"name": "http"}}}}
            ]}}]}
        }),
    )
    .await;
    let router = start_router_with(plane.router_settings(Identity::Router)).await;
    let addr = router.http_addr;
    eventually("the Ingress to be served", Duration::from_secs(20), || async move {
        (get(addr, "site.example.com", "/app/page").await.backend() == "web").then_some(())
    })
    .await;
    assert_eq!(get(addr, "site.example.com", "/exact").await.status, 503, "Exact paths are not translated");
    assert_eq!(get(addr, "site.example.com", "/").await.status, 503, "only the rule's path is routed");
    router.shutdown().await;
}
