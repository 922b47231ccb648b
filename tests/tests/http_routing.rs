//! Routing on :80 by Host and path, against real sockets and reporting backends.

use router_tests::backend::TestBackend;
use router_tests::client::{get, KeepAliveClient};
use router_tests::manifests::{endpoint_slice, route, service, ManifestDir, RouteSpec};
use router_tests::start_router;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_by_host_and_longest_path_prefix() {
    let (root, sub, deep) =
        (TestBackend::start("root").await, TestBackend::start("sub").await, TestBackend::start("deep").await);
    let dir = ManifestDir::new();
    dir.write(
        "services.yaml",
        &[
            service("shop", "root", &[root.addr]),
            service("shop", "sub", &[sub.addr]),
            service("shop", "deep", &[deep.addr]),
        ]
        .concat(),
    );
    dir.write(
        "routes.yaml",
        &[
            route("shop", "root", "www.example.com", "/", "root"),
            route("shop", "sub", "www.example.com", "/sub", "sub"),
            route("shop", "deep", "www.example.com", "/sub/deep", "deep"),
        ]
        .concat(),
    );
    let router = start_router(dir.path()).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;

    let cases = [
        ("/", "root"),
        ("/index.html", "root"),
        ("/sub", "sub"),
        ("/sub/", "sub"),
        ("/sub/page?q=1", "sub"),
        ("/subpar", "root"),
        ("/sub/deep", "deep"),
        ("/sub/deep/x", "deep"),
        ("/sub/deeper", "sub"),
        ("/SUB", "root"),
    ];
    for (path, want) in cases {
        let reply = client.get("www.example.com", path).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.backend(), want, "request path {path}");
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_with_trailing_slash_does_not_match_the_bare_path() {
    let (slash, other) = (TestBackend::start("slash").await, TestBackend::start("other").await);
    let dir = ManifestDir::new();
    dir.write(
        "all.yaml",
        &[
            service("ns", "slash", &[slash.addr]),
            route("ns", "slash", "a.example.com", "/sub/", "slash"),
            service("ns", "other", &[other.addr]),
            route("ns", "other", "b.example.com", "/sub", "other"),
        ]
        .concat(),
    );
    let router = start_router(dir.path()).await;

    assert_eq!(get(router.http_addr, "a.example.com", "/sub/").await.backend(), "slash");
    assert_eq!(get(router.http_addr, "a.example.com", "/sub/x").await.backend(), "slash");
    assert_eq!(get(router.http_addr, "a.example.com", "/sub").await.status, 503, "/sub/ must not match /sub");
    assert_eq!(get(router.http_addr, "b.example.com", "/sub").await.backend(), "other");
    assert_eq!(get(router.http_addr, "b.example.com", "/sub/").await.backend(), "other");
    assert_eq!(get(router.http_addr, "b.example.com", "/subx").await.status, 503);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_matching_ignores_case_trailing_dot_and_port() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    dir.write(
        "web.yaml",
        &[service("ns", "web", &[web.addr]), route("ns", "web", "Web.Example.com", "", "web")].concat(),
    );
    let router = start_router(dir.path()).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    for host in
        ["web.example.com", "WEB.EXAMPLE.COM", "web.example.com.", "web.example.com:8080", "web.example.com.:80"]
    {
        assert_eq!(client.get(host, "/").await.backend(), "web", "Host: {host}");
    }
    assert_eq!(client.get("other.example.com", "/").await.status, 503);
    assert_eq!(client.get("xweb.example.com", "/").await.status, 503);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_host_and_route_without_ready_endpoints_get_503_page() {
    let dir = ManifestDir::new();
    let dead: std::net::SocketAddr = "127.0.0.1:9".parse().expect("addr");
    dir.write("svc.yaml", &endpoint_slice("ns", "notready", &[], &[dead]));
    dir.write(
        "routes.yaml",
        &[
            route("ns", "notready", "notready.example.com", "", "notready"),
            route("ns", "nosvc", "nosvc.example.com", "", "missing"),
        ]
        .concat(),
    );
    let router = start_router(dir.path()).await;

    for host in ["unknown.example.com", "notready.example.com", "nosvc.example.com"] {
        let reply = get(router.http_addr, host, "/").await;
        assert_eq!(reply.status, 503, "{host}");
        assert!(reply.body.contains("Application is not available"), "{host}: {}", reply.body);
        assert_eq!(reply.headers["content-type"], "text/html; charset=utf-8");
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_spreads_requests_and_skips_a_dead_endpoint() {
    let (a, b) = (TestBackend::start("a").await, TestBackend::start("b").await);
    // A port nobody listens on: connect is refused, the request goes to the next endpoint.
    let dead: std::net::SocketAddr = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
        probe.local_addr().expect("addr")
    };
    let dir = ManifestDir::new();
    dir.write(
        "all.yaml",
        &[
            service("ns", "web", &[a.addr, dead, b.addr]),
            RouteSpec {
                annotations: &[("haproxy.router.openshift.io/balance", "roundrobin")],
                ..RouteSpec::new("ns", "web", "rr.example.com", "web")
            }
            .yaml(),
        ]
        .concat(),
    );
    let router = start_router(dir.path()).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    let mut counts = std::collections::BTreeMap::new();
    for _ in 0..20 {
        let reply = client.get("rr.example.com", "/").await;
        assert_eq!(reply.status, 200, "a dead endpoint must not fail the request");
        *counts.entry(reply.backend().to_string()).or_insert(0) += 1;
    }
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert!(counts.values().all(|&n| n >= 7), "roughly even split expected: {counts:?}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_port_selects_endpoints_by_port_name() {
    let (http, admin) = (TestBackend::start("http").await, TestBackend::start("admin").await);
    let dir = ManifestDir::new();
    let slice = format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: web-x\n  namespace: ns\n  labels:\n    kubernetes.io/service-name: web\naddressType: IPv4\nports:\n- name: http\n  port: {}\n- name: admin\n  port: {}\nendpoints:\n- addresses: [\"127.0.0.1\"]\n",
        http.addr.port(),
        admin.addr.port()
    );
    let by_name = "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: admin, namespace: ns}\nspec:\n  host: admin.example.com\n  port: {targetPort: admin}\n  to: {kind: Service, name: web}\n";
    let by_number = format!(
        "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {{name: http, namespace: ns}}\nspec:\n  host: http.example.com\n  port: {{targetPort: {}}}\n  to: {{kind: Service, name: web}}\n",
        http.addr.port()
    );
    dir.write("all.yaml", &format!("{slice}---\n{by_name}---\n{by_number}"));
    let router = start_router(dir.path()).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    for _ in 0..4 {
        assert_eq!(client.get("admin.example.com", "/").await.backend(), "admin");
        assert_eq!(client.get("http.example.com", "/").await.backend(), "http");
    }
    router.shutdown().await;
}
