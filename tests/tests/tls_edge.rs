//! Edge termination on :443: the route's own certificate (checked by curl against the test CA), the default
//! certificate for unknown SNI and no SNI (seen by openssl s_client), wildcard certificates, the insecure edge
//! termination policies on :80, HSTS, extended validation of route certificates (expiry tolerated as OpenShift
//! does), X-Forwarded-Proto, plain
//! routes not served on :443, garbage and split ClientHellos, and the sticky cookie's Secure flag.

use std::time::Duration;

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::cli::{curl_https, s_client};
use router_tests::client::get;
use router_tests::manifests::{route, service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{PemDir, TestCa};
use router_tests::tls_client::{
    client_config, https_get, peer_certificate, peer_chain, split_hello_get, status_of, tls_connect, Trust,
};
use router_tests::{read_until_closed, route_outcome, start_tls_router};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

fn path_arg(path: &std::path::Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_route_is_served_with_its_own_certificate_and_chain() {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("edge-ca");
    let leaf = ca.leaf(&["secure.example.com"]);
    let files = PemDir::new();
    let ca_file = files.write("ca.pem", &ca.cert_pem);
    let dir = ManifestDir::new();
    let edge = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem).with_ca_certificate(&ca.cert_pem)),
        ..RouteSpec::new("ns", "web", "secure.example.com", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), edge.yaml()].concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let reply = curl_https(https, "secure.example.com", "/hello?x=1", &["--cacert", path_arg(&ca_file)]).await;
    assert_eq!(reply.exit_code, 0, "curl verifies the route's certificate: {}", reply.stderr);
    assert_eq!(reply.status, 200);
    let report = reply.report();
    assert_eq!(report["backend"], "web");
    assert_eq!(report["path"], "/hello?x=1");
    assert!(report["tls"].is_null(), "edge speaks plain HTTP to the pod: {report}");
    assert_eq!(reply.seen_header("x-forwarded-proto"), ["https"]);
    let forwarded = reply.seen_header("forwarded").join(",");
    assert!(forwarded.contains("proto=https"), "Forwarded: {forwarded}");

    let stream = tls_connect(https, Some("secure.example.com"), client_config(Trust::Ca(&ca.cert_pem), &[], None))
        .await
        .expect("handshake with the route's certificate");
    assert_eq!(peer_certificate(&stream), Some(leaf.der.clone()));
    assert_eq!(peer_chain(&stream), vec![leaf.der.clone(), ca.der()], "caCertificate is served as the chain");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_sni_and_no_sni_get_the_default_certificate() {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("edge-ca");
    let (own, default) = (ca.leaf(&["secure.example.com"]), ca.leaf(&["router-default.test"]));
    let files = PemDir::new();
    let dir = ManifestDir::new();
    let with_cert = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&own.cert_pem, &own.key_pem)),
        ..RouteSpec::new("ns", "web", "secure.example.com", "web")
    };
    let without_cert =
        RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "nocert", "nocert.example.com", "web") };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), with_cert.yaml(), without_cert.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.default_certificate_path = Some(files.write("default.pem", &default.bundle_pem()));
    let (router, https) = start_tls_router(settings).await;

    let unknown = s_client(https, Some("unknown.example.com"), &[]).await;
    let subject = unknown.subject().unwrap_or_else(|| panic!("no certificate: {}", unknown.stderr));
    assert!(subject.contains("router-default.test"), "unknown SNI: {subject}");
    let none = s_client(https, None, &[]).await;
    let subject = none.subject().unwrap_or_else(|| panic!("no certificate: {}", none.stderr));
    assert!(subject.contains("router-default.test"), "no SNI: {subject}");
    let known = s_client(https, Some("secure.example.com"), &[]).await;
    let subject = known.subject().unwrap_or_else(|| panic!("no certificate: {}", known.stderr));
    assert!(subject.contains("secure.example.com"), "route SNI: {subject}");

    let anything = client_config(Trust::Anything, &[], None);
    let no_sni = tls_connect(https, None, anything.clone()).await.expect("handshake without SNI");
    assert_eq!(peer_certificate(&no_sni), Some(default.der.clone()));
    // A route without a certificate of its own is served with the default one.
    let reply = https_get(https, Some("nocert.example.com"), "nocert.example.com", "/", anything.clone()).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.backend(), "web");
    assert_eq!(reply.peer_certificate, Some(default.der.clone()));
    let unknown = https_get(https, Some("unknown.example.com"), "unknown.example.com", "/", anything).await;
    assert_eq!(unknown.status, 503);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_certificate_is_generated_when_none_is_configured() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let edge = RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "web", "gen.example.com", "web") };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), edge.yaml()].concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let anything = client_config(Trust::Anything, &[], None);
    let no_sni = tls_connect(https, None, anything.clone()).await.expect("handshake without SNI");
    let generated = peer_certificate(&no_sni).expect("a certificate is presented");
    let reply = https_get(https, Some("gen.example.com"), "gen.example.com", "/", anything).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.peer_certificate, Some(generated), "one generated default certificate for all");
    let curl = curl_https(https, "gen.example.com", "/", &["-k"]).await;
    assert_eq!((curl.exit_code, curl.status), (0, 200), "{}", curl.stderr);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wildcard_route_certificate_covers_its_subdomains() {
    let wild = TestBackend::start("wild").await;
    let ca = TestCa::new("wild-ca");
    let leaf = ca.leaf(&["*.wild.test"]);
    let files = PemDir::new();
    let ca_file = files.write("ca.pem", &ca.cert_pem);
    let dir = ManifestDir::new();
    let route = RouteSpec {
        extra_spec: "  wildcardPolicy: Subdomain\n",
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "wild", "www.wild.test", "wild")
    };
    dir.write("all.yaml", &[service("ns", "wild", &[wild.addr]), route.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.routing.allow_wildcard_routes = true;
    let (router, https) = start_tls_router(settings).await;

    for host in ["www.wild.test", "shop.wild.test"] {
        let reply = curl_https(https, host, "/", &["--cacert", path_arg(&ca_file)]).await;
        assert_eq!(reply.exit_code, 0, "{host}: {}", reply.stderr);
        assert_eq!(reply.status, 200, "{host}");
        assert_eq!(reply.report()["backend"], "wild", "{host}");
    }
    let stream = tls_connect(https, Some("any.wild.test"), client_config(Trust::Ca(&ca.cert_pem), &[], None))
        .await
        .expect("handshake for a subdomain");
    assert_eq!(peer_certificate(&stream), Some(leaf.der.clone()));
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_edge_termination_policies_on_port_80() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let edge = |name: &'static str, host: &'static str, policy: Option<&'static str>| {
        let tls = match policy {
            Some(policy) => RouteTls::edge().with_insecure_policy(policy),
            None => RouteTls::edge(),
        };
        RouteSpec { tls: Some(tls), ..RouteSpec::new("ns", name, host, "web") }.yaml()
    };
    dir.write(
        "all.yaml",
        &[
            service("ns", "web", &[web.addr]),
            edge("unset", "unset.example.com", None),
            edge("none", "none.example.com", Some("None")),
            edge("allow", "allow.example.com", Some("Allow")),
            edge("redirect", "redirect.example.com", Some("Redirect")),
        ]
        .concat(),
    );
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    assert_eq!(get(router.http_addr, "unset.example.com", "/").await.status, 503);
    assert_eq!(get(router.http_addr, "none.example.com", "/").await.status, 503);
    let allowed = get(router.http_addr, "allow.example.com", "/x").await;
    assert_eq!(allowed.status, 200);
    assert_eq!(allowed.seen_header("x-forwarded-proto"), ["http"]);
    for host in ["redirect.example.com", "redirect.example.com:8080", "REDIRECT.example.com"] {
        let redirected = get(router.http_addr, host, "/a/b?x=1").await;
        assert_eq!(redirected.status, 302, "{host}");
        assert_eq!(redirected.headers["location"], "https://redirect.example.com/a/b?x=1", "{host}");
    }

    let anything = client_config(Trust::Anything, &[], None);
    for host in ["unset.example.com", "none.example.com", "allow.example.com", "redirect.example.com"] {
        let reply = https_get(https, Some(host), host, "/", anything.clone()).await;
        assert_eq!(reply.status, 200, "{host} over TLS");
        assert_eq!(reply.seen_header("x-forwarded-proto"), ["https"], "{host}");
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hsts_annotation_adds_strict_transport_security() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let value = "max-age=31536000;includeSubDomains;preload";
    let hsts = RouteSpec {
        annotations: &[("haproxy.router.openshift.io/hsts_header", value)],
        tls: Some(RouteTls::edge()),
        ..RouteSpec::new("ns", "hsts", "hsts.example.com", "web")
    };
    let plain = RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "plain", "plain.example.com", "web") };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), hsts.yaml(), plain.yaml()].concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let reply = curl_https(https, "hsts.example.com", "/", &["-k"]).await;
    assert_eq!(reply.status, 200, "{}", reply.stderr);
    assert_eq!(reply.header("strict-transport-security").as_deref(), Some(value));
    let reply = curl_https(https, "plain.example.com", "/", &["-k"]).await;
    assert_eq!(reply.status, 200, "{}", reply.stderr);
    assert_eq!(reply.header("strict-transport-security"), None);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_route_certificates_are_rejected_while_a_good_one_serves() {
    let web = TestBackend::start("web").await;
    let (ca, other_ca, rsa_ca) = (TestCa::new("good-ca"), TestCa::new("other-ca"), TestCa::new_rsa("rsa-ca"));
    let files = PemDir::new();
    let ca_file = files.write("ca.pem", &ca.cert_pem);
    let good = ca.leaf(&["good.example.com"]);
    let (mismatch_a, mismatch_b) = (ca.leaf(&["mismatch.example.com"]), ca.leaf(&["mismatch.example.com"]));
    let expired = ca.expired_leaf(&["expired.example.com"]);
    let foreign = other_ca.leaf(&["foreign.example.com"]);
    let sha1 = rsa_ca.sha1_leaf(&["sha1.example.com"], files.path());
    let cases: [(&str, &str, &str, &str); 5] = [
        ("good", &good.cert_pem, &good.key_pem, &ca.cert_pem),
        ("mismatch", &mismatch_a.cert_pem, &mismatch_b.key_pem, &ca.cert_pem),
        ("expired", &expired.cert_pem, &expired.key_pem, &ca.cert_pem),
        ("foreign", &foreign.cert_pem, &foreign.key_pem, &ca.cert_pem),
        ("sha1", &sha1.cert_pem, &sha1.key_pem, &rsa_ca.cert_pem),
    ];
    let mut yaml = service("ns", "web", &[web.addr]);
    let hosts: Vec<String> = cases.iter().map(|(name, ..)| format!("{name}.example.com")).collect();
    for ((name, cert, key, ca_pem), host) in cases.iter().zip(&hosts) {
        let tls = RouteTls::edge().with_certificate(cert, key).with_ca_certificate(ca_pem);
        yaml.push_str(&RouteSpec { tls: Some(tls), ..RouteSpec::new("ns", name, host, "web") }.yaml());
    }
    let dir = ManifestDir::new();
    dir.write("all.yaml", &yaml);
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    // Expiry alone does not reject a route: OpenShift's extended validation ignores x509.Expired, and the
    // expired certificate is served.
    for admitted in ["good", "expired"] {
        let outcome = route_outcome(&router, "ns", admitted).await;
        assert_eq!(outcome["admitted"], true, "{admitted}: {outcome}");
    }
    let anything = client_config(Trust::Anything, &[], None);
    let reply = https_get(https, Some("expired.example.com"), "expired.example.com", "/", anything).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.peer_certificate, Some(expired.der.clone()));
    for bad in ["mismatch", "foreign", "sha1"] {
        let outcome = route_outcome(&router, "ns", bad).await;
        assert_eq!(outcome["admitted"], false, "{bad}: {outcome}");
        assert_eq!(outcome["reason"], "ExtendedValidationFailed", "{bad}: {outcome}");
        let reply = curl_https(https, &format!("{bad}.example.com"), "/", &["-k"]).await;
        assert_eq!(reply.status, 503, "{bad}: a rejected route is not served: {}", reply.stderr);
    }
    let reply = curl_https(https, "good.example.com", "/", &["--cacert", path_arg(&ca_file)]).await;
    assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_route_is_not_served_on_443() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    dir.write(
        "all.yaml",
        &[service("ns", "web", &[web.addr]), route("ns", "web", "plain.example.com", "", "web")].concat(),
    );
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;
    assert_eq!(get(router.http_addr, "plain.example.com", "/").await.status, 200);
    let reply = curl_https(https, "plain.example.com", "/", &["-k"]).await;
    assert_eq!(reply.exit_code, 0, "the handshake succeeds with the default certificate: {}", reply.stderr);
    assert_eq!(reply.status, 503);
    router.shutdown().await;
}

