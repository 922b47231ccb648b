//! Client certificates per route (`router.openshift.io/client-tls-ca`, `-verify`, `-subject-filter`), with real
//! clients: only the SNIs of annotated routes ask for a certificate (openssl s_client), each verified against its
//! own route's ConfigMap bundle (curl --cert/--key), passed on as X-SSL-Client-*; a request for another host on
//! the same connection (HTTP/1.1 Host, HTTP/2 :authority) gets 421 unless its route checks the same; a bundle
//! that is missing or unparsable rejects only its route, and a fixed ConfigMap brings it back; a Secret's
//! `ca.crt` (`client-tls-ca-secret`) serves as a bundle too.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use router::config::Settings;
use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::cli::{curl_https, s_client, CurlReply};
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{Leaf, PemDir, TestCa};
use router_tests::tls_client::{client_config, tls_connect, try_https_get, Trust};
use router_tests::{eventually, route_outcome, start_tls_router};

const CA: &str = "router.openshift.io/client-tls-ca";
const VERIFY: &str = "router.openshift.io/client-tls-verify";
const FILTER: &str = "router.openshift.io/client-tls-subject-filter";
const CA_SECRET: &str = "router.openshift.io/client-tls-ca-secret";

struct Fixture {
    router: RunningRouter,
    https: SocketAddr,
    _web: TestBackend,
    dir: ManifestDir,
    files: PemDir,
    a_ca: TestCa,
    b_ca: TestCa,
    server_ca: TestCa,
    server_ca_file: PathBuf,
    alice: Leaf,
}

/// A ConfigMap `name` in `ns` whose key `key` holds `pem`.
fn config_map(name: &str, key: &str, pem: &str) -> String {
    let body: String = pem.lines().map(|line| format!("    {line}\n")).collect();
    format!(
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: ns\ndata:\n  {key}: |\n{body}"
    )
}

/// A `kubernetes.io/tls` Secret `name` in `ns` whose `ca.crt` holds `ca_pem` (as cert-manager writes one).
fn tls_secret_with_ca(name: &str, leaf: &Leaf, ca_pem: &str) -> String {
    let indent = |pem: &str| -> String { pem.lines().map(|line| format!("    {line}\n")).collect() };
    format!(
        "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: ns\ntype: kubernetes.io/tls\n\
         stringData:\n  tls.crt: |\n{}  tls.key: |\n{}  ca.crt: |\n{}",
        indent(&leaf.cert_pem),
        indent(&leaf.key_pem),
        indent(ca_pem)
    )
}

/// Edge routes, each with its own certificate from `server_ca`: `a` checks against CA A (required), `b` against
/// CA B (key `clients.crt`), `opt` against CA A, optional, subjects ending in `CN=alice`; `open` checks nothing;
/// `bad` names a ConfigMap that is not there.
async fn fixture() -> Fixture {
    let web = TestBackend::start("web").await;
    let (server_ca, a_ca, b_ca) = (TestCa::new("server-ca"), TestCa::new("clients-a"), TestCa::new("clients-b"));
    let dir = ManifestDir::new();
    let mut yaml = service("ns", "web", &[web.addr]);
    let leaves: Vec<(&str, Leaf)> = ["a", "b", "opt", "open", "bad"]
        .into_iter()
        .map(|name| (name, server_ca.leaf(&[&format!("{name}.example.com")])))
        .collect();
    let annotations: [&[(&str, &str)]; 5] = [
        &[(CA, "clients-a")],
        &[(CA, "clients-b/clients.crt")],
        &[(CA, "clients-a"), (VERIFY, "optional"), (FILTER, "/CN=alice$")],
        &[],
        &[(CA, "absent")],
    ];
    for ((name, leaf), annotations) in leaves.iter().zip(annotations) {
        let host = format!("{name}.example.com");
        let route = RouteSpec {
            annotations,
            tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
            ..RouteSpec::new("ns", name, &host, "web")
        };
        yaml.push_str(&route.yaml());
    }
    yaml.push_str(&config_map("clients-a", "ca-bundle.pem", &a_ca.cert_pem));
    yaml.push_str(&config_map("clients-b", "clients.crt", &b_ca.cert_pem));
    dir.write("all.yaml", &yaml);
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;
    let files = PemDir::new();
    let server_ca_file = files.write("server-ca.pem", &server_ca.cert_pem);
    let alice = a_ca.client_leaf("alice");
    for (name, leaf) in
        [("alice", alice.clone()), ("carol", a_ca.client_leaf("carol")), ("bob", b_ca.client_leaf("bob"))]
    {
        files.write(&format!("{name}.pem"), &leaf.cert_pem);
        files.write(&format!("{name}.key"), &leaf.key_pem);
    }
    Fixture { router, https, _web: web, dir, files, a_ca, b_ca, server_ca, server_ca_file, alice }
}

