//! Passthrough on :443: the ClientHello and everything after it reach the pod untouched (the pod terminates
//! TLS), large transfers stay byte-exact both ways, a half-closed client still gets everything back, a client
//! address keeps its pod (source hash), and SNI that names no passthrough route is terminated by the router.

use std::net::IpAddr;
use std::time::Duration;

use router::config::Settings;
use router_tests::backend::{TestBackend, TlsEcho};
use router_tests::client::get;
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::TestCa;
use router_tests::start_tls_router;
use router_tests::tls_client::{
    client_config, connect_from, https_get, https_get_over, peer_certificate, tls_connect, tls_handshake, Trust,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `len` bytes of a fixed pseudo-random sequence (xorshift), so misordered or dropped bytes show.
fn pattern(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y).or_else(|| (a.len() != b.len()).then(|| a.len().min(b.len())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passthrough_relays_32_mib_intact_both_ways() {
    let ca = TestCa::new("pod-ca");
    let pod_leaf = ca.leaf(&["pass.example.com"]);
    let echo = TlsEcho::start(&pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let dir = ManifestDir::new();
    let route =
        RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("ns", "echo", "pass.example.com", "echo") };
    dir.write("all.yaml", &[service("ns", "echo", &[echo.addr]), route.yaml()].concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let stream = tls_connect(https, Some("pass.example.com"), client_config(Trust::Ca(&ca.cert_pem), &[], None))
        .await
        .expect("handshake with the pod through the router");
    assert_eq!(peer_certificate(&stream), Some(pod_leaf.der.clone()), "the pod, not the router, terminates TLS");

    let data = pattern(32 << 20);
    let (mut reader, mut writer) = tokio::io::split(stream);
    let sent = data.clone();
    let writing = tokio::spawn(async move {
        writer.write_all(&sent).await.expect("send 32 MiB");
        writer.shutdown().await.expect("close the sending side");
        writer
    });
    let mut received = Vec::with_capacity(data.len());
    tokio::time::timeout(Duration::from_secs(180), reader.read_to_end(&mut received))
        .await
        .expect("the echo ends (bound: 180 s)")
        .expect("read the echo");
    let _writer = writing.await.expect("writer");
    assert_eq!(received.len(), data.len(), "every byte comes back");
    assert_eq!(first_difference(&received, &data), None, "bytes come back in order and unchanged");
    assert_eq!(echo.last_sni().as_deref(), Some("pass.example.com"), "the client's ClientHello reached the pod");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_closed_client_still_reads_everything_the_pod_sends() {
    let ca = TestCa::new("pod-ca");
    let pod_leaf = ca.leaf(&["half.example.com"]);
    let echo = TlsEcho::start(&pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let dir = ManifestDir::new();
    let route =
        RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("ns", "echo", "half.example.com", "echo") };
    dir.write("all.yaml", &[service("ns", "echo", &[echo.addr]), route.yaml()].concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    for size in [1, 1000, 100_000] {
        let mut stream =
            tls_connect(https, Some("half.example.com"), client_config(Trust::Ca(&ca.cert_pem), &[], None))
                .await
                .expect("handshake with the pod");
        let data = pattern(size);
        stream.write_all(&data).await.expect("send");
        // close_notify and FIN: the pod sees the end only if the router passes the half-close on.
        stream.shutdown().await.expect("half-close");
        let mut received = Vec::new();
        tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut received))
            .await
            .unwrap_or_else(|_| panic!("{size} bytes: the pod's close reaches the client (bound: 30 s)"))
            .expect("read the echo");
        assert_eq!(first_difference(&received, &data), None, "{size} bytes");
    }
    assert_eq!(echo.accepted(), 3);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_address_keeps_its_pod_across_connections() {
    let ca = TestCa::new("pod-ca");
    let leaf = ca.leaf(&["sticky.example.com"]);
    let pods = [
        TestBackend::start_tls("pod-a", &leaf.chain_pem(), &leaf.key_pem).await,
        TestBackend::start_tls("pod-b", &leaf.chain_pem(), &leaf.key_pem).await,
        TestBackend::start_tls("pod-c", &leaf.chain_pem(), &leaf.key_pem).await,
    ];
    let dir = ManifestDir::new();
    let route = RouteSpec {
        tls: Some(RouteTls::passthrough()),
        ..RouteSpec::new("ns", "sticky", "sticky.example.com", "sticky")
    };
    let addrs: Vec<_> = pods.iter().map(|p| p.addr).collect();
    dir.write("all.yaml", &[service("ns", "sticky", &addrs), route.yaml()].concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let config = client_config(Trust::Ca(&ca.cert_pem), &["http/1.1"], None);
    for source in ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"] {
        let source: IpAddr = source.parse().expect("source address");
        let mut seen = Vec::new();
        for _ in 0..4 {
            let tcp = connect_from(Some(source), https).await.expect("connect from the source address");
            let tls = tls_handshake(tcp, Some("sticky.example.com"), config.clone()).await.expect("handshake");
            let reply = https_get_over(tls, "sticky.example.com", "/", &[]).await.expect("GET");
            assert_eq!(reply.status, 200);
            assert_eq!(reply.report()["tls"]["sni"], "sticky.example.com");
            seen.push(reply.backend().to_string());
        }
        assert!(seen.iter().all(|pod| *pod == seen[0]), "client {source} moved between pods: {seen:?}");
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sni_without_a_passthrough_route_is_terminated_by_the_router() {
    let ca = TestCa::new("ca");
    let (pod_leaf, edge_leaf) = (ca.leaf(&["pass.example.com"]), ca.leaf(&["edge.example.com"]));
    let pod = TestBackend::start_tls("pod", &pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let pass =
        RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("ns", "pass", "pass.example.com", "pod") };
    let redirect = RouteSpec {
        tls: Some(RouteTls::passthrough().with_insecure_policy("Redirect")),
        ..RouteSpec::new("ns", "pass-redirect", "redirect.example.com", "pod")
    };
    let edge = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&edge_leaf.cert_pem, &edge_leaf.key_pem)),
        ..RouteSpec::new("ns", "edge", "edge.example.com", "web")
    };
    dir.write(
        "all.yaml",
        &[
            service("ns", "pod", &[pod.addr]),
            service("ns", "web", &[web.addr]),
            pass.yaml(),
            redirect.yaml(),
            edge.yaml(),
        ]
        .concat(),
    );
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;
    let verified = client_config(Trust::Ca(&ca.cert_pem), &["http/1.1"], None);

    let through = https_get(https, Some("pass.example.com"), "pass.example.com", "/p", verified.clone()).await;
    assert_eq!(through.status, 200);
    assert_eq!(through.backend(), "pod");
    assert_eq!(through.peer_certificate, Some(pod_leaf.der.clone()));
    assert_eq!(through.report()["tls"]["sni"], "pass.example.com", "the pod saw the client's ClientHello");
    assert!(through.seen_header("x-forwarded-for").is_empty(), "passthrough adds no headers");

    let terminated = https_get(https, Some("edge.example.com"), "edge.example.com", "/e", verified).await;
    assert_eq!(terminated.status, 200);
    assert_eq!(terminated.backend(), "web");
    assert_eq!(terminated.peer_certificate, Some(edge_leaf.der.clone()));
    assert!(terminated.report()["tls"].is_null());

    let anything = client_config(Trust::Anything, &["http/1.1"], None);
    let unknown = https_get(https, Some("nothing.example.com"), "nothing.example.com", "/", anything).await;
    assert_eq!(unknown.status, 503, "unknown SNI: terminated with the default certificate, no route");

    assert_eq!(get(router.http_addr, "pass.example.com", "/").await.status, 503, "passthrough is not on :80");
    let redirected = get(router.http_addr, "redirect.example.com", "/r?q=1").await;
    assert_eq!(redirected.status, 302);
    assert_eq!(redirected.headers["location"], "https://redirect.example.com/r?q=1");
    router.shutdown().await;
}
