//! Sharding against a real apiserver: a router with `ROUTE_LABELS` and one with `NAMESPACE_LABELS` each serve
//! and write status for their own routes only, and a relabelled route moves between shards.

use std::time::Duration;

use router_tests::apiserver::objects::{
    admitted, apply_all, endpoint_slices, namespace, route, service, wait_admitted,
};
use router_tests::apiserver::{apply_json, ControlPlane, Identity};
use router_tests::backend::TestBackend;
use router_tests::client::get;
use router_tests::{eventually, start_router_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routers_serve_and_admit_only_their_shard() {
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let web = TestBackend::start("web").await;
    apply_all(&client, [namespace("prod", &[("env", "prod")]), namespace("dev", &[("env", "dev")])]).await;
    for ns in ["prod", "dev"] {
        apply_json(&client, service(ns, "web")).await;
        apply_all(&client, endpoint_slices(ns, "web", "web", &[web.addr])).await;
    }
    apply_all(
        &client,
        [
            route("prod", "a-prod", "a-prod.example.com", "/", "web", &[("shard", "a")]),
            route("prod", "b-prod", "b-prod.example.com", "/", "web", &[("shard", "b")]),
            route("dev", "a-dev", "a-dev.example.com", "/", "web", &[("shard", "a")]),
        ],
    )
    .await;

    let mut by_route = plane.router_settings(Identity::Router);
    by_route.router_name = "shard-a".into();
    by_route.routing.route_labels = "shard=a".into();
    let shard_a = start_router_with(by_route).await;
    let mut by_namespace = plane.router_settings(Identity::Router);
    by_namespace.router_name = "prod".into();
    by_namespace.routing.namespace_labels = "env=prod".into();
    let prod = start_router_with(by_namespace).await;

    for (router, host, want) in [
        (&shard_a, "a-prod.example.com", 200),
        (&shard_a, "a-dev.example.com", 200),
        (&shard_a, "b-prod.example.com", 503),
        (&prod, "a-prod.example.com", 200),
        (&prod, "b-prod.example.com", 200),
        (&prod, "a-dev.example.com", 503),
    ] {
        let got = get(router.http_addr, host, "/").await.status.as_u16();
        assert_eq!(got, want, "{host} through the router on {}", router.http_addr);
    }

    wait_admitted(&client, "prod", "a-prod", "shard-a", "True", "").await;
    wait_admitted(&client, "dev", "a-dev", "shard-a", "True", "").await;
    wait_admitted(&client, "prod", "a-prod", "prod", "True", "").await;
    wait_admitted(&client, "prod", "b-prod", "prod", "True", "").await;
    assert_eq!(admitted(&client, "prod", "b-prod", "shard-a").await, None, "not shard a's route");
    assert_eq!(admitted(&client, "dev", "a-dev", "prod").await, None, "not in a prod namespace");

    // Relabelled, b-prod joins shard a.
    apply_json(&client, route("prod", "b-prod", "b-prod.example.com", "/", "web", &[("shard", "a")])).await;
    let addr = shard_a.http_addr;
    eventually("b-prod to move into shard a", Duration::from_secs(20), || async move {
        (get(addr, "b-prod.example.com", "/").await.status == 200).then_some(())
    })
    .await;
    wait_admitted(&client, "prod", "b-prod", "shard-a", "True", "").await;
    prod.shutdown().await;
    shard_a.shutdown().await;
}
