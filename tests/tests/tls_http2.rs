//! HTTP/2: ALPN `h2` only for SNI that matched a route's own certificate (never on the default certificate,
//! never with ROUTER_DISABLE_HTTP2), h2c to pods whose port says `appProtocol: h2c`, and WebSocket upgrades over
//! edge HTTP/1.1.

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::cli::curl_https;
use router_tests::client::get;
use router_tests::manifests::{service, service_with_app_protocol, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{PemDir, TestCa};
use router_tests::start_tls_router;
use router_tests::tls_client::{client_config, https_get, negotiated_alpn, tls_connect, websocket_echo, Trust};

struct Fixture {
    _web: TestBackend,
    _dir: ManifestDir,
    files: PemDir,
    ca: TestCa,
}

/// A backend `web`, an edge route `own.example.com` with its own certificate, and an edge route
/// `shared.example.com` on the default certificate.
async fn fixture() -> Fixture {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("h2-ca");
    let leaf = ca.leaf(&["own.example.com"]);
    let files = PemDir::new();
    files.write("ca.pem", &ca.cert_pem);
    let dir = ManifestDir::new();
    let own = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "own", "own.example.com", "web")
    };
    let shared =
        RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "shared", "shared.example.com", "web") };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), own.yaml(), shared.yaml()].concat());
    Fixture { _web: web, _dir: dir, files, ca }
}

impl Fixture {
    fn settings(&self) -> Settings {
        Settings::for_loopback(self._dir.path())
    }

    fn ca_file(&self) -> String {
        self.files.path().join("ca.pem").to_string_lossy().into_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_is_offered_only_with_a_routes_own_certificate() {
    let fixture = fixture().await;
    let (router, https) = start_tls_router(fixture.settings()).await;

    let own = curl_https(https, "own.example.com", "/", &["--http2", "--cacert", &fixture.ca_file()]).await;
    assert_eq!((own.exit_code, own.status), (0, 200), "{}", own.stderr);
    assert_eq!(own.http_version, "2", "own certificate: HTTP/2");
    assert_eq!(own.report()["backend"], "web");
    let own_11 = curl_https(https, "own.example.com", "/", &["--http1.1", "--cacert", &fixture.ca_file()]).await;
    assert_eq!((own_11.status, own_11.http_version.as_str()), (200, "1.1"), "{}", own_11.stderr);
    let shared = curl_https(https, "shared.example.com", "/", &["--http2", "-k"]).await;
    assert_eq!((shared.exit_code, shared.status), (0, 200), "{}", shared.stderr);
    assert_eq!(shared.http_version, "1.1", "default certificate: no h2 (connection coalescing)");

    let offer = client_config(Trust::Anything, &["h2", "http/1.1"], None);
    let stream = tls_connect(https, Some("own.example.com"), offer.clone()).await.expect("handshake");
    assert_eq!(negotiated_alpn(&stream).as_deref(), Some("h2"));
    drop(stream);
    let stream = tls_connect(https, Some("shared.example.com"), offer.clone()).await.expect("handshake");
    assert_ne!(negotiated_alpn(&stream).as_deref(), Some("h2"));
    let stream = tls_connect(https, None, offer.clone()).await.expect("handshake without SNI");
    assert_ne!(negotiated_alpn(&stream).as_deref(), Some("h2"));
    // Over h2 the request still routes by :authority.
    let reply = https_get(https, Some("own.example.com"), "own.example.com", "/h2", offer).await;
    assert_eq!(reply.version, http::Version::HTTP_2);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.report()["path"], "/h2");
    assert_eq!(reply.seen_header("x-forwarded-proto"), ["https"]);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_http2_keeps_every_connection_on_http_1_1() {
    let fixture = fixture().await;
    let mut settings = fixture.settings();
    settings.tls.disable_http2 = true;
    let (router, https) = start_tls_router(settings).await;

    let own = curl_https(https, "own.example.com", "/", &["--http2", "--cacert", &fixture.ca_file()]).await;
    assert_eq!((own.exit_code, own.status), (0, 200), "{}", own.stderr);
    assert_eq!(own.http_version, "1.1");
    let stream = tls_connect(https, Some("own.example.com"), client_config(Trust::Anything, &["h2", "http/1.1"], None))
        .await
        .expect("handshake");
    assert_ne!(negotiated_alpn(&stream).as_deref(), Some("h2"));
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_with_app_protocol_h2c_are_spoken_to_over_http2() {
    let (h2c, alias, plain) = (
        TestBackend::start_h2c("h2c").await,
        TestBackend::start_h2c("alias").await,
        TestBackend::start_h2c("plain").await,
    );
    let dir = ManifestDir::new();
    let edge = RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "h2c", "h2c.example.com", "h2c") };
    dir.write(
        "all.yaml",
        &[
            service_with_app_protocol("ns", "h2c", &[h2c.addr], "h2c"),
            service_with_app_protocol("ns", "alias", &[alias.addr], "kubernetes.io/h2c"),
            service("ns", "plain", &[plain.addr]),
            edge.yaml(),
            RouteSpec::new("ns", "alias", "alias.example.com", "alias").yaml(),
            RouteSpec::new("ns", "plain", "plain.example.com", "plain").yaml(),
        ]
        .concat(),
    );
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let reply = curl_https(https, "h2c.example.com", "/over-edge", &["-k", "--http1.1"]).await;
    assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
    assert_eq!(reply.http_version, "1.1", "the client side stays HTTP/1.1");
    let report = reply.report();
    assert_eq!(report["backend"], "h2c");
    assert_eq!(report["version"], "HTTP/2.0", "edge to an h2c pod: {report}");
    assert_eq!(report["path"], "/over-edge");

    let reply = get(router.http_addr, "alias.example.com", "/over-http").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.report()["version"], "HTTP/2.0", "kubernetes.io/h2c on a plain route");
    let reply = get(router.http_addr, "plain.example.com", "/").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.report()["version"], "HTTP/1.1", "no appProtocol: HTTP/1.1 to the pod");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_upgrade_over_edge_http_1_1() {
    let fixture = fixture().await;
    let (router, https) = start_tls_router(fixture.settings()).await;

    let config = client_config(Trust::Ca(&fixture.ca.cert_pem), &["http/1.1"], None);
    let mut stream = tls_connect(https, Some("own.example.com"), config).await.expect("handshake");
    let head = websocket_echo(&mut stream, "own.example.com").await;
    assert!(head.to_ascii_lowercase().contains("x-backend: web"), "{head}");
    // Ended before the router stops, which would otherwise wait for the tunnel.
    drop(stream);
    router.shutdown().await;
}
