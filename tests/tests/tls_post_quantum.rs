//! The post-quantum hybrid X25519MLKEM768 on :443 with the default ROUTER_CURVES: a rustls client offering it
//! (as Chrome and Firefox do) negotiates it, a classic client (openssl s_client 3.0, curl) still gets X25519, and
//! ROUTER_CURVES without the hybrid leaves the hybrid client on X25519. The ignored test `handshake_cost` times
//! full handshakes with and without the hybrid (docs/tls-key-exchange.md has its numbers):
//! `cargo nextest run -p router-tests --test tls_post_quantum --run-ignored only --no-capture`.
#![cfg(feature = "aws-lc-rs")]

use std::net::SocketAddr;

use router::config::Settings;
use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::cli::{curl_https, s_client};
use router_tests::handshakes::{client_offering, compare, timed_handshake};
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{PemDir, TestCa};
use router_tests::start_tls_router;
use rustls::crypto::aws_lc_rs::kx_group::X25519MLKEM768;
use rustls::crypto::ring::kx_group::{SECP256R1, X25519};
use rustls::NamedGroup;

const HOST: &str = "pq.example.com";

/// A router with one edge route for [`HOST`] (ECDSA P-256 certificate of a test CA), `curves` as ROUTER_CURVES.
async fn router(curves: Option<&str>) -> (RunningRouter, SocketAddr, TestCa, TestBackend, ManifestDir) {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("pq-ca");
    let leaf = ca.leaf(&[HOST]);
    let dir = ManifestDir::new();
    let route = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "pq", HOST, "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), route.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.curves = curves.map(str::to_string);
    let (router, https) = start_tls_router(settings).await;
    (router, https, ca, web, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hybrid_clients_get_x25519mlkem768_and_classic_clients_x25519() {
    let (router, https, ca, _web, _dir) = router(None).await;

    // As browsers do: the hybrid first (its key share sent), X25519 next.
    let hybrid = client_offering(&[X25519MLKEM768, X25519]);
    let (group, _) = timed_handshake(https, HOST, hybrid).await;
    assert_eq!(group, NamedGroup::X25519MLKEM768);
    // A client that knows the hybrid but prefers X25519 keeps X25519 (the client's order decides).
    let (group, _) = timed_handshake(https, HOST, client_offering(&[X25519, X25519MLKEM768])).await;
    assert_eq!(group, NamedGroup::X25519);

    // OpenSSL 3.0 knows no ML-KEM: X25519, and curl completes a request.
    let classic = s_client(https, Some(HOST), &["-tls1_3"]).await;
    assert!(classic.stdout.contains("Server Temp Key: X25519"), "{}", classic.stdout);
    let files = PemDir::new();
    let ca_file = files.write("ca.pem", &ca.cert_pem);
    let reply = curl_https(https, HOST, "/", &["--cacert", ca_file.to_str().expect("UTF-8 path")]).await;
    assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curves_without_the_hybrid_leave_hybrid_clients_on_a_classic_group() {
    let (router, https, _ca, _web, _dir) = router(Some("X25519:P-256")).await;
    let (group, _) = timed_handshake(https, HOST, client_offering(&[X25519MLKEM768, X25519])).await;
    assert_eq!(group, NamedGroup::X25519);
    let (group, _) = timed_handshake(https, HOST, client_offering(&[X25519MLKEM768, SECP256R1])).await;
    assert_eq!(group, NamedGroup::secp256r1);
    router.shutdown().await;
}

/// Times 300 full handshakes per client (rounds interleaved) on the default ROUTER_CURVES; prints medians.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, run by hand"]
async fn handshake_cost() {
    let (router, https, _ca, _web, _dir) = router(None).await;
    let clients = [
        ("X25519MLKEM768", client_offering(&[X25519MLKEM768])),
        ("X25519", client_offering(&[X25519])),
        ("P-256", client_offering(&[SECP256R1])),
    ];
    for (name, client) in &clients {
        let _warm = timed_handshake(https, HOST, std::sync::Arc::clone(client)).await;
        println!("warm-up {name} done");
    }
    for (name, median, p90) in compare(https, HOST, &clients, 300).await {
        println!("handshake {name}: median {median:?}, p90 {p90:?}");
    }
    router.shutdown().await;
}
