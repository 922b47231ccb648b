//! The TLS test harness on its own, without a router: TLS, h2c and echo backends, the rustls clients (SNI,
//! ALPN, split ClientHello), curl and openssl against a TLS backend, and the TLS manifest builders.

use std::time::Duration;

use http::Version;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use router_tests::backend::{TestBackend, TlsEcho};
use router_tests::cli::{curl_https, s_client};
use router_tests::manifests::{service_with_app_protocol, RouteSpec, RouteTls};
use router_tests::pki::{PemDir, TestCa};
use router_tests::read_until_closed;
use router_tests::tls_client::{
    client_config, https_get, negotiated_alpn, peer_chain, request_over, split_hello_get, status_of, tls_connect,
    try_https_get, Trust,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_backend_reports_sni_alpn_and_version() {
    let ca = TestCa::new("harness-ca");
    let leaf = ca.leaf(&["pod.example.com"]);
    let pod = TestBackend::start_tls("pod", &leaf.chain_pem(), &leaf.key_pem).await;

    let h1 = client_config(Trust::Ca(&ca.cert_pem), &["http/1.1"], None);
    let reply = https_get(pod.addr, Some("pod.example.com"), "pod.example.com", "/one", h1).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.backend(), "pod");
    assert_eq!(reply.version, Version::HTTP_11);
    let report = reply.report();
    assert_eq!(report["version"], "HTTP/1.1");
    assert_eq!(report["tls"]["sni"], "pod.example.com");
    assert_eq!(report["tls"]["alpn"], "http/1.1");
    assert_eq!(report["path"], "/one");
    assert!(report["peer"].as_str().is_some_and(|p| p.starts_with("127.0.0.1:")), "{report}");

    let h2 = client_config(Trust::Ca(&ca.cert_pem), &["h2", "http/1.1"], None);
    let reply = https_get(pod.addr, Some("pod.example.com"), "pod.example.com", "/two", h2).await;
    assert_eq!(reply.version, Version::HTTP_2);
    assert_eq!(reply.report()["version"], "HTTP/2.0");
    assert_eq!(reply.report()["tls"]["alpn"], "h2");

    let stream = tls_connect(pod.addr, None, client_config(Trust::Anything, &[], None)).await.expect("no SNI");
    assert_eq!(peer_chain(&stream), vec![leaf.der.clone(), ca.der()]);
    assert_eq!(negotiated_alpn(&stream), None);
    let reply = https_get(pod.addr, None, "pod.example.com", "/", client_config(Trust::Anything, &[], None)).await;
    assert!(reply.report()["tls"]["sni"].is_null(), "no SNI sent for an IP address");

    // A client that trusts another CA refuses the pod.
    let other = TestCa::new("other");
    let refused = try_https_get(
        pod.addr,
        Some("pod.example.com"),
        "pod.example.com",
        "/",
        client_config(Trust::Ca(&other.cert_pem), &[], None),
        &[],
    )
    .await;
    assert!(refused.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_backend_speaks_prior_knowledge_http2_and_http1() {
    let pod = TestBackend::start_h2c("h2c").await;
    let stream = TcpStream::connect(pod.addr).await.expect("connect");
    let reply = request_over(stream, Version::HTTP_2, "h2c.example.com", "/p", &[]).await.expect("h2c request");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.report()["version"], "HTTP/2.0");
    assert!(reply.report()["tls"].is_null());
    let stream = TcpStream::connect(pod.addr).await.expect("connect");
    let reply = request_over(stream, Version::HTTP_11, "h2c.example.com", "/p", &[]).await.expect("h1 request");
    assert_eq!(reply.report()["version"], "HTTP/1.1");
    // The plain backend now reports its version too.
    let plain = TestBackend::start("plain").await;
    assert_eq!(router_tests::client::get(plain.addr, "x", "/").await.report()["version"], "HTTP/1.1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_echo_returns_every_byte_and_closes_after_the_client() {
    let ca = TestCa::new("echo-ca");
    let leaf = ca.leaf(&["echo.example.com"]);
    let echo = TlsEcho::start(&leaf.chain_pem(), &leaf.key_pem).await;
    let config = client_config(Trust::Ca(&ca.cert_pem), &[], None);

    let stream = tls_connect(echo.addr, Some("echo.example.com"), config.clone()).await.expect("handshake");
    let data: Vec<u8> = (0..(4 << 20)).map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let (mut reader, mut writer) = tokio::io::split(stream);
    let sent = data.clone();
    let writing = tokio::spawn(async move {
        writer.write_all(&sent).await.expect("send");
        writer.shutdown().await.expect("half-close");
        writer
    });
    let mut received = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), reader.read_to_end(&mut received))
        .await
        .expect("echo ends")
        .expect("read");
    let _writer = writing.await.expect("writer");
    assert!(received == data, "echo returned {} of {} bytes, or changed them", received.len(), data.len());

    let mut stream = tls_connect(echo.addr, Some("echo.example.com"), config).await.expect("handshake");
    stream.write_all(b"abc").await.expect("send");
    stream.shutdown().await.expect("half-close");
    let mut received = Vec::new();
    stream.read_to_end(&mut received).await.expect("read");
    assert_eq!(received, b"abc");
    assert_eq!(echo.accepted(), 2);
    assert_eq!(echo.last_sni().as_deref(), Some("echo.example.com"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_client_hello_driver_completes_a_request() {
    let ca = TestCa::new("split-ca");
    let leaf = ca.leaf(&["split.example.com"]);
    let pod = TestBackend::start_tls("pod", &leaf.chain_pem(), &leaf.key_pem).await;
    let config = client_config(Trust::Ca(&ca.cert_pem), &[], None);
    let addr = pod.addr;
    let raw = tokio::task::spawn_blocking(move || {
        split_hello_get(addr, "split.example.com", "split.example.com", "/s", config, 5, Duration::from_millis(2))
    })
    .await
    .expect("thread")
    .expect("request over a split ClientHello");
    assert_eq!(status_of(&raw), 200, "{raw}");
    assert!(raw.contains("\"sni\":\"split.example.com\""), "{raw}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_and_openssl_against_a_tls_backend() {
    let ca = TestCa::new("cli-ca");
    let leaf = ca.leaf(&["cli.example.com"]);
    let pod = TestBackend::start_tls("pod", &leaf.chain_pem(), &leaf.key_pem).await;
    let files = PemDir::new();
    let ca_file = files.write("ca.pem", &ca.cert_pem);
    let ca_arg = ca_file.to_str().expect("path");

    let reply = curl_https(pod.addr, "cli.example.com", "/c", &["--cacert", ca_arg, "--http2"]).await;
    assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
    assert_eq!(reply.http_version, "2");
    assert_eq!(reply.header("x-backend").as_deref(), Some("pod"));
    assert_eq!(reply.report()["tls"]["sni"], "cli.example.com");
    let reply = curl_https(pod.addr, "cli.example.com", "/c", &["--cacert", ca_arg, "--http1.1"]).await;
    assert_eq!(reply.http_version, "1.1");
    let unverified = curl_https(pod.addr, "cli.example.com", "/", &[]).await;
    assert_ne!(unverified.exit_code, 0, "curl checks certificates");
    assert_eq!(unverified.status, 0);

    let out = s_client(pod.addr, Some("cli.example.com"), &["-alpn", "h2,http/1.1"]).await;
    assert!(out.subject().is_some_and(|s| s.contains("cli.example.com")), "{}", out.stdout);
    assert_eq!(out.alpn(), Some("h2"));
    let out = s_client(pod.addr, None, &[]).await;
    assert!(out.subject().is_some_and(|s| s.contains("cli.example.com")), "{}", out.stdout);

    // A plain-text request to a TLS port gets closed.
    let mut stream = TcpStream::connect(pod.addr).await.expect("connect");
    stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.expect("write");
    let (_, closed) = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    assert!(closed);
}

#[test]
fn tls_route_and_h2c_service_manifests_parse() {
    let ca = TestCa::new("m");
    let leaf = ca.leaf(&["m.example.com"]);
    let yaml = RouteSpec {
        tls: Some(
            RouteTls::reencrypt()
                .with_certificate(&leaf.cert_pem, &leaf.key_pem)
                .with_ca_certificate(&ca.cert_pem)
                .with_destination_ca(&ca.cert_pem)
                .with_insecure_policy("Redirect"),
        ),
        ..RouteSpec::new("ns", "m", "m.example.com", "svc")
    }
    .yaml();
    let route: router::model::Route =
        serde_saphyr::from_str(yaml.trim_end().trim_end_matches("---")).expect("route parses");
    let tls = route.spec.tls.expect("tls");
    assert_eq!(tls.termination, "reencrypt");
    assert_eq!(tls.certificate.as_deref().map(str::trim_end), Some(leaf.cert_pem.trim_end()));
    assert_eq!(tls.key.as_deref().map(str::trim_end), Some(leaf.key_pem.trim_end()));
    assert_eq!(tls.ca_certificate.as_deref().map(str::trim_end), Some(ca.cert_pem.trim_end()));
    assert_eq!(tls.destination_ca_certificate.as_deref().map(str::trim_end), Some(ca.cert_pem.trim_end()));
    assert_eq!(tls.insecure_edge_termination_policy.as_deref(), Some("Redirect"));
    let plain = RouteSpec::new("ns", "p", "p.example.com", "svc").yaml();
    let route: router::model::Route = serde_saphyr::from_str(plain.trim_end().trim_end_matches("---")).expect("parses");
    assert!(route.spec.tls.is_none());

    let addr = "127.0.0.1:8443".parse().expect("addr");
    let yaml = service_with_app_protocol("ns", "svc", &[addr], "kubernetes.io/h2c");
    let documents: Vec<&str> = yaml.split("---\n").filter(|d| !d.trim().is_empty()).collect();
    assert_eq!(documents.len(), 2);
    let service: k8s_openapi::api::core::v1::Service = serde_saphyr::from_str(documents[0]).expect("service");
    let port = &service.spec.expect("spec").ports.expect("ports")[0];
    assert_eq!(port.app_protocol.as_deref(), Some("kubernetes.io/h2c"));
    let slice: EndpointSlice = serde_saphyr::from_str(documents[1]).expect("endpoint slice");
    let port = &slice.ports.expect("ports")[0];
    assert_eq!(port.app_protocol.as_deref(), Some("kubernetes.io/h2c"));
    assert_eq!(port.port, Some(8443));
}
