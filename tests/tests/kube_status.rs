//! Route status and start-up against a real kube-apiserver: a route that leaves a router's shard (its labels,
//! or its namespace's labels, stop matching) loses that router's `status.ingress[]` entry while other routers'
//! entries stay; a router started while the apiserver is unreachable keeps retrying, stays unready, and syncs
//! once the apiserver is up; an entry of ours someone else changed is written back; two routers of one name that
//! disagree about the entry stop rewriting each other's (contention).
//!
//! Each test owns its control plane; the tests of this file run one at a time.

use std::time::Duration;

use kube::Client;
use router_tests::apiserver::objects::{apply_all, endpoint_slices, namespace, route, service, wait_admitted};
use router_tests::apiserver::{apply_json, get as get_object, ControlPlane, Identity};
use router_tests::backend::TestBackend;
use router_tests::client::get;
use router_tests::metrics_text::series_value;
use router_tests::{eventually, start_router_with};

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The router names of a route's `status.ingress[]` entries, sorted.
async fn status_routers(client: &Client, namespace: &str, name: &str) -> Vec<String> {
    let route = get_object(client, "route.openshift.io/v1", "Route", Some(namespace), name).await;
    let entries = route.and_then(|r| r.data["status"]["ingress"].as_array().cloned()).unwrap_or_default();
    let mut names: Vec<String> =
        entries.iter().filter_map(|entry| entry["routerName"].as_str().map(str::to_string)).collect();
    names.sort();
    names
}

async fn wait_status_routers(client: &Client, namespace: &str, name: &str, want: &[&str]) {
    let what = format!("route {namespace}/{name} to have status entries of exactly {want:?}");
    eventually(&what, Duration::from_secs(20), || async move {
        (status_routers(client, namespace, name).await == want).then_some(())
    })
    .await;
}

