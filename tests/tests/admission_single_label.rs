//! Single-label hosts (`net`, `com`, `myapp`) through the manifest source: admitted, owned by the namespace of
//! their oldest route (or shared by path with the ownership check off), and served, a wildcard route on one
//! included. Outcomes come from `/debug/routes`, traffic from the backends.

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::client::get;
use router_tests::manifests::{service, ManifestDir, RouteSpec};
use router_tests::{route_outcome, start_router_with};

fn created(spec: RouteSpec<'_>, at: &'static str) -> String {
    RouteSpec { created: Some(at), ..spec }.yaml()
}

/// Backends named after what they serve: `net` and `com` (namespace ns1), `wild` (a wildcard route in ns1 on
/// `myapp`), `other` (a younger route in ns2 on `net` + `/other`).
struct Pods {
    net: TestBackend,
    com: TestBackend,
    wild: TestBackend,
    other: TestBackend,
}

async fn start_pods() -> Pods {
    Pods {
        net: TestBackend::start("net").await,
        com: TestBackend::start("com").await,
        wild: TestBackend::start("wild").await,
        other: TestBackend::start("other").await,
    }
}

/// Wildcard routes in one namespace may sit beside its single-label hosts; another namespace's single-label
/// host would block them (they all share the empty domain above), so they stay in ns1.
fn manifests(dir: &ManifestDir, pods: &Pods) {
    let wildcard =
        RouteSpec { extra_spec: "  wildcardPolicy: Subdomain\n", ..RouteSpec::new("ns1", "wild", "myapp", "wild") };
    let other_path = RouteSpec { path: "/other", ..RouteSpec::new("ns2", "net-other", "net", "other") };
    dir.write(
        "all.yaml",
        &[
            service("ns1", "net", &[pods.net.addr]),
            service("ns1", "com", &[pods.com.addr]),
            service("ns1", "wild", &[pods.wild.addr]),
            service("ns2", "other", &[pods.other.addr]),
            created(RouteSpec::new("ns1", "net", "net", "net"), "2026-01-01T00:00:00Z"),
            created(other_path, "2026-01-01T00:00:01Z"),
            created(RouteSpec::new("ns1", "com", "com", "com"), "2026-01-01T00:00:02Z"),
            created(wildcard, "2026-01-01T00:00:03Z"),
        ]
        .concat(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_label_hosts_are_admitted_owned_and_served() {
    let pods = start_pods().await;
    let dir = ManifestDir::new();
    manifests(&dir, &pods);
    let mut settings = Settings::for_loopback(dir.path());
    settings.routing.allow_wildcard_routes = true;
    let router = start_router_with(settings).await;

    for (namespace, name) in [("ns1", "net"), ("ns1", "com"), ("ns1", "wild")] {
        let outcome = route_outcome(&router, namespace, name).await;
        assert_eq!(outcome["admitted"], true, "{outcome}");
    }
    let loser = route_outcome(&router, "ns2", "net-other").await;
    assert_eq!(loser["reason"], "HostAlreadyClaimed", "net belongs to ns1: {loser}");
    assert_eq!(get(router.http_addr, "net", "/other").await.backend(), "net");
    assert_eq!(get(router.http_addr, "com", "/").await.backend(), "com");
    assert_eq!(get(router.http_addr, "myapp", "/x").await.backend(), "wild", "a wildcard route on a single label");
    assert_eq!(get(router.http_addr, "a.myapp", "/").await.status, 503, "nothing under a single-label wildcard");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_ownership_check_single_label_hosts_are_shared_by_path() {
    let pods = start_pods().await;
    let dir = ManifestDir::new();
    manifests(&dir, &pods);
    let mut settings = Settings::for_loopback(dir.path());
    settings.routing.allow_wildcard_routes = true;
    settings.routing.disable_namespace_ownership_check = true;
    let router = start_router_with(settings).await;

    for (namespace, name) in [("ns1", "net"), ("ns2", "net-other"), ("ns1", "com"), ("ns1", "wild")] {
        let outcome = route_outcome(&router, namespace, name).await;
        assert_eq!(outcome["admitted"], true, "{outcome}");
    }
    assert_eq!(get(router.http_addr, "net", "/other/x").await.backend(), "other");
    assert_eq!(get(router.http_addr, "net", "/").await.backend(), "net");
    assert_eq!(get(router.http_addr, "myapp", "/").await.backend(), "wild");
    router.shutdown().await;
}
