//! HTTP/3 on the HTTPS port over UDP (ROUTER_ENABLE_HTTP3), with two independent real clients (quinn + h3, and
//! aioquic from PyPI) against real backends: GET and POST bodies through an edge and a reencrypt route, the same
//! forwarded headers as HTTP/2 (plus `x-forwarded-proto-version: h3`), the 503 page for an unknown host, the
//! `Alt-Svc` advertisement on TCP responses only where HTTP/3 serves (and nowhere when it is off), passthrough
//! and per-route client certificate names refused in the QUIC handshake (a request for such a host over another
//! name's connection gets 421), router-wide client certificates checked in the QUIC handshake, access log lines and metrics that say HTTP/3, and a shutdown that answers the
//! requests in flight, closes the connections and frees the UDP port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use router::access_log::Framing;
use router::config::{MutualTls, Settings};
use router::server::RunningRouter;
use router_tests::aioquic::{aioquic_request, pattern, AioquicRequest};
use router_tests::backend::{fnv1a, TestBackend, TlsEcho};
use router_tests::cli::curl_https;
use router_tests::client::get;
use router_tests::h3_client::{h3_client_config, h3_get, H3Client};
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::metrics_text::{samples, series_value};
use router_tests::pki::{Leaf, PemDir, TestCa};
use router_tests::tls_client::{client_config, https_get, Trust};
use router_tests::{eventually, start_tls_router};
use tokio::net::UdpSocket;

const CLIENT_CA: &str = "router.openshift.io/client-tls-ca";
/// How long a QUIC handshake waits where nothing should answer (a closed port only times out).
const NO_ANSWER: Duration = Duration::from_secs(2);

struct Fixture {
    _web: TestBackend,
    _pod: TestBackend,
    _echo: TlsEcho,
    dir: ManifestDir,
    files: PemDir,
    /// Signs the edge and reencrypt routes' own certificates.
    front_ca: TestCa,
    /// Signs the client certificates `auth.example.com` accepts.
    clients_ca: TestCa,
}

/// A ConfigMap `name` in `ns` whose key `ca-bundle.pem` holds `pem`.
fn config_map(name: &str, pem: &str) -> String {
    let body: String = pem.lines().map(|line| format!("    {line}\n")).collect();
    format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: ns\ndata:\n  ca-bundle.pem: |\n{body}")
}

fn edge(leaf: &Leaf) -> RouteTls<'_> {
    RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)
}

/// Backends `web` (HTTP/1.1) and `pod` (TLS), a TLS echo pod for passthrough; routes: edge `own.example.com`
/// and `shared.example.com` (the default certificate), reencrypt `re.example.com` to `pod`, passthrough
/// `pass.example.com`, edge `auth.example.com` checking client certificates itself, plain `plain.example.com`.
async fn fixture() -> Fixture {
    let (front_ca, pod_ca, clients_ca) = (TestCa::new("front-ca"), TestCa::new("pod-ca"), TestCa::new("clients-ca"));
    let web = TestBackend::start("web").await;
    let pod_leaf = pod_ca.leaf(&["pod.internal"]);
    let pod = TestBackend::start_tls("pod", &pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let pass_leaf = pod_ca.leaf(&["pass.example.com"]);
    let echo = TlsEcho::start(&pass_leaf.chain_pem(), &pass_leaf.key_pem).await;
    let leaf = |host: &str| front_ca.leaf(&[host]);
    let (own, re, auth) = (leaf("own.example.com"), leaf("re.example.com"), leaf("auth.example.com"));
    let routes = [
        RouteSpec { tls: Some(edge(&own)), ..RouteSpec::new("ns", "own", "own.example.com", "web") },
        RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "shared", "shared.example.com", "web") },
        RouteSpec {
            tls: Some(
                RouteTls::reencrypt().with_certificate(&re.cert_pem, &re.key_pem).with_destination_ca(&pod_ca.cert_pem),
            ),
            ..RouteSpec::new("ns", "re", "re.example.com", "pod")
        },
        RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("ns", "pass", "pass.example.com", "echo") },
        RouteSpec {
            annotations: &[(CLIENT_CA, "clients")],
            tls: Some(edge(&auth)),
            ..RouteSpec::new("ns", "auth", "auth.example.com", "web")
        },
        RouteSpec::new("ns", "plain", "plain.example.com", "web"),
    ];
    let mut yaml =
        [service("ns", "web", &[web.addr]), service("ns", "pod", &[pod.addr]), service("ns", "echo", &[echo.addr])]
            .concat();
    for route in &routes {
        yaml.push_str(&route.yaml());
    }
    yaml.push_str(&config_map("clients", &clients_ca.cert_pem));
    let dir = ManifestDir::new();
    dir.write("all.yaml", &yaml);
    let files = PemDir::new();
    files.write("front-ca.pem", &front_ca.cert_pem);
    Fixture { _web: web, _pod: pod, _echo: echo, dir, files, front_ca, clients_ca }
}

