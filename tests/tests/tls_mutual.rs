//! ROUTER_MUTUAL_TLS_AUTH: `required` refuses clients without a certificate from ROUTER_MUTUAL_TLS_AUTH_CA;
//! `optional` serves them; a verified client certificate reaches the pod as X-SSL-Client-* headers, and a
//! client cannot forge those headers.

use std::net::SocketAddr;
use std::path::PathBuf;

use router::config::{MutualTls, Settings};
use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::cli::curl_https;
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{Leaf, PemDir, TestCa};
use router_tests::start_tls_router;
use router_tests::tls_client::{client_config, try_https_get, Trust};

struct Fixture {
    router: RunningRouter,
    https: SocketAddr,
    _web: TestBackend,
    _dir: ManifestDir,
    files: PemDir,
    server_ca: TestCa,
    alice: Leaf,
    mallory: Leaf,
}

/// An edge route `mtls.example.com` with its own certificate (from `server_ca`); client certificates must
/// chain to a separate client CA; `alice` has one from it, `mallory` one from an unrelated CA.
async fn fixture(mode: MutualTls) -> Fixture {
    let web = TestBackend::start("web").await;
    let (server_ca, client_ca, rogue_ca) = (TestCa::new("server-ca"), TestCa::new("client-ca"), TestCa::new("rogue"));
    let leaf = server_ca.leaf(&["mtls.example.com"]);
    let files = PemDir::new();
    files.write("server-ca.pem", &server_ca.cert_pem);
    let dir = ManifestDir::new();
    let route = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "web", "mtls.example.com", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), route.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.mutual_tls_auth = mode;
    settings.tls.mutual_tls_auth_ca = Some(files.write("client-ca.pem", &client_ca.cert_pem));
    let (router, https) = start_tls_router(settings).await;
    let (alice, mallory) = (client_ca.client_leaf("alice"), rogue_ca.client_leaf("mallory"));
    Fixture { router, https, _web: web, _dir: dir, files, server_ca, alice, mallory }
}

impl Fixture {
    async fn get(
        &self,
        identity: Option<&Leaf>,
        headers: &[(&str, &str)],
    ) -> Result<router_tests::client::Reply, String> {
        let config = client_config(Trust::Ca(&self.server_ca.cert_pem), &["http/1.1"], identity);
        try_https_get(self.https, Some("mtls.example.com"), "mtls.example.com", "/", config, headers)
            .await
            .map(|reply| reply.reply)
    }

    fn file(&self, name: &str, contents: &str) -> PathBuf {
        self.files.write(name, contents)
    }
}

fn unquoted(values: &[String]) -> Vec<String> {
    values.iter().map(|v| v.trim_matches('"').to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_refuses_clients_without_a_trusted_certificate() {
    let f = fixture(MutualTls::Required).await;

    let refused = f.get(None, &[]).await;
    assert!(refused.is_err(), "no client certificate: refused, got status {:?}", refused.map(|r| r.status));
    let rogue = f.get(Some(&f.mallory), &[]).await;
    assert!(rogue.is_err(), "certificate from another CA: refused, got status {:?}", rogue.map(|r| r.status));

    let reply = f.get(Some(&f.alice), &[("x-ssl-client-cn", "mallory")]).await.expect("alice is served");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.seen_header("x-ssl-client-verify"), ["0"], "verified");
    assert_eq!(unquoted(&reply.seen_header("x-ssl-client-cn")), ["alice"], "the client's forged value is replaced");
    let dn = reply.seen_header("x-ssl-client-dn").join(",");
    assert!(dn.contains("CN=alice"), "X-SSL-Client-DN: {dn}");

    // curl with and without a client certificate.
    let ca = f.file("server-ca-copy.pem", &f.server_ca.cert_pem);
    let (cert, key) = (f.file("alice.pem", &f.alice.cert_pem), f.file("alice.key", &f.alice.key_pem));
    let path = |p: &PathBuf| p.to_string_lossy().into_owned();
    let with = curl_https(
        f.https,
        "mtls.example.com",
        "/",
        &["--cacert", &path(&ca), "--cert", &path(&cert), "--key", &path(&key)],
    )
    .await;
    assert_eq!((with.exit_code, with.status), (0, 200), "{}", with.stderr);
    assert_eq!(unquoted(&with.seen_header("x-ssl-client-cn")), ["alice"]);
    let without = curl_https(f.https, "mtls.example.com", "/", &["--cacert", &path(&ca)]).await;
    assert_ne!(without.exit_code, 0, "curl without a certificate fails");
    assert_eq!(without.status, 0, "and gets no response");
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_serves_everyone_and_passes_verified_certificates_on() {
    let f = fixture(MutualTls::Optional).await;

    let anonymous = f.get(None, &[("x-ssl-client-cn", "mallory"), ("x-ssl-client-verify", "0")]).await;
    let anonymous = anonymous.expect("served without a certificate");
    assert_eq!(anonymous.status, 200);
    assert!(
        !unquoted(&anonymous.seen_header("x-ssl-client-cn")).contains(&"mallory".to_string()),
        "client-sent X-SSL-Client-CN is not passed on: {:?}",
        anonymous.seen_header("x-ssl-client-cn")
    );

    let alice = f.get(Some(&f.alice), &[]).await.expect("served with a certificate");
    assert_eq!(alice.status, 200);
    assert_eq!(alice.seen_header("x-ssl-client-verify"), ["0"]);
    assert_eq!(unquoted(&alice.seen_header("x-ssl-client-cn")), ["alice"]);
    f.router.shutdown().await;
}