/// A real ClientHello for `sni`, as rustls writes it.
fn client_hello(sni: &str) -> Vec<u8> {
    let config = client_config(Trust::Anything, &["h2", "http/1.1"], None);
    let mut connection =
        rustls::ClientConnection::new(config, rustls::pki_types::ServerName::try_from(sni.to_string()).expect("SNI"))
            .expect("client connection");
    let mut hello = Vec::new();
    while connection.wants_write() {
        connection.write_tls(&mut hello).expect("ClientHello");
    }
    hello
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_tls_bytes_and_malformed_client_hellos_are_closed_and_the_router_keeps_serving() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let edge = RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "web", "edge.example.com", "web") };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), edge.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.inspect_delay = Duration::from_secs(2);
    let (router, https) = start_tls_router(settings).await;

    let hello = client_hello("edge.example.com");
    let mut bad_record = vec![0x16, 0x03, 0x01, 0x00, 0x20];
    bad_record.extend_from_slice(&[0xff; 0x20]);
    let mut wrong_type = vec![0x16, 0x03, 0x01, 0x00, 0x08, 0x02, 0x00, 0x00, 0x04];
    wrong_type.extend_from_slice(&[0; 4]);
    // (what, bytes, whether the client then closes its sending side). Complete garbage must be refused
    // without waiting for more; incomplete hellos end with EOF (or the inspect delay).
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("plain HTTP", b"GET / HTTP/1.1\r\nHost: edge.example.com\r\n\r\n".to_vec(), false),
        ("garbage handshake body", bad_record, false),
        ("a ServerHello instead of a ClientHello", wrong_type, false),
        ("zeros", vec![0u8; 1024], false),
        ("a record claiming 64 KiB then EOF", vec![0x16, 0x03, 0x01, 0xff, 0xff, 0x01, 0x00], true),
        ("a truncated ClientHello then EOF", hello[..hello.len() / 2].to_vec(), true),
    ];
    for (what, bytes, then_eof) in cases {
        let mut stream = TcpStream::connect(https).await.expect("connect :443");
        stream.write_all(&bytes).await.expect("write");
        if then_eof {
            let _ = stream.shutdown().await;
        }
        let (received, closed) = read_until_closed(&mut stream, Duration::from_secs(15)).await;
        assert!(closed, "{what}: the router closes the connection");
        assert!(!received.starts_with(b"HTTP/"), "{what}: no HTTP answer in clear text");
        let reply = https_get(
            https,
            Some("edge.example.com"),
            "edge.example.com",
            "/",
            client_config(Trust::Anything, &[], None),
        )
        .await;
        assert_eq!(reply.status, 200, "after {what} the router still serves");
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_hello_split_over_many_tcp_segments_is_routed_by_its_sni() {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("split-ca");
    let leaf = ca.leaf(&["split.example.com"]);
    let dir = ManifestDir::new();
    let edge = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "web", "split.example.com", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), edge.yaml()].concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    for (chunk, pause_ms) in [(7, 10), (1, 1), (64, 50)] {
        // Trusting only the test CA proves the SNI picked the route's certificate, not the default one.
        let config = client_config(Trust::Ca(&ca.cert_pem), &[], None);
        let raw = tokio::task::spawn_blocking(move || {
            split_hello_get(
                https,
                "split.example.com",
                "split.example.com",
                "/split",
                config,
                chunk,
                Duration::from_millis(pause_ms),
            )
        })
        .await
        .expect("client thread")
        .unwrap_or_else(|e| panic!("{chunk}-byte pieces: {e}"));
        assert_eq!(status_of(&raw), 200, "{chunk}-byte pieces: {raw}");
        assert!(raw.contains("\"backend\":\"web\""), "{raw}");
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_cookie_is_secure_on_edge_unless_the_policy_allows_http() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let secure = RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "secure", "secure.test", "web") };
    let allow = RouteSpec {
        tls: Some(RouteTls::edge().with_insecure_policy("Allow")),
        ..RouteSpec::new("ns", "allow", "allow.test", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), secure.yaml(), allow.yaml()].concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let cookie = |reply: &router_tests::client::Reply| {
        reply.headers.get("set-cookie").and_then(|v| v.to_str().ok()).map(str::to_string)
    };
    let anything = client_config(Trust::Anything, &[], None);
    let reply = https_get(https, Some("secure.test"), "secure.test", "/", anything.clone()).await;
    let set = cookie(&reply).expect("a sticky cookie on edge");
    assert!(set.split(';').any(|attr| attr.trim().eq_ignore_ascii_case("secure")), "{set}");
    let reply = https_get(https, Some("allow.test"), "allow.test", "/", anything).await;
    let set = cookie(&reply).expect("a sticky cookie on edge with Allow");
    assert!(!set.split(';').any(|attr| attr.trim().eq_ignore_ascii_case("secure")), "{set}");
    let plain = get(router.http_addr, "allow.test", "/").await;
    let set = cookie(&plain).expect("a sticky cookie on :80 with Allow");
    assert!(!set.split(';').any(|attr| attr.trim().eq_ignore_ascii_case("secure")), "{set}");
    router.shutdown().await;
}