impl Fixture {
    fn settings(&self, http3: bool) -> Settings {
        let mut settings = Settings::for_loopback(self.dir.path());
        settings.http3.enable_http3 = http3;
        settings
    }

    async fn start(&self) -> (RunningRouter, SocketAddr) {
        let (router, https) = start_tls_router(self.settings(true)).await;
        let udp = router.http3_addr.expect("HTTP/3 listener");
        assert_eq!(udp.port(), https.port(), "UDP on the HTTPS port's number");
        (router, udp)
    }

    fn ca_file(&self) -> PathBuf {
        self.files.path().join("front-ca.pem")
    }

    fn trust(&self) -> Trust<'_> {
        Trust::Ca(&self.front_ca.cert_pem)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_post_through_edge_and_reencrypt_routes() {
    let fixture = fixture().await;
    let (router, udp) = fixture.start().await;
    let tls = h3_client_config(fixture.trust(), None);

    // The pod side is the route's own: HTTP/1.1 to `web`, HTTP/2 to the TLS pod that offers h2 (reencrypt).
    for (host, backend, pod_version) in [("own.example.com", "web", "HTTP/1.1"), ("re.example.com", "pod", "HTTP/2.0")]
    {
        let client = H3Client::connect(udp, host, tls.clone()).await.expect("QUIC handshake");
        let reply = client.get(host, "/h3?x=1").await.expect("GET");
        assert_eq!(reply.status, 200, "{host}: {}", reply.body);
        let report = reply.report();
        assert_eq!(report["backend"], backend, "{report}");
        assert_eq!(report["method"], "GET");
        assert_eq!(report["path"], "/h3?x=1");
        assert_eq!(report["version"], pod_version, "{report}");
        assert_eq!(reply.seen_header("x-forwarded-proto"), ["https"]);
        assert_eq!(reply.seen_header("x-forwarded-proto-version"), ["h3"]);
        assert_eq!(reply.seen_header("x-forwarded-host"), [host]);
        // :authority becomes the pod's Host (HTTP/1.1), or its :authority (HTTP/2, no Host header).
        match pod_version {
            "HTTP/1.1" => assert_eq!(reply.seen_header("host"), [host], "{report}"),
            _ => assert_eq!((report["authority"].as_str(), reply.seen_header("host").len()), (Some(host), 0)),
        }
        assert_eq!(reply.seen_header("x-forwarded-for"), ["127.0.0.1"]);
        assert!(reply.header("alt-svc").is_none(), "no Alt-Svc over HTTP/3 itself");
        if backend == "pod" {
            assert!(!report["tls"].is_null(), "reencrypt: TLS to the pod: {report}");
        }

        // Bodies: larger than any flow-control window's first grant, sent in many DATA frames.
        let body = Bytes::from(pattern(300_000));
        let reply = client
            .request(Method::POST, host, "/upload", &[("content-type", "application/octet-stream")], body.clone())
            .await
            .expect("POST");
        assert_eq!(reply.status, 200, "{host}: {}", reply.body);
        let report = reply.report();
        assert_eq!((report["method"].as_str(), report["body_len"].as_u64()), (Some("POST"), Some(300_000)));
        assert_eq!(report["body_fnv1a"], format!("{:016x}", fnv1a(&body)), "the body arrived intact");
        // Several requests on one connection, at once.
        let (a, b) = tokio::join!(client.get(host, "/a"), client.get(host, "/b"));
        for (reply, path) in [(a, "/a"), (b, "/b")] {
            let reply = reply.expect("concurrent GET");
            assert_eq!((reply.status.as_u16(), reply.report()["path"].as_str()), (200, Some(path)));
        }
        client.close().await;
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_host_gets_the_503_page_as_over_http2() {
    let fixture = fixture().await;
    let (router, udp) = fixture.start().await;
    let tls = h3_client_config(fixture.trust(), None);

    let reply = h3_get(udp, "own.example.com", "nowhere.example.com", "/", tls).await.expect("request");
    assert_eq!(reply.status, 503);
    assert!(reply.body.contains("Application is not available"), "{}", reply.body);
    let over_h2 = https_get(
        router.https_addr,
        Some("own.example.com"),
        "nowhere.example.com",
        "/",
        client_config(fixture.trust(), &["h2"], None),
    )
    .await;
    assert_eq!((over_h2.version, over_h2.status.as_u16()), (http::Version::HTTP_2, 503));
    assert_eq!(over_h2.body, reply.body, "the same page");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alt_svc_is_advertised_on_tcp_responses_of_the_routes_http3_serves() {
    let fixture = fixture().await;
    let (router, udp) = fixture.start().await;
    let https = router.https_addr;
    let expected = format!("h3=\":{}\"; ma=86400", udp.port());
    let ca = fixture.ca_file().to_string_lossy().into_owned();

    for (host, version) in
        [("own.example.com", "--http2"), ("own.example.com", "--http1.1"), ("re.example.com", "--http2")]
    {
        let reply = curl_https(https, host, "/", &[version, "--cacert", &ca]).await;
        assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
        assert_eq!(reply.header("alt-svc").as_deref(), Some(expected.as_str()), "{host} {version}");
    }
    let shared = curl_https(https, "shared.example.com", "/", &["-k"]).await;
    assert_eq!(
        shared.header("alt-svc").as_deref(),
        Some(expected.as_str()),
        "the default certificate serves HTTP/3 too"
    );
    // Not where HTTP/3 does not serve: a route checking client certificates itself, and plain HTTP.
    let auth = https_get(
        https,
        Some("auth.example.com"),
        "auth.example.com",
        "/",
        client_config(fixture.trust(), &["http/1.1"], Some(&fixture.clients_ca.client_leaf("alice"))),
    )
    .await;
    assert_eq!(auth.status, 200);
    assert!(auth.headers.get("alt-svc").is_none(), "client certificate route: {:?}", auth.headers.get("alt-svc"));
    let plain = get(router.http_addr, "plain.example.com", "/").await;
    assert_eq!(plain.status, 200);
    assert!(plain.headers.get("alt-svc").is_none(), "plain HTTP");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_setting_there_is_no_udp_listener_and_no_alt_svc() {
    let fixture = fixture().await;
    let (router, https) = start_tls_router(fixture.settings(false)).await;
    assert_eq!(router.http3_addr, None);
    let ca = fixture.ca_file().to_string_lossy().into_owned();
    let reply = curl_https(https, "own.example.com", "/", &["--http2", "--cacert", &ca]).await;
    assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
    assert!(reply.header("alt-svc").is_none(), "{:?}", reply.header("alt-svc"));
    let tls = h3_client_config(fixture.trust(), None);
    let refused = H3Client::connect_within(https, "own.example.com", tls, NO_ANSWER).await;
    assert!(refused.is_err(), "nothing answers QUIC on the HTTPS port");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passthrough_and_client_certificate_names_refuse_the_quic_handshake() {
    let fixture = fixture().await;
    let (router, udp) = fixture.start().await;
    let anything = h3_client_config(Trust::Anything, None);

    let passthrough = H3Client::connect(udp, "pass.example.com", anything.clone()).await;
    assert!(passthrough.is_err(), "passthrough is TCP only");
    // Even with a certificate the route accepts: its check is not made over QUIC, so QUIC does not serve it.
    let alice = fixture.clients_ca.client_leaf("alice");
    let auth = H3Client::connect(udp, "auth.example.com", h3_client_config(Trust::Anything, Some(&alice))).await;
    assert!(auth.is_err(), "a route checking client certificates itself stays on TCP");
    // Over a connection made for another name, a request for that route is misdirected, as over HTTP/2.
    let own = H3Client::connect(udp, "own.example.com", h3_client_config(fixture.trust(), Some(&alice)))
        .await
        .expect("handshake for own.example.com");
    let reply = own.get("auth.example.com", "/").await.expect("request");
    assert_eq!(reply.status, 421, "{}", reply.body);
    own.close().await;

    let metrics = get(router.stats_addr, "admin", "/metrics").await.body;
    for reason in ["http3_passthrough", "http3_route_client_certificates"] {
        let series = format!("router_tls_connection_failures_total{{reason=\"{reason}\"}}");
        assert!(series_value(&metrics, &series).is_some_and(|n| n >= 1.0), "{series}");
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_log_lines_and_metrics_say_http3() {
    let fixture = fixture().await;
    let syslog = UdpSocket::bind("127.0.0.1:0").await.expect("syslog listener");
    let mut settings = fixture.settings(true);
    settings.access_log.syslog_address = Some(syslog.local_addr().expect("addr").to_string());
    settings.access_log.log_level = "info".into();
    settings.access_log.syslog_framing = Framing::Raw;
    settings.access_log.syslog_format = Some(r#""%ft %b %ST %HM %HU %HV""#.into());
    let (router, _https) = start_tls_router(settings).await;
    let udp = router.http3_addr.expect("HTTP/3 listener");

    let reply = h3_get(udp, "own.example.com", "own.example.com", "/logged", h3_client_config(fixture.trust(), None))
        .await
        .expect("request");
    assert_eq!(reply.status, 200);
    let mut buf = vec![0u8; 65536];
    let n = tokio::time::timeout(Duration::from_secs(5), syslog.recv(&mut buf)).await.expect("a line").expect("recv");
    let line = String::from_utf8_lossy(&buf[..n]).trim().to_string();
    // As HAProxy logs HTTP/2: the SSL frontend's `~`, the request's absolute target.
    assert_eq!(line, "fe_sni~ be_edge_http:ns:own 200 GET https://own.example.com/logged HTTP/3.0");

    let metrics = get(router.stats_addr, "admin", "/metrics").await.body;
    let handshakes = r#"router_tls_handshakes_total{version="TLSv1_3",alpn="h3"}"#;
    assert_eq!(series_value(&metrics, handshakes), Some(1.0), "{metrics}");
    let responses = samples(&metrics, "haproxy_backend_http_responses_total");
    let own_2xx = responses
        .iter()
        .find(|line| {
            line.contains(r#"backend="https-edge""#)
                && line.contains(r#"route="own""#)
                && line.contains(r#"code="2xx""#)
        })
        .unwrap_or_else(|| panic!("no 2xx row of the route: {responses:?}"));
    assert!(own_2xx.ends_with(" 1"), "one response counted on the route's backend: {own_2xx}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_requests_in_flight_then_closes_and_frees_the_port() {
    let fixture = fixture().await;
    let (router, udp) = fixture.start().await;
    let tls = h3_client_config(fixture.trust(), None);
    let idle = H3Client::connect(udp, "own.example.com", tls.clone()).await.expect("handshake");
    assert_eq!(idle.get("own.example.com", "/").await.expect("request").status, 200);
    let busy = H3Client::connect(udp, "own.example.com", tls.clone()).await.expect("handshake");
    let in_flight = tokio::spawn(async move {
        let reply = busy.get("own.example.com", "/slow/700").await;
        (busy, reply)
    });
    // The request is at the pod (the backend counts it) before the router is told to stop.
    let stats = router.stats_addr;
    eventually("the slow request in flight", Duration::from_secs(5), || async move {
        let metrics = get(stats, "admin", "/metrics").await.body;
        let sessions = samples(&metrics, "haproxy_backend_current_sessions").into_iter().map(str::to_string);
        sessions.into_iter().find(|line| line.contains(r#"route="own""#) && line.ends_with(" 1")).map(drop)
    })
    .await;

    let stopped = tokio::spawn(router.shutdown());
    let closed = idle.closed_within(Duration::from_secs(5)).await;
    assert!(closed.is_some(), "an idle connection is closed at once");
    let (busy, reply) = in_flight.await.expect("client task");
    let reply = reply.expect("the request in flight is answered");
    assert_eq!((reply.status.as_u16(), reply.report()["path"].as_str()), (200, Some("/slow/700")));
    assert!(busy.closed_within(Duration::from_secs(5)).await.is_some(), "then its connection closes");
    tokio::time::timeout(Duration::from_secs(10), stopped).await.expect("the router stops").expect("shutdown");
    // The endpoint and its socket are gone (once its closed connections drained): the port binds again, and
    // nothing answers QUIC.
    eventually("the UDP port free after shutdown", Duration::from_secs(3), || async move {
        std::net::UdpSocket::bind(udp).ok().map(drop)
    })
    .await;
    assert!(H3Client::connect_within(udp, "own.example.com", tls, NO_ANSWER).await.is_err());
    idle.close().await;
    busy.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aioquic_gets_and_posts_through_edge_and_reencrypt() {
    let Some(python) = router_tests::aioquic::python() else { return };
    let fixture = fixture().await;
    let (router, udp) = fixture.start().await;
    let ca_file = fixture.ca_file();

    for (host, backend) in [("own.example.com", "web"), ("re.example.com", "pod")] {
        let request = AioquicRequest {
            addr: udp,
            sni: host,
            authority: host,
            method: "GET",
            path: "/from-aioquic",
            body_bytes: 0,
            ca_file: &ca_file,
            insecure: false,
        };
        let reply = aioquic_request(&python, &request).await;
        assert_eq!(reply["status"], 200, "{host}: {reply}");
        let report: serde_json::Value = serde_json::from_str(reply["body"].as_str().expect("body")).expect("report");
        assert_eq!((report["backend"].as_str(), report["path"].as_str()), (Some(backend), Some("/from-aioquic")));
        assert_eq!(report["headers"]["x-forwarded-proto-version"][0], "h3");
        assert_eq!(report["headers"]["user-agent"][0], "aioquic");

        let post = AioquicRequest { method: "POST", path: "/upload", body_bytes: 200_000, ..request };
        let reply = aioquic_request(&python, &post).await;
        assert_eq!(reply["status"], 200, "{host}: {reply}");
        let report: serde_json::Value = serde_json::from_str(reply["body"].as_str().expect("body")).expect("report");
        assert_eq!(report["body_len"], 200_000);
        assert_eq!(report["body_fnv1a"], format!("{:016x}", fnv1a(&pattern(200_000))));
    }
    let unknown = AioquicRequest {
        addr: udp,
        sni: "own.example.com",
        authority: "nowhere.example.com",
        method: "GET",
        path: "/",
        body_bytes: 0,
        ca_file: &ca_file,
        insecure: false,
    };
    assert_eq!(aioquic_request(&python, &unknown).await["status"], 503);
    // Refused in the handshake, whatever certificate the client would accept; the same client gets in on an
    // edge name.
    let passthrough =
        AioquicRequest { sni: "pass.example.com", authority: "pass.example.com", insecure: true, ..unknown };
    let refused = aioquic_request(&python, &passthrough).await;
    assert!(refused["error"].is_string(), "passthrough refuses QUIC: {refused}");
    let edge = AioquicRequest { sni: "own.example.com", authority: "own.example.com", ..passthrough };
    assert_eq!(aioquic_request(&python, &edge).await["status"], 200);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn router_wide_client_certificates_are_checked_over_quic_too() {
    let fixture = fixture().await;
    let mut settings = fixture.settings(true);
    settings.tls.mutual_tls_auth = MutualTls::Required;
    settings.tls.mutual_tls_auth_ca = Some(fixture.files.write("clients-ca.pem", &fixture.clients_ca.cert_pem));
    let (router, _https) = start_tls_router(settings).await;
    let udp = router.http3_addr.expect("HTTP/3 listener");

    // TLS 1.3: the client may finish its handshake before the router's refusal arrives; no request gets through.
    let anonymous =
        h3_get(udp, "own.example.com", "own.example.com", "/", h3_client_config(fixture.trust(), None)).await;
    assert!(anonymous.is_err(), "no client certificate: refused, got {anonymous:?}");
    let rogue = TestCa::new("rogue").client_leaf("mallory");
    let tls = h3_client_config(fixture.trust(), Some(&rogue));
    let rogue = h3_get(udp, "own.example.com", "own.example.com", "/", tls).await;
    assert!(rogue.is_err(), "a certificate from another CA: refused, got {rogue:?}");

    let alice = fixture.clients_ca.client_leaf("alice");
    let client = H3Client::connect(udp, "own.example.com", h3_client_config(fixture.trust(), Some(&alice)))
        .await
        .expect("alice's handshake");
    let reply = client
        .request(Method::GET, "own.example.com", "/", &[("x-ssl-client-cn", "mallory")], Bytes::new())
        .await
        .expect("alice is served");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.seen_header("x-ssl-client-verify"), ["0"], "verified");
    let cn: Vec<String> =
        reply.seen_header("x-ssl-client-cn").iter().map(|v| v.trim_matches('"').to_string()).collect();
    assert_eq!(cn, ["alice"], "the client's forged value is replaced");
    client.close().await;
    router.shutdown().await;
}
