//! Admission through real sockets: host ownership between namespaces, re-admission, wildcards, domain
//! lists, subdomains and sharding. Outcomes are read from `/debug/routes`, traffic from the backends.

use std::time::Duration;

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::client::get;
use router_tests::manifests::{service, ManifestDir, RouteSpec};
use router_tests::{eventually, next_generation, route_outcome, start_router_with};

fn older(spec: RouteSpec<'_>, created: &'static str) -> String {
    RouteSpec { created: Some(created), ..spec }.yaml()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_belongs_to_the_namespace_of_its_oldest_route_and_moves_when_it_goes() {
    let (a, b) = (TestBackend::start("team-a").await, TestBackend::start("team-b").await);
    let dir = ManifestDir::new();
    dir.write("svc.yaml", &[service("team-a", "web", &[a.addr]), service("team-b", "web", &[b.addr])].concat());
    dir.write("a.yaml", &older(RouteSpec::new("team-a", "web", "shared.example.com", "web"), "2026-01-01T00:00:00Z"));
    let other_path = RouteSpec { path: "/b", ..RouteSpec::new("team-b", "web", "shared.example.com", "web") };
    dir.write("b.yaml", &older(other_path, "2026-01-02T00:00:00Z"));
    let router = start_router_with(Settings::for_loopback(dir.path())).await;

    let loser = route_outcome(&router, "team-b", "web").await;
    assert_eq!(loser["admitted"], false, "{loser}");
    assert_eq!(loser["reason"], "HostAlreadyClaimed");
    assert_eq!(get(router.http_addr, "shared.example.com", "/b/x").await.backend(), "team-a");

    let generation = router.table.load().generation;
    dir.remove("a.yaml");
    next_generation(&router, generation).await;
    let winner = route_outcome(&router, "team-b", "web").await;
    assert_eq!(winner["admitted"], true, "re-admitted once the owner is gone: {winner}");
    assert_eq!(get(router.http_addr, "shared.example.com", "/b/x").await.backend(), "team-b");
    assert_eq!(get(router.http_addr, "shared.example.com", "/").await.status, 503);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_ownership_check_namespaces_share_a_host_by_path() {
    let (a, b) = (TestBackend::start("team-a").await, TestBackend::start("team-b").await);
    let dir = ManifestDir::new();
    dir.write("svc.yaml", &[service("team-a", "web", &[a.addr]), service("team-b", "web", &[b.addr])].concat());
    dir.write("a.yaml", &older(RouteSpec::new("team-a", "web", "shared.example.com", "web"), "2026-01-01T00:00:00Z"));
    let same_path = RouteSpec::new("team-b", "same", "shared.example.com", "web");
    dir.write("b.yaml", &older(same_path, "2026-01-03T00:00:00Z"));
    let other_path = RouteSpec { path: "/b", ..RouteSpec::new("team-b", "web", "shared.example.com", "web") };
    dir.write("c.yaml", &older(other_path, "2026-01-02T00:00:00Z"));
    let mut settings = Settings::for_loopback(dir.path());
    settings.routing.disable_namespace_ownership_check = true;
    let router = start_router_with(settings).await;

    assert_eq!(route_outcome(&router, "team-b", "web").await["admitted"], true);
    assert_eq!(
        route_outcome(&router, "team-b", "same").await["reason"],
        "HostAlreadyClaimed",
        "host+path stays unique"
    );
    assert_eq!(get(router.http_addr, "shared.example.com", "/b").await.backend(), "team-b");
    assert_eq!(get(router.http_addr, "shared.example.com", "/").await.backend(), "team-a");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wildcard_routes_need_the_setting_and_match_one_label_after_exact_hosts() {
    let (wild, exact) = (TestBackend::start("wild").await, TestBackend::start("exact").await);
    let dir = ManifestDir::new();
    dir.write("svc.yaml", &[service("ns", "wild", &[wild.addr]), service("ns", "exact", &[exact.addr])].concat());
    let wildcard = RouteSpec {
        extra_spec: "  wildcardPolicy: Subdomain\n",
        ..RouteSpec::new("ns", "wild", "www.apps.test", "wild")
    };
    dir.write(
        "routes.yaml",
        &[wildcard.yaml(), RouteSpec::new("ns", "exact", "exact.apps.test", "exact").yaml()].concat(),
    );

    let refused = start_router_with(Settings::for_loopback(dir.path())).await;
    let outcome = route_outcome(&refused, "ns", "wild").await;
    assert_eq!(outcome["reason"], "RouteNotAdmitted", "{outcome}");
    assert_eq!(outcome["message"], "wildcard routes are not allowed");
    assert_eq!(get(refused.http_addr, "anything.apps.test", "/").await.status, 503);
    refused.shutdown().await;

    let mut settings = Settings::for_loopback(dir.path());
    settings.routing.allow_wildcard_routes = true;
    let router = start_router_with(settings).await;
    for (host, want) in [("anything.apps.test", "wild"), ("www.apps.test", "wild"), ("exact.apps.test", "exact")] {
        assert_eq!(get(router.http_addr, host, "/").await.backend(), want, "{host}");
    }
    for host in ["a.b.apps.test", "apps.test"] {
        assert_eq!(get(router.http_addr, host, "/").await.status, 503, "{host}: one label only");
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn domain_lists_and_subdomains_decide_hosts() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let sub = RouteSpec { extra_spec: "  subdomain: shop\n", ..RouteSpec::new("ns", "sub", "", "web") };
    dir.write(
        "all.yaml",
        &[
            service("ns", "web", &[web.addr]),
            RouteSpec::new("ns", "ok", "ok.allowed.test", "web").yaml(),
            RouteSpec::new("ns", "denied", "x.denied.allowed.test", "web").yaml(),
            RouteSpec::new("ns", "elsewhere", "web.other.test", "web").yaml(),
            sub.yaml(),
        ]
        .concat(),
    );
    let mut settings = Settings::for_loopback(dir.path());
    settings.routing.allowed_domains = vec!["allowed.test".into(), "apps.cluster.test".into()];
    settings.routing.denied_domains = vec!["denied.allowed.test".into()];
    settings.routing.router_domain = Some("apps.cluster.test".into());
    let router = start_router_with(settings).await;

    assert_eq!(route_outcome(&router, "ns", "ok").await["admitted"], true);
    assert_eq!(route_outcome(&router, "ns", "denied").await["message"], "host in list of denied domains");
    assert_eq!(route_outcome(&router, "ns", "elsewhere").await["message"], "host not in the allowed list of domains");
    let sub = route_outcome(&router, "ns", "sub").await;
    assert_eq!(sub["host"], "shop.apps.cluster.test", "{sub}");
    assert_eq!(get(router.http_addr, "shop.apps.cluster.test", "/").await.backend(), "web");
    assert_eq!(get(router.http_addr, "x.denied.allowed.test", "/").await.status, 503);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharding_by_route_and_namespace_labels() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let namespaces = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shard-a\n  labels: {tier: internal}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: shard-b\n  labels: {tier: public}\n---\n";
    let mine = RouteSpec { labels: &[("router", "internal")], ..RouteSpec::new("shard-a", "mine", "mine.test", "web") };
    let unlabelled = RouteSpec::new("shard-a", "unlabelled", "unlabelled.test", "web");
    let other_ns =
        RouteSpec { labels: &[("router", "internal")], ..RouteSpec::new("shard-b", "theirs", "theirs.test", "web") };
    dir.write(
        "all.yaml",
        &[
            namespaces.to_string(),
            service("shard-a", "web", &[web.addr]),
            service("shard-b", "web", &[web.addr]),
            mine.yaml(),
            unlabelled.yaml(),
            other_ns.yaml(),
        ]
        .concat(),
    );
    let mut settings = Settings::for_loopback(dir.path());
    settings.routing.route_labels = "router=internal".into();
    settings.routing.namespace_labels = "tier in (internal)".into();
    let router = start_router_with(settings).await;

    assert_eq!(get(router.http_addr, "mine.test", "/").await.backend(), "web");
    for host in ["unlabelled.test", "theirs.test"] {
        assert_eq!(get(router.http_addr, host, "/").await.status, 503, "{host} is another shard's");
    }
    assert!(route_outcome(&router, "shard-b", "theirs").await.is_null(), "other shards' routes are not listed");

    // Relabelling the namespace moves its routes into the shard.
    let generation = router.table.load().generation;
    dir.write(
        "all.yaml",
        &std::fs::read_to_string(dir.path().join("all.yaml")).expect("read").replace("tier: public", "tier: internal"),
    );
    next_generation(&router, generation).await;
    let http = router.http_addr;
    eventually("the relabelled namespace's route", Duration::from_secs(10), || async move {
        (get(http, "theirs.test", "/").await.status == 200).then_some(())
    })
    .await;
    router.shutdown().await;
}
