//! OCSP stapling (ROUTER_OCSP_STAPLING) against a real responder on loopback (`openssl ocsp`), seen by
//! `openssl s_client -status`: the default certificate, an edge route's certificate (chain in its PEM) and a
//! reencrypt route's (issuer in `caCertificate`) stapled with the CA signing the responses, and with a
//! delegated responder certificate; a responder that goes down leaves the last
//! good response stapled; a revoked certificate stops being stapled; a response signed by a stranger is never
//! stapled; and with the setting off nothing is fetched.

use std::time::Duration;

use router::config::Settings;
use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::cli::{s_client, SClient};
use router_tests::client::get;
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::metrics_text::series_value;
use router_tests::ocsp_responder::{OcspResponder, Status};
use router_tests::pki::{Leaf, TestCa};
use router_tests::start_tls_router;

/// Serial numbers: eight bytes, the first non-zero and below 0x80, so the DER INTEGER and OpenSSL's hex agree.
const DEFAULT_SERIAL: u64 = 0x1000_0000_0000_0001;
const EDGE_SERIAL: u64 = 0x1000_0000_0000_0002;
const EDGE: &str = "stapled.example.com";
const REENCRYPT_SERIAL: u64 = 0x1000_0000_0000_0003;
const REENCRYPT: &str = "reencrypted.example.com";

struct Setup {
    router: RunningRouter,
    https: std::net::SocketAddr,
    _web: TestBackend,
    _dir: ManifestDir,
}

/// A router serving `default` as its default certificate and `edge` for [`EDGE`], stapling when `stapling`.
async fn router(default: &Leaf, edge: &Leaf, stapling: bool) -> Setup {
    router_with(default, edge, None, stapling).await
}

/// [`router`], plus a reencrypt route for [`REENCRYPT`] serving `reencrypt` (its issuer in `caCertificate`).
async fn router_with(default: &Leaf, edge: &Leaf, reencrypt: Option<&Leaf>, stapling: bool) -> Setup {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let chain = edge.chain_pem();
    let route = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&chain, &edge.key_pem)),
        ..RouteSpec::new("ns", "stapled", EDGE, "web")
    };
    let mut yaml = [service("ns", "web", &[web.addr]), route.yaml()].concat();
    if let Some(leaf) = reencrypt {
        let tls =
            RouteTls::reencrypt().with_certificate(&leaf.cert_pem, &leaf.key_pem).with_ca_certificate(&leaf.issuer_pem);
        yaml.push_str(&RouteSpec { tls: Some(tls), ..RouteSpec::new("ns", "reencrypted", REENCRYPT, "web") }.yaml());
    }
    dir.write("all.yaml", &yaml);
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.default_certificate = Some(default.bundle_pem());
    settings.tls.ocsp_stapling = stapling;
    settings.tls.ocsp_refresh_interval = Duration::from_secs(1);
    let (router, https) = start_tls_router(settings).await;
    Setup { router, https, _web: web, _dir: dir }
}

async fn status(setup: &Setup, sni: &str) -> SClient {
    s_client(setup.https, Some(sni), &["-status"]).await
}

fn stapled_good(reply: &SClient) -> bool {
    reply.stdout.contains("OCSP Response Status: successful") && reply.stdout.contains("Cert Status: good")
}

fn not_stapled(reply: &SClient) -> bool {
    reply.stdout.contains("OCSP response: no response sent")
}

