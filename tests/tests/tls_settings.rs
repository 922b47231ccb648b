//! The :443 settings OpenShift users set, seen by real clients: ROUTER_STRICT_SNI (openssl s_client gets no
//! certificate for an unknown name or no name; the default certificate still serves the names it carries),
//! DEFAULT_CERTIFICATE (the PEM itself), ROUTER_CURVES, SSL_MAX_VERSION and an OpenSSL cipher list (what
//! s_client negotiates), and names no TLS library knows stopping the start with the setting named.

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::cli::{curl_https, s_client, SClient};
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{PemDir, TestCa};
use router_tests::start_tls_router;

/// One change to the router's settings, as each case below makes it.
type SettingsChange<'a> = dyn Fn(&mut Settings) + 'a;

/// Whether s_client completed a handshake (it prints the server certificate's subject then).
fn handshake_done(reply: &SClient) -> bool {
    reply.subject().is_some() && !reply.stdout.contains("Cipher is (NONE)")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_sni_refuses_names_no_certificate_carries_and_default_certificate_is_the_pem_given() {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("settings-ca");
    let own = ca.leaf(&["own.example.com"]);
    let default = ca.leaf(&["*.apps.example.com"]);
    let files = PemDir::new();
    let ca_file = files.write("ca.pem", &ca.cert_pem);
    let dir = ManifestDir::new();
    let own_route = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&own.cert_pem, &own.key_pem)),
        ..RouteSpec::new("ns", "own", "own.example.com", "web")
    };
    let default_route =
        RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "plain", "plain.apps.example.com", "web") };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), own_route.yaml(), default_route.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.strict_sni = true;
    settings.tls.default_certificate = Some(default.bundle_pem());
    let (router, https) = start_tls_router(settings).await;

    let reply = s_client(https, Some("own.example.com"), &[]).await;
    assert!(handshake_done(&reply), "own certificate served: {}", reply.stderr);
    assert!(reply.subject().unwrap_or_default().contains("CN = own.example.com"), "{:?}", reply.subject());
    // A route without a certificate, on a name the default certificate (from DEFAULT_CERTIFICATE) carries.
    let reply = s_client(https, Some("plain.apps.example.com"), &[]).await;
    assert!(reply.subject().unwrap_or_default().contains("CN = *.apps.example.com"), "{:?}", reply.subject());
    let ca_path = ca_file.to_string_lossy().into_owned();
    let curl = curl_https(https, "plain.apps.example.com", "/", &["--cacert", &ca_path]).await;
    assert_eq!((curl.exit_code, curl.status), (0, 200), "{}", curl.stderr);

    for sni in [Some("unknown.example.com"), Some("apps.example.com"), None] {
        let reply = s_client(https, sni, &[]).await;
        assert!(!handshake_done(&reply), "{sni:?}: refused, got {}", reply.stdout);
        assert!(reply.stderr.contains("alert"), "{sni:?}: the router sends an alert: {}", reply.stderr);
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curves_max_version_and_cipher_list_are_what_clients_get() {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("settings-ca");
    let leaf = ca.leaf(&["www.example.com"]);
    let dir = ManifestDir::new();
    let route = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "www", "www.example.com", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), route.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.curves = Some("P-384:X448".into());
    settings.tls.ssl_max_version = Some("TLSv1.2".into());
    settings.tls.ciphers = "ECDHE-ECDSA-AES256-GCM-SHA384:DHE-RSA-AES128-GCM-SHA256:!aNULL".into();
    let (router, https) = start_tls_router(settings).await;
    let sni = Some("www.example.com");

    let reply = s_client(https, sni, &[]).await;
    assert!(handshake_done(&reply), "{}", reply.stderr);
    assert!(reply.stdout.contains("TLSv1.2"), "highest version TLS 1.2: {}", reply.stdout);
    assert!(reply.stdout.contains("ECDHE-ECDSA-AES256-GCM-SHA384"), "the one suite listed: {}", reply.stdout);
    assert!(reply.stdout.contains("secp384r1") || reply.stdout.contains("P-384"), "group P-384: {}", reply.stdout);

    let tls13 = s_client(https, sni, &["-tls1_3"]).await;
    assert!(!handshake_done(&tls13), "TLS 1.3 refused: {}", tls13.stdout);
    let x25519 = s_client(https, sni, &["-groups", "X25519"]).await;
    assert!(!handshake_done(&x25519), "X25519 not offered: {}", x25519.stdout);
    let other_suite = s_client(https, sni, &["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"]).await;
    assert!(!handshake_done(&other_suite), "a suite not listed: {}", other_suite.stdout);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_names_stop_the_start_naming_the_setting() {
    let dir = ManifestDir::new();
    dir.write("all.yaml", "");
    let files = PemDir::new();
    let ca = TestCa::new("client-ca");
    let ca_file = files.write("ca.pem", &ca.cert_pem);
    type Change = Box<dyn Fn(&mut Settings)>;
    let cases: Vec<(&str, Change)> = vec![
        ("ROUTER_CIPHERS", Box::new(|s| s.tls.ciphers = "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM".into())),
        ("ROUTER_CIPHERSUITES", Box::new(|s| s.tls.ciphersuites = Some("TLS_AES_512_GCM_SHA512".into()))),
        ("ROUTER_CURVES", Box::new(|s| s.tls.curves = Some("X25519:P-265".into()))),
        ("SSL_MIN_VERSION", Box::new(|s| s.tls.ssl_min_version = "TLSv1.4".into())),
        ("SSL_MAX_VERSION", Box::new(|s| s.tls.ssl_max_version = Some("TLS1.3".into()))),
        ("DEFAULT_CERTIFICATE", Box::new(|s| s.tls.default_certificate = Some("not a PEM".into()))),
    ];
    let mtls = |s: &mut Settings| {
        s.tls.mutual_tls_auth = router::config::MutualTls::Required;
        s.tls.mutual_tls_auth_ca = Some(ca_file.clone());
    };
    let filter = |s: &mut Settings| {
        mtls(s);
        s.tls.mutual_tls_auth_filter = Some("CN=(unclosed".into());
    };
    let crl = |s: &mut Settings| {
        mtls(s);
        s.tls.mutual_tls_auth_crl = Some(files.path().join("missing.crl"));
    };
    let mut all: Vec<(&str, &SettingsChange<'_>)> = cases.iter().map(|(n, c)| (*n, c.as_ref())).collect();
    all.push(("ROUTER_MUTUAL_TLS_AUTH_FILTER", &filter));
    all.push(("ROUTER_MUTUAL_TLS_AUTH_CRL", &crl));
    for (setting, change) in all {
        let mut settings = Settings::for_loopback(dir.path());
        change(&mut settings);
        match router::server::start(settings).await {
            Ok(router) => {
                router.shutdown().await;
                panic!("{setting}: the router started");
            }
            Err(error) => assert!(error.to_string().contains(setting), "{setting}: {error}"),
        }
    }
}
