//! The aws-lc-rs crypto provider (ROUTER_TLS_PROVIDER=aws-lc-rs) serving :443 to real clients: an edge route over
//! HTTP/2 and HTTP/1.1 (curl, verified against the route's CA) and TLS 1.3 as openssl s_client sees it; and the
//! provider being one per process: a second router asking for another is refused at start, not silently given the
//! first one. Its own test binary: the provider is chosen once per process. Built only with the feature that compiles
//! aws-lc-rs in: `cargo test -p router-tests --features aws-lc-rs --test tls_provider`.
#![cfg(feature = "aws-lc-rs")]

use router::config::Settings;
use router::server::StartError;
use router::tls::TlsProvider;
use router_tests::backend::TestBackend;
use router_tests::cli::{curl_https, s_client};
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{PemDir, TestCa};
use router_tests::start_tls_router;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_lc_rs_serves_an_edge_route_and_is_the_only_provider_of_the_process() {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("provider-ca");
    let leaf = ca.leaf(&["secure.example.com"]);
    let files = PemDir::new();
    let ca_file = files.write("ca.pem", &ca.cert_pem);
    let ca_arg = ca_file.to_str().expect("UTF-8 temp path");
    let dir = ManifestDir::new();
    let edge = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "web", "secure.example.com", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), edge.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.tls_provider = TlsProvider::AwsLcRs;
    let (router, https) = start_tls_router(settings).await;

    for (version, flag) in [("2", "--http2"), ("1.1", "--http1.1")] {
        let reply = curl_https(https, "secure.example.com", "/p", &["--cacert", ca_arg, flag]).await;
        assert_eq!(reply.exit_code, 0, "curl {flag}: {}", reply.stderr);
        assert_eq!((reply.status, reply.http_version.as_str()), (200, version));
        assert_eq!(reply.report()["backend"], "web");
    }
    let hello = s_client(https, Some("secure.example.com"), &["-tls1_3"]).await;
    assert!(hello.stdout.contains("New, TLSv1.3, Cipher is TLS_"), "{}", hello.stdout);
    assert!(hello.subject().is_some_and(|s| s.contains("secure.example.com")), "{}", hello.stdout);

    let mut ring = Settings::for_loopback(dir.path());
    ring.tls.tls_provider = TlsProvider::Ring;
    match router::server::start(ring).await {
        Err(StartError::TlsProvider(error)) => assert!(error.to_string().contains("already"), "{error}"),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a second provider in the same process was accepted"),
    }
    router.shutdown().await;
}