/// Polls s_client for `sni` every 250 ms until `wanted` holds, for at most `limit`.
async fn until(setup: &Setup, sni: &str, limit: Duration, what: &str, wanted: fn(&SClient) -> bool) -> SClient {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let reply = status(setup, sni).await;
        if wanted(&reply) {
            return reply;
        }
        assert!(tokio::time::Instant::now() < deadline, "{sni}: {what} not seen within {limit:?}:\n{}", reply.stdout);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn metric(setup: &Setup, series: &str) -> f64 {
    let page = get(setup.router.stats_addr, "admin", "/metrics").await.body;
    series_value(&page, series).unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_and_edge_certificates_are_stapled_kept_while_the_responder_is_down_and_dropped_when_revoked() {
    let (addr, url) = OcspResponder::reserve();
    let ca = TestCa::new("ocsp-ca");
    let default = ca.leaf_with_ocsp(&["default.example.com"], DEFAULT_SERIAL, &url);
    let edge = ca.leaf_with_ocsp(&[EDGE], EDGE_SERIAL, &url);
    let reencrypt = ca.leaf_with_ocsp(&[REENCRYPT], REENCRYPT_SERIAL, &url);
    let good = Status::Good;
    let statuses = [(DEFAULT_SERIAL, good), (EDGE_SERIAL, good), (REENCRYPT_SERIAL, good)];
    let mut responder = OcspResponder::start(addr, &ca, None, &statuses);
    let setup = router_with(&default, &edge, Some(&reencrypt), true).await;

    let limit = Duration::from_secs(15);
    let reply = until(&setup, EDGE, limit, "a good staple", stapled_good).await;
    assert!(reply.subject().is_some_and(|s| s.contains(EDGE)), "{}", reply.stdout);
    let reply = until(&setup, "other.example.com", limit, "a good staple on the default", stapled_good).await;
    assert!(reply.subject().is_some_and(|s| s.contains("default.example.com")), "{}", reply.stdout);
    let reply = until(&setup, REENCRYPT, limit, "a good staple on the reencrypt route", stapled_good).await;
    assert!(reply.subject().is_some_and(|s| s.contains(REENCRYPT)), "{}", reply.stdout);
    assert_eq!(metric(&setup, "router_ocsp_stapled_certificates").await, 3.0);
    assert!(metric(&setup, "router_ocsp_fetches_total").await >= 3.0);

    // Down: fetches fail (refresh every second), the responses (valid for a day) stay stapled.
    responder.stop();
    let failed = r#"router_ocsp_fetch_failures_total{reason="fetch"}"#;
    let deadline = tokio::time::Instant::now() + limit;
    while metric(&setup, failed).await < 2.0 {
        assert!(tokio::time::Instant::now() < deadline, "no failed fetch counted");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(stapled_good(&status(&setup, EDGE).await), "the last good response stays while the responder is down");
    assert!(stapled_good(&status(&setup, "other.example.com").await));

    // Back, with the edge certificate revoked: its staple goes, the default's stays.
    let statuses = [(DEFAULT_SERIAL, good), (EDGE_SERIAL, Status::Revoked), (REENCRYPT_SERIAL, good)];
    let responder = OcspResponder::start(addr, &ca, None, &statuses);
    until(&setup, EDGE, limit, "no staple once revoked", not_stapled).await;
    assert!(stapled_good(&status(&setup, "other.example.com").await));
    assert!(metric(&setup, r#"router_ocsp_fetch_failures_total{reason="revoked"}"#).await >= 1.0);
    assert!(stapled_good(&status(&setup, REENCRYPT).await));
    assert_eq!(metric(&setup, "router_ocsp_stapled_certificates").await, 2.0);
    drop(responder);
    setup.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegated_responder_is_trusted_and_a_stranger_is_not() {
    let (addr, url) = OcspResponder::reserve();
    let ca = TestCa::new("ocsp-delegating-ca");
    let default = ca.leaf_with_ocsp(&["default.example.com"], DEFAULT_SERIAL, &url);
    let edge = ca.leaf_with_ocsp(&[EDGE], EDGE_SERIAL, &url);
    let statuses = [(DEFAULT_SERIAL, Status::Good), (EDGE_SERIAL, Status::Good)];
    let delegated = ca.ocsp_signer("ocsp-responder");
    let mut responder = OcspResponder::start(addr, &ca, Some(&delegated), &statuses);
    let setup = router(&default, &edge, true).await;
    until(&setup, EDGE, Duration::from_secs(15), "a staple signed by the delegated responder", stapled_good).await;
    responder.stop();

    // A responder certificate of another CA, even for OCSP signing, may not answer for this CA.
    let stranger = TestCa::new("stranger-ca").ocsp_signer("stranger-responder");
    let other_ca = TestCa::new("ocsp-other-ca");
    let (addr, url) = OcspResponder::reserve();
    let default = other_ca.leaf_with_ocsp(&["default.example.com"], DEFAULT_SERIAL, &url);
    let edge = other_ca.leaf_with_ocsp(&[EDGE], EDGE_SERIAL, &url);
    let _responder = OcspResponder::start(addr, &other_ca, Some(&stranger), &statuses);
    let refused = router(&default, &edge, true).await;
    let invalid = r#"router_ocsp_fetch_failures_total{reason="invalid"}"#;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while metric(&refused, invalid).await < 2.0 {
        assert!(tokio::time::Instant::now() < deadline, "no invalid response counted");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(not_stapled(&status(&refused, EDGE).await));
    assert_eq!(metric(&refused, "router_ocsp_stapled_certificates").await, 0.0);
    refused.router.shutdown().await;
    setup.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_by_default_nothing_is_fetched_or_stapled() {
    let (addr, url) = OcspResponder::reserve();
    let ca = TestCa::new("ocsp-off-ca");
    let default = ca.leaf_with_ocsp(&["default.example.com"], DEFAULT_SERIAL, &url);
    let edge = ca.leaf_with_ocsp(&[EDGE], EDGE_SERIAL, &url);
    let _responder = OcspResponder::start(addr, &ca, None, &[(EDGE_SERIAL, Status::Good)]);
    let setup = router(&default, &edge, false).await;
    assert!(!Settings::for_loopback("/dev/null").tls.ocsp_stapling, "off unless asked for");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(not_stapled(&status(&setup, EDGE).await));
    assert_eq!(metric(&setup, "router_ocsp_fetches_total").await, 0.0);
    setup.router.shutdown().await;
}
