//! A passthrough route and an edge route on one host, as OpenShift's host index decides: the younger of the two
//! is HostAlreadyClaimed and serves nothing, neither on :443 nor on :80; the older one keeps the host. A plain
//! HTTP route on a path shares the host with a passthrough route.

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::client::get;
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::TestCa;
use router_tests::route_outcome;
use router_tests::start_tls_router;
use router_tests::tls_client::{client_config, https_get, Trust};

const EDGE_FIRST: &str = "edge-first.example.com";
const PASS_FIRST: &str = "pass-first.example.com";
const MIXED: &str = "mixed.example.com";

fn created(spec: RouteSpec<'_>, at: &'static str) -> String {
    RouteSpec { created: Some(at), ..spec }.yaml()
}

fn route<'a>(
    name: &'a str,
    host: &'a str,
    path: &'a str,
    service: &'a str,
    tls: Option<RouteTls<'a>>,
) -> RouteSpec<'a> {
    RouteSpec { path, tls, ..RouteSpec::new("ns", name, host, service) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_younger_of_a_passthrough_and_an_edge_route_serves_nothing() {
    let ca = TestCa::new("ca");
    let (pod_leaf, edge_leaf) = (ca.leaf(&[EDGE_FIRST, PASS_FIRST, MIXED]), ca.leaf(&[EDGE_FIRST, PASS_FIRST]));
    let pod = TestBackend::start_tls("pod", &pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let web = TestBackend::start("web").await;
    let edge = RouteTls::edge().with_certificate(&edge_leaf.cert_pem, &edge_leaf.key_pem).with_insecure_policy("Allow");
    let passthrough = RouteTls::passthrough().with_insecure_policy("Redirect");
    let dir = ManifestDir::new();
    dir.write(
        "all.yaml",
        &[
            service("ns", "pod", &[pod.addr]),
            service("ns", "web", &[web.addr]),
            created(route("edge-older", EDGE_FIRST, "/foo", "web", Some(edge)), "2026-01-01T00:00:00Z"),
            created(route("pass-younger", EDGE_FIRST, "", "pod", Some(passthrough)), "2026-01-01T00:00:01Z"),
            created(route("pass-older", PASS_FIRST, "", "pod", Some(passthrough)), "2026-01-01T00:00:00Z"),
            created(route("edge-younger", PASS_FIRST, "/foo", "web", Some(edge)), "2026-01-01T00:00:01Z"),
            created(route("pass-mixed", MIXED, "", "pod", Some(RouteTls::passthrough())), "2026-01-01T00:00:00Z"),
            created(route("http-mixed", MIXED, "/bar", "web", None), "2026-01-01T00:00:01Z"),
        ]
        .concat(),
    );
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;
    let verified = client_config(Trust::Ca(&ca.cert_pem), &["http/1.1"], None);

    for (name, want) in [
        ("edge-older", "admitted"),
        ("pass-younger", "HostAlreadyClaimed"),
        ("pass-older", "admitted"),
        ("edge-younger", "HostAlreadyClaimed"),
        ("pass-mixed", "admitted"),
        ("http-mixed", "admitted"),
    ] {
        let outcome = route_outcome(&router, "ns", name).await;
        let got = if outcome["admitted"] == true { "admitted" } else { outcome["reason"].as_str().unwrap_or("") };
        assert_eq!(got, want, "{name}: {outcome}");
    }

    // The older edge route keeps its host: :443 is terminated by the router with its certificate.
    let terminated = https_get(https, Some(EDGE_FIRST), EDGE_FIRST, "/foo", verified.clone()).await;
    assert_eq!(terminated.backend(), "web");
    assert_eq!(terminated.peer_certificate, Some(edge_leaf.der.clone()), "the router, not the pod, terminates");
    assert_eq!(get(router.http_addr, EDGE_FIRST, "/foo").await.backend(), "web", "edge route with Allow on :80");
    assert_eq!(get(router.http_addr, EDGE_FIRST, "/").await.status, 503, "no redirect from the displaced route");

    // The older passthrough route keeps its host: :443 reaches the pod, :80 redirects every path.
    let relayed = https_get(https, Some(PASS_FIRST), PASS_FIRST, "/foo", verified.clone()).await;
    assert_eq!(relayed.backend(), "pod");
    assert_eq!(relayed.peer_certificate, Some(pod_leaf.der.clone()), "the pod terminates");
    let redirected = get(router.http_addr, PASS_FIRST, "/foo").await;
    assert_eq!(redirected.status, 302, "the displaced edge route does not serve /foo on :80");

    // A plain HTTP route on a path and a passthrough route share their host.
    assert_eq!(https_get(https, Some(MIXED), MIXED, "/bar", verified).await.backend(), "pod");
    assert_eq!(get(router.http_addr, MIXED, "/bar").await.backend(), "web");
    router.shutdown().await;
}