impl Fixture {
    /// curl to `https://<sni>/` as `client` (a name from the fixture, or none), with `extra` arguments.
    async fn curl(&self, sni: &str, client: Option<&str>, extra: &[&str]) -> CurlReply {
        let path = |p: PathBuf| p.to_string_lossy().into_owned();
        let mut args = vec!["--cacert".to_string(), path(self.server_ca_file.clone())];
        if let Some(name) = client {
            let (cert, key) =
                (self.files.path().join(format!("{name}.pem")), self.files.path().join(format!("{name}.key")));
            args.extend(["--cert".into(), path(cert), "--key".into(), path(key)]);
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        curl_https(self.https, &format!("{sni}.example.com"), "/", &args).await
    }
}

fn unquoted(values: &[String]) -> Vec<String> {
    values.iter().map(|v| v.trim_matches('"').to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_route_verifies_client_certificates_against_its_own_bundle() {
    let f = fixture().await;
    let alice = f.curl("a", Some("alice"), &["-H", "X-SSL-Client-CN: mallory"]).await;
    assert_eq!((alice.exit_code, alice.status), (0, 200), "{}", alice.stderr);
    assert_eq!(alice.seen_header("x-ssl-client-verify"), ["0"]);
    assert_eq!(unquoted(&alice.seen_header("x-ssl-client-cn")), ["alice"], "the client's own value is replaced");
    assert!(alice.seen_header("x-ssl-issuer").join("").contains("CN=clients-a"));

    let anonymous = f.curl("a", None, &[]).await;
    assert_ne!(anonymous.exit_code, 0, "required: no certificate, no handshake");
    assert_eq!(anonymous.status, 0);
    let bob_on_a = f.curl("a", Some("bob"), &[]).await;
    assert_ne!(bob_on_a.exit_code, 0, "bob's CA is b's, not a's");
    assert_eq!(bob_on_a.status, 0);
    let bob = f.curl("b", Some("bob"), &[]).await;
    assert_eq!((bob.exit_code, bob.status), (0, 200), "{}", bob.stderr);
    assert_eq!(unquoted(&bob.seen_header("x-ssl-client-cn")), ["bob"]);

    let open = f.curl("open", None, &["-H", "X-SSL-Client-CN: mallory"]).await;
    assert_eq!((open.exit_code, open.status), (0, 200), "{}", open.stderr);
    assert!(open.seen_header("x-ssl-client-cn").is_empty(), "no check, no client headers (client's dropped)");
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_snis_of_checked_routes_ask_for_a_certificate() {
    let f = fixture().await;
    let asked = s_client(f.https, Some("a.example.com"), &[]).await;
    let hints = asked.stdout.split("Acceptable client certificate CA names").nth(1).unwrap_or_default();
    assert!(hints.contains("CN = clients-a") || hints.contains("CN=clients-a"), "{}", asked.stdout);
    assert!(!hints.contains("clients-b"), "only the route's own CA is named: {}", asked.stdout);
    let open = s_client(f.https, Some("open.example.com"), &[]).await;
    assert!(open.stdout.contains("No client certificate CA names sent"), "{}", open.stdout);
    let none = s_client(f.https, None, &[]).await;
    assert!(none.stdout.contains("No client certificate CA names sent"), "{}", none.stdout);
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_cannot_carry_requests_to_a_host_whose_check_its_handshake_did_not_make() {
    let f = fixture().await;
    for version in ["--http1.1", "--http2"] {
        // Alice satisfied a's CA; b checks against another one.
        let to_b = f.curl("a", Some("alice"), &[version, "-H", "Host: b.example.com"]).await;
        assert_eq!((to_b.exit_code, to_b.status), (0, 421), "{version}: {}", to_b.stderr);
        // A connection for a host without a check asked for no certificate at all.
        let to_a = f.curl("open", None, &[version, "-H", "Host: a.example.com"]).await;
        assert_eq!((to_a.exit_code, to_a.status), (0, 421), "{version}: {}", to_a.stderr);
        // A route without a check takes requests from any connection, without client headers.
        let to_open = f.curl("a", Some("alice"), &[version, "-H", "Host: open.example.com"]).await;
        assert_eq!((to_open.exit_code, to_open.status), (0, 200), "{version}: {}", to_open.stderr);
        assert!(to_open.seen_header("x-ssl-client-cn").is_empty());
        // opt checks a's bundle too, but optional and filtered: another check.
        let to_opt = f.curl("a", Some("alice"), &[version, "-H", "Host: opt.example.com"]).await;
        assert_eq!(to_opt.status, 421, "{version}");
    }
    let h2 = f.curl("a", Some("alice"), &["--http2"]).await;
    assert_eq!((h2.status, h2.http_version.as_str()), (200, "2"), "the route's own certificate offers h2");
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_lets_anonymous_clients_handshake_and_the_filter_decides_per_request() {
    let f = fixture().await;
    let alice = f.curl("opt", Some("alice"), &[]).await;
    assert_eq!((alice.exit_code, alice.status), (0, 200), "{}", alice.stderr);
    assert_eq!(unquoted(&alice.seen_header("x-ssl-client-cn")), ["alice"]);
    let carol = f.curl("opt", Some("carol"), &[]).await;
    assert_eq!((carol.exit_code, carol.status), (0, 403), "carol's subject does not match: {}", carol.stderr);
    let anonymous = f.curl("opt", None, &[]).await;
    assert_eq!((anonymous.exit_code, anonymous.status), (0, 403), "handshake done, no subject to match");
    let bob = f.curl("opt", Some("bob"), &[]).await;
    assert_ne!(bob.exit_code, 0, "a certificate given must still verify against the bundle");
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_unparsable_bundle_rejects_only_its_route_until_the_config_map_is_fixed() {
    let f = fixture().await;
    let bad = route_outcome(&f.router, "ns", "bad").await;
    assert_eq!(bad["admitted"], false, "{bad}");
    assert_eq!(bad["reason"], "ClientTLSValidationFailed");
    assert!(bad["message"].as_str().unwrap_or_default().contains("\"absent\" not found"), "{bad}");
    let refused = f.curl("bad", Some("alice"), &["-k"]).await;
    assert_eq!(refused.status, 503, "not served: {}", refused.stderr);
    assert_eq!(f.curl("a", Some("alice"), &[]).await.status, 200, "the other routes keep serving");

    f.dir.write(
        "absent.yaml",
        &config_map("absent", "ca-bundle.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
    );
    let unparsable = eventually("the unparsable bundle's message", Duration::from_secs(10), || async {
        let outcome = route_outcome(&f.router, "ns", "bad").await;
        let message = outcome["message"].as_str().unwrap_or_default().to_string();
        (!message.contains("not found")).then_some(outcome)
    })
    .await;
    assert_eq!(unparsable["reason"], "ClientTLSValidationFailed", "{unparsable}");

    f.dir.write("absent.yaml", &config_map("absent", "ca-bundle.pem", &f.a_ca.cert_pem));
    eventually("the route admitted with a usable bundle", Duration::from_secs(10), || async {
        (route_outcome(&f.router, "ns", "bad").await["admitted"] == true).then_some(())
    })
    .await;
    let served = f.curl("bad", Some("alice"), &[]).await;
    assert_eq!((served.exit_code, served.status), (0, 200), "{}", served.stderr);
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_is_checked_against_the_routes_current_bundle() {
    let f = fixture().await;
    let config = client_config(Trust::Ca(&f.server_ca.cert_pem), &["http/1.1"], Some(&f.alice));
    let get = || try_https_get(f.https, Some("a.example.com"), "a.example.com", "/", config.clone(), &[]);
    assert_eq!(get().await.expect("full handshake").reply.status, 200);
    let resumed = tls_connect(f.https, Some("a.example.com"), config.clone()).await.expect("second handshake");
    assert_eq!(resumed.get_ref().1.handshake_kind(), Some(rustls::HandshakeKind::Resumed), "a ticket was issued");
    drop(resumed);

    // a's bundle now holds only CA B: alice's ticket resumes the session, but her certificate no longer verifies.
    let generation = f.router.table.load().generation;
    f.dir.write("swap.yaml", &config_map("clients-a", "ca-bundle.pem", &f.b_ca.cert_pem));
    router_tests::next_generation(&f.router, generation).await;
    let refused = get().await;
    assert!(
        refused.is_err(),
        "resumed with a certificate the route no longer trusts: {:?}",
        refused.map(|r| r.reply.status)
    );
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_can_hold_the_routes_bundle_and_a_missing_one_rejects_it() {
    let f = fixture().await;
    let leaf = f.server_ca.leaf(&["sec.example.com"]);
    let route = RouteSpec {
        annotations: &[(CA_SECRET, "clients-b-secret")],
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "sec", "sec.example.com", "web")
    };
    f.dir.write("sec.yaml", &route.yaml());
    let missing = eventually("the route without its Secret rejected", Duration::from_secs(10), || async {
        let outcome = route_outcome(&f.router, "ns", "sec").await;
        (outcome["admitted"] == false).then_some(outcome)
    })
    .await;
    assert_eq!(missing["reason"], "ClientTLSValidationFailed", "{missing}");
    assert!(missing["message"].as_str().unwrap_or_default().contains("secrets \"clients-b-secret\" not found"));

    let secret_leaf = f.b_ca.leaf(&["clients-b-secret"]);
    f.dir.write("secret.yaml", &tls_secret_with_ca("clients-b-secret", &secret_leaf, &f.b_ca.cert_pem));
    eventually("the route admitted with its Secret's bundle", Duration::from_secs(10), || async {
        (route_outcome(&f.router, "ns", "sec").await["admitted"] == true).then_some(())
    })
    .await;
    let bob = f.curl("sec", Some("bob"), &[]).await;
    assert_eq!((bob.exit_code, bob.status), (0, 200), "{}", bob.stderr);
    assert_eq!(unquoted(&bob.seen_header("x-ssl-client-cn")), ["bob"]);
    let alice = f.curl("sec", Some("alice"), &[]).await;
    assert_ne!(alice.exit_code, 0, "alice's CA is not in the Secret's bundle");
    let anonymous = f.curl("sec", None, &[]).await;
    assert_ne!(anonymous.exit_code, 0, "required: no certificate, no handshake");
    f.router.shutdown().await;
}
