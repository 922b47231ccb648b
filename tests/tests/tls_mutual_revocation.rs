//! Client certificates beyond the CA check, with curl: ROUTER_MUTUAL_TLS_AUTH_FILTER (a subject that does not
//! match gets 403, over HTTP/1.1 and HTTP/2), ROUTER_MUTUAL_TLS_AUTH_CRL (a revoked certificate fails the
//! handshake; a rewritten file applies without a restart) and, without a CRL file, the lists fetched from the
//! distribution point the client CA names (a loopback HTTP server here).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use router::config::{MutualTls, Settings};
use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::cli::{curl_https, CurlReply};
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{Leaf, PemDir, TestCa};
use router_tests::start_tls_router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

struct Fixture {
    router: RunningRouter,
    https: SocketAddr,
    _web: TestBackend,
    _dir: ManifestDir,
    files: PemDir,
    server_ca: PathBuf,
}

/// An edge route `mtls.example.com` with its own certificate; client certificates required from `client_ca`;
/// `change` sets the rest.
async fn fixture(client_ca: &TestCa, change: impl FnOnce(&mut Settings, &PemDir)) -> Fixture {
    let web = TestBackend::start("web").await;
    let server_ca = TestCa::new("server-ca");
    let leaf = server_ca.leaf(&["mtls.example.com"]);
    let files = PemDir::new();
    let dir = ManifestDir::new();
    let route = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "web", "mtls.example.com", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), route.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.mutual_tls_auth = MutualTls::Required;
    settings.tls.mutual_tls_auth_ca = Some(files.write("client-ca.pem", &client_ca.cert_pem));
    change(&mut settings, &files);
    let (router, https) = start_tls_router(settings).await;
    let server_ca = files.write("server-ca.pem", &server_ca.cert_pem);
    Fixture { router, https, _web: web, _dir: dir, files, server_ca }
}

impl Fixture {
    /// curl with `who`'s certificate and `extra` arguments.
    async fn curl(&self, who: &Leaf, extra: &[&str]) -> CurlReply {
        let cert = self.files.write(&format!("{}.pem", who.common_name), &who.cert_pem);
        let key = self.files.write(&format!("{}.key", who.common_name), &who.key_pem);
        let path = |p: &PathBuf| p.to_string_lossy().into_owned();
        let mut args = vec!["--cacert".to_string(), path(&self.server_ca), "--cert".into(), path(&cert)];
        args.extend(["--key".to_string(), path(&key)]);
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        curl_https(self.https, "mtls.example.com", "/", &args).await
    }

    /// Waits (at most 10 s) until `who` is served (`true`) or refused in the handshake (`false`).
    async fn until(&self, who: &Leaf, served: bool) -> CurlReply {
        let mut last = self.curl(who, &[]).await;
        for _ in 0..40 {
            if (last.status == 200) == served {
                return last;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            last = self.curl(who, &[]).await;
        }
        panic!("{} still {} after 10 s: {}", who.common_name, if served { "refused" } else { "served" }, last.stderr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subject_filter_refuses_other_subjects_with_403() {
    let client_ca = TestCa::new("client-ca");
    let f = fixture(&client_ca, |s, _| s.tls.mutual_tls_auth_filter = Some("/CN=alice$".into())).await;
    let (alice, bob) = (client_ca.client_leaf("alice"), client_ca.client_leaf("bob"));

    for version in ["--http1.1", "--http2"] {
        let served = f.curl(&alice, &[version]).await;
        assert_eq!((served.exit_code, served.status), (0, 200), "{version}: {}", served.stderr);
        assert!(served.seen_header("x-ssl-client-dn").join("").contains("/CN=alice"));
        let refused = f.curl(&bob, &[version]).await;
        assert_eq!((refused.exit_code, refused.status), (0, 403), "{version}: {}", refused.stderr);
        assert!(!refused.body.contains("\"backend\""), "the pod never sees bob: {}", refused.body);
    }
    let expected_version = f.curl(&bob, &["--http2"]).await.http_version;
    assert_eq!(expected_version, "2", "the 403 comes over HTTP/2 when the client speaks it");
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_certificates_are_refused_and_a_changed_crl_file_applies_without_restart() {
    let client_ca = TestCa::new("client-ca");
    let (alice, bob) =
        (client_ca.client_leaf_with_serial("alice", 1001), client_ca.client_leaf_with_serial("bob", 1002));
    let crl_pem = String::from_utf8(client_ca.crl(&[1002], false)).expect("PEM");
    let mut crl_path = PathBuf::new();
    let f = fixture(&client_ca, |s, files| {
        crl_path = files.write("crl.pem", &crl_pem);
        s.tls.mutual_tls_auth_crl = Some(crl_path.clone());
    })
    .await;

    let served = f.curl(&alice, &[]).await;
    assert_eq!((served.exit_code, served.status), (0, 200), "alice: {}", served.stderr);
    let refused = f.curl(&bob, &[]).await;
    assert_ne!(refused.exit_code, 0, "bob is revoked");
    assert_eq!(refused.status, 0, "and gets no response");

    // A new list (DER this time) revoking alice and no longer bob, written in place.
    let staging = f.files.path().join("crl.new");
    std::fs::write(&staging, client_ca.crl(&[1001], true)).expect("write CRL");
    std::fs::rename(&staging, &crl_path).expect("replace CRL");
    f.until(&alice, false).await;
    f.until(&bob, true).await;

    // A broken file leaves the lists in use.
    std::fs::write(&crl_path, "garbage").expect("write garbage");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(f.curl(&bob, &[]).await.status, 200, "bob still served after a broken file");
    assert_eq!(f.curl(&alice, &[]).await.status, 0, "alice still refused after a broken file");
    f.router.shutdown().await;
}

/// A loopback HTTP server answering every request with `body` (as `application/pkix-crl`), counting requests.
async fn crl_server(listener: TcpListener, body: Arc<Mutex<Vec<u8>>>, hits: Arc<Mutex<u32>>) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else { return };
        let (body, hits) = (body.clone(), hits.clone());
        tokio::spawn(async move {
            let mut request = vec![0u8; 4096];
            let mut read = 0;
            while read < request.len() {
                match stream.read(&mut request[read..]).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => read += n,
                }
                if request[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            *hits.lock().expect("hits") += 1;
            let body = body.lock().expect("body").clone();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/pkix-crl\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body).await;
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_come_from_the_distribution_point_the_client_ca_names() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind CRL server");
    let url = format!("http://{}/client-ca.crl", listener.local_addr().expect("address"));
    let client_ca = TestCa::with_crl_url("client-ca", &url);
    let (alice, bob) = (client_ca.client_leaf_with_serial("alice", 7), client_ca.client_leaf_with_serial("bob", 8));
    let body = Arc::new(Mutex::new(client_ca.crl(&[8], true)));
    let hits = Arc::new(Mutex::new(0u32));
    let server = tokio::spawn(crl_server(listener, body, hits.clone()));

    let f = fixture(&client_ca, |_, _| {}).await;
    f.until(&alice, true).await;
    let refused = f.curl(&bob, &[]).await;
    assert_eq!(refused.status, 0, "bob is revoked by the fetched list: {}", refused.stderr);
    assert!(*hits.lock().expect("hits") >= 1, "the router fetched the list");
    f.router.shutdown().await;
    server.abort();
}