/// Namespace `app` with Service `web`, its one pod (returned: it serves while held) and Route `web` for
/// web.example.com.
async fn web_route(client: &Client) -> TestBackend {
    let web = TestBackend::start("web").await;
    apply_all(client, [namespace("app", &[]), service("app", "web")]).await;
    apply_all(client, endpoint_slices("app", "web", "web", &[web.addr])).await;
    apply_json(client, route("app", "web", "web.example.com", "/", "web", &[])).await;
    web
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_leaving_the_shard_loses_this_routers_status_entry() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let web = TestBackend::start("web").await;
    apply_all(&client, [namespace("prod", &[("env", "prod")]), service("prod", "web")]).await;
    apply_all(&client, endpoint_slices("prod", "web", "web", &[web.addr])).await;
    apply_json(&client, route("prod", "site", "site.example.com", "/", "web", &[("shard", "a")])).await;

    let mut by_route = plane.router_settings(Identity::Router);
    by_route.router_name = "shard-a".into();
    by_route.routing.route_labels = "shard=a".into();
    let shard_a = start_router_with(by_route).await;
    let mut by_namespace = plane.router_settings(Identity::Router);
    by_namespace.router_name = "prod".into();
    by_namespace.routing.namespace_labels = "env=prod".into();
    let prod = start_router_with(by_namespace).await;
    wait_admitted(&client, "prod", "site", "shard-a", "True", "").await;
    wait_admitted(&client, "prod", "site", "prod", "True", "").await;
    assert_eq!(get(shard_a.http_addr, "site.example.com", "/").await.backend(), "web");

    // Relabelled out of shard a: shard a drops its entry and the route; the namespace shard keeps both.
    apply_json(&client, route("prod", "site", "site.example.com", "/", "web", &[("shard", "b")])).await;
    wait_status_routers(&client, "prod", "site", &["prod"]).await;
    assert_eq!(get(shard_a.http_addr, "site.example.com", "/").await.status, 503);
    assert_eq!(get(prod.http_addr, "site.example.com", "/").await.backend(), "web");

    // The namespace leaves the prod shard: the last entry goes too.
    apply_json(&client, namespace("prod", &[("env", "staging")])).await;
    wait_status_routers(&client, "prod", "site", &[]).await;

    // Back in both shards: both entries come back.
    apply_json(&client, namespace("prod", &[("env", "prod")])).await;
    apply_json(&client, route("prod", "site", "site.example.com", "/", "web", &[("shard", "a")])).await;
    wait_admitted(&client, "prod", "site", "shard-a", "True", "").await;
    wait_admitted(&client, "prod", "site", "prod", "True", "").await;
    wait_status_routers(&client, "prod", "site", &["prod", "shard-a"]).await;
    prod.shutdown().await;
    shard_a.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_started_while_the_apiserver_is_down_waits_for_it() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(mut plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let _web = web_route(&client).await;
    plane.stop_apiserver();

    let router = router::server::start(plane.router_settings(Identity::Router))
        .await
        .unwrap_or_else(|error| panic!("the router must start and retry while the apiserver is away: {error}"));
    // Several backoff steps pass without a sync: not ready, nothing routed.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(router.readiness.not_ready_reason().is_some(), "ready before the first sync");
    assert_eq!(get(router.http_addr, "web.example.com", "/").await.status, 503);

    plane.start_apiserver().await;
    let readiness = router.readiness.clone();
    eventually("readiness after the apiserver came up", Duration::from_secs(60), || {
        let ready = readiness.not_ready_reason().is_none();
        async move { ready.then_some(()) }
    })
    .await;
    assert_eq!(get(router.http_addr, "web.example.com", "/").await.backend(), "web");
    let client = plane.client().await;
    wait_admitted(&client, "app", "web", "default", "True", "").await;
    router.shutdown().await;
}

/// Ok status writes a router has counted.
fn status_writes(router: &router::server::RunningRouter) -> f64 {
    series_value(&router.metrics.render(), "router_route_status_writes_total{result=\"ok\"}").unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_routers_of_one_name_that_disagree_stop_rewriting_each_others_status() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let _web = web_route(&client).await;

    // One name, two canonical hostnames: each router's entry says the other's is wrong.
    let mut settings = plane.router_settings(Identity::Router);
    settings.router_canonical_hostname = Some("one.example.com".into());
    let one = start_router_with(settings.clone()).await;
    wait_admitted(&client, "app", "web", "default", "True", "").await;
    settings.router_canonical_hostname = Some("two.example.com".into());
    let two = start_router_with(settings).await;

    // Each sees the other's write of its entry twice at most before it backs off for the contention interval
    // (minutes): a handful of writes, not a write loop at the write pace (100 per second).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let settled = status_writes(&one) + status_writes(&two);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let later = status_writes(&one) + status_writes(&two);
    assert!(settled <= 8.0, "{settled} status writes in 5 s by two routers of one name");
    assert_eq!(later, settled, "writes went on after both routers saw the contention");
    let text = one.metrics.render() + &two.metrics.render();
    assert!(text.contains("router_route_status_writes_total{result=\"held_back\"}"), "held-back writes are counted");
    // Both keep serving the route.
    assert_eq!(get(one.http_addr, "web.example.com", "/").await.backend(), "web");
    assert_eq!(get(two.http_addr, "web.example.com", "/").await.backend(), "web");
    one.shutdown().await;
    two.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_of_ours_changed_by_someone_else_is_written_back() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let _web = web_route(&client).await;
    let router = start_router_with(plane.router_settings(Identity::Router)).await;
    wait_admitted(&client, "app", "web", "default", "True", "").await;

    // Someone (a script clearing status, an older router) says the route is rejected.
    let routes: kube::Api<router::model::Route> = kube::Api::namespaced(client.clone(), "app");
    let wrong = serde_json::json!({"status": {"ingress": [{
        "host": "web.example.com", "routerName": "default", "wildcardPolicy": "None",
        "conditions": [{"type": "Admitted", "status": "False", "reason": "HostAlreadyClaimed"}],
    }]}});
    let patch = kube::api::Patch::Merge(&wrong);
    routes.patch_status("web", &Default::default(), &patch).await.expect("status patch");
    wait_admitted(&client, "app", "web", "default", "True", "").await;
    router.shutdown().await;
}
