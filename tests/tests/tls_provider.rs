//! The aws-lc-rs crypto provider (ROUTER_TLS_PROVIDER=aws-lc-rs) serving :443 to real clients: an edge route over
//! HTTP/2 and HTTP/1.1 (curl, verified against the route's CA), TLS 1.3 as openssl s_client sees it and the hybrid
//! X25519MLKEM768 to a rustls client offering it (ignored `handshake_cost_aws_lc_rs`: full handshakes timed as in
//! tls_post_quantum's `handshake_cost`, for the provider comparison); and the
//! provider being one per process: a second router asking for another is refused at start, not silently given the
//! first one. Its own test binary: the provider is chosen once per process. Built with the feature that compiles
//! aws-lc-rs in (on by default).
#![cfg(feature = "aws-lc-rs")]

use router::config::Settings;
use router::server::StartError;
use router::tls::TlsProvider;
use router_tests::backend::TestBackend;
use router_tests::cli::{curl_https, s_client};
use router_tests::handshakes::{client_offering, compare, timed_handshake};
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{PemDir, TestCa};
use router_tests::start_tls_router;
use rustls::crypto::aws_lc_rs::kx_group::X25519MLKEM768;
use rustls::crypto::ring::kx_group::{SECP256R1, X25519};
use rustls::NamedGroup;

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
    let hybrid = client_offering(&[X25519MLKEM768, X25519]);
    let (group, _) = timed_handshake(https, "secure.example.com", hybrid).await;
    assert_eq!(group, NamedGroup::X25519MLKEM768);

    let mut ring = Settings::for_loopback(dir.path());
    ring.tls.tls_provider = TlsProvider::Ring;
    match router::server::start(ring).await {
        Err(StartError::TlsProvider(error)) => assert!(error.to_string().contains("already"), "{error}"),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a second provider in the same process was accepted"),
    }
    router.shutdown().await;
}

/// tls_post_quantum's `handshake_cost` with ROUTER_TLS_PROVIDER=aws-lc-rs (this binary's provider): 300 full
/// handshakes per client, rounds interleaved; prints medians.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, run by hand"]
async fn handshake_cost_aws_lc_rs() {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("provider-ca");
    let leaf = ca.leaf(&["pq.example.com"]);
    let dir = ManifestDir::new();
    let edge = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "pq", "pq.example.com", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), edge.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.tls_provider = TlsProvider::AwsLcRs;
    let (router, https) = start_tls_router(settings).await;
    let clients = [
        ("X25519MLKEM768", client_offering(&[X25519MLKEM768])),
        ("X25519", client_offering(&[X25519])),
        ("P-256", client_offering(&[SECP256R1])),
    ];
    for (_, client) in &clients {
        let _warm = timed_handshake(https, "pq.example.com", std::sync::Arc::clone(client)).await;
    }
    for (name, median, p90) in compare(https, "pq.example.com", &clients, 300).await {
        println!("handshake aws-lc-rs {name}: median {median:?}, p90 {p90:?}");
    }
    router.shutdown().await;
}
