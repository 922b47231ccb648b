//! ALPN `h2` only on a certificate that exactly one route uses, as the OpenShift router writes its crt-list: a
//! certificate carried by two routes (two paths of one host, or two hosts), or a route's certificate that is
//! the default certificate, keeps HTTP/1.1, so that clients cannot coalesce one connection across routes.

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::cli::{curl_https, s_client};
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{Leaf, PemDir, TestCa};
use router_tests::start_tls_router;
use router_tests::tls_client::{client_config, negotiated_alpn, tls_connect, Trust};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_only_on_a_certificate_exactly_one_route_uses() {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("alpn-ca");
    let alone = ca.leaf(&["alone.example.com"]);
    let paths = ca.leaf(&["paths.example.com"]);
    let two_hosts = ca.leaf(&["one.example.com", "two.example.com"]);
    let default = ca.leaf(&["default.example.com", "copy.example.com"]);
    let files = PemDir::new();
    files.write("ca.pem", &ca.cert_pem);
    files.write("default.pem", &default.bundle_pem());
    let cacert = files.path().join("ca.pem").to_string_lossy().into_owned();

    let edge = |name: &'static str, host: &'static str, path: &'static str, leaf: &Leaf| {
        RouteSpec {
            path,
            tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
            ..RouteSpec::new("ns", name, host, "web")
        }
        .yaml()
    };
    let dir = ManifestDir::new();
    let manifests = [
        service("ns", "web", &[web.addr]),
        edge("alone", "alone.example.com", "", &alone),
        edge("paths-a", "paths.example.com", "/a", &paths),
        edge("paths-b", "paths.example.com", "/b", &paths),
        edge("one", "one.example.com", "", &two_hosts),
        edge("two", "two.example.com", "", &two_hosts),
        edge("copy", "copy.example.com", "", &default),
    ];
    dir.write("all.yaml", &manifests.concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.default_certificate_path = Some(files.path().join("default.pem"));
    let (router, https) = start_tls_router(settings).await;

    let offer = client_config(Trust::Ca(&ca.cert_pem), &["h2", "http/1.1"], None);
    let alpn = |sni: &'static str| {
        let offer = offer.clone();
        async move {
            let stream = tls_connect(https, Some(sni), offer).await.unwrap_or_else(|e| panic!("{sni}: {e}"));
            negotiated_alpn(&stream)
        }
    };
    assert_eq!(alpn("alone.example.com").await.as_deref(), Some("h2"), "one route, one certificate");
    for sni in ["paths.example.com", "one.example.com", "two.example.com", "copy.example.com"] {
        assert_eq!(alpn(sni).await.as_deref(), Some("http/1.1"), "{sni}: a shared certificate");
    }

    // The same with real clients.
    let h2 = curl_https(https, "alone.example.com", "/", &["--http2", "--cacert", &cacert]).await;
    assert_eq!((h2.status, h2.http_version.as_str()), (200, "2"), "{}", h2.stderr);
    let shared = curl_https(https, "paths.example.com", "/a", &["--http2", "--cacert", &cacert]).await;
    assert_eq!((shared.status, shared.http_version.as_str()), (200, "1.1"), "{}", shared.stderr);
    assert_eq!(shared.report()["backend"], "web");
    let openssl = s_client(https, Some("one.example.com"), &["-alpn", "h2,http/1.1"]).await;
    assert_eq!(openssl.alpn(), Some("http/1.1"), "{}", openssl.stdout);
    let openssl = s_client(https, Some("alone.example.com"), &["-alpn", "h2,http/1.1"]).await;
    assert_eq!(openssl.alpn(), Some("h2"), "{}", openssl.stdout);
    router.shutdown().await;
}
