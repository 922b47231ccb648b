//! `networking.k8s.io/v1` Ingresses in manifest files, served through real sockets as the Kubernetes source
//! serves them: one route per rule host and path (`Exact` paths left out), the service port by number or name,
//! a TLS entry making the host's routes edge-terminated with the Secret's certificate (checked by curl against
//! the test CA) and plain HTTP redirected; edits and a late Secret apply on reload.

use std::time::Duration;

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::cli::curl_https;
use router_tests::client::get;
use router_tests::manifests::{service, ManifestDir};
use router_tests::pki::{PemDir, TestCa};
use router_tests::{eventually, route_outcome, start_tls_router};

/// An Ingress `shop/site`: `secure.example.com/app` (port 80 by number, TLS from Secret `site-tls`) and
/// `plain.example.com` with `plain_path` (port `http` by name) and `/exact` (pathType Exact).
fn ingress(plain_path: &str) -> String {
    format!(
        r#"apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: site
  namespace: shop
spec:
  tls:
  - hosts: [secure.example.com]
    secretName: site-tls
  rules:
  - host: secure.example.com
    http:
      paths:
      - path: /app
        pathType: Prefix
        backend: {{service: {{name: web, port: {{number: 80}}}}}}
  - host: plain.example.com
    http:
      paths:
      - path: {plain_path}
        pathType: Prefix
        backend: {{service: {{name: web, port: {{name: http}}}}}}
      - path: /exact
        pathType: Exact
        backend: {{service: {{name: web, port: {{name: http}}}}}}
---
"#
    )
}

/// A `kubernetes.io/tls` Secret `shop/site-tls` with `certificate` and `key` as `stringData`.
fn tls_secret(certificate: &str, key: &str) -> String {
    let indent = |pem: &str| pem.trim_end().lines().map(|line| format!("    {line}\n")).collect::<String>();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: site-tls\n  namespace: shop\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: |\n{}  tls.key: |\n{}---\n",
        indent(certificate),
        indent(key)
    )
}

fn path_arg(path: &std::path::Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_in_a_manifest_file_is_served_with_edge_tls_and_its_paths() {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("ingress-ca");
    let leaf = ca.leaf(&["secure.example.com"]);
    let files = PemDir::new();
    let ca_file = files.write("ca.pem", &ca.cert_pem);
    let dir = ManifestDir::new();
    dir.write("web.yaml", &service("shop", "web", &[web.addr]));
    dir.write("secret.yaml", &tls_secret(&leaf.cert_pem, &leaf.key_pem));
    dir.write("ingress.yaml", &ingress("/shop"));
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;
    let http = router.http_addr;

    let reply = curl_https(https, "secure.example.com", "/app/page", &["--cacert", path_arg(&ca_file)]).await;
    assert_eq!(reply.exit_code, 0, "curl verifies the Secret's certificate: {}", reply.stderr);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.report()["backend"], "web");
    assert_eq!(reply.report()["path"], "/app/page");
    assert_eq!(reply.seen_header("x-forwarded-proto"), ["https"]);
    let redirected = get(http, "secure.example.com", "/app/page?x=1").await;
    assert_eq!(redirected.status, 302, "plain HTTP to a TLS host is redirected");
    assert_eq!(redirected.headers["location"], "https://secure.example.com/app/page?x=1");
    assert_eq!(curl_https(https, "secure.example.com", "/other", &["-k"]).await.status, 503, "only /app");

    assert_eq!(get(http, "plain.example.com", "/shop/cart").await.backend(), "web");
    assert_eq!(get(http, "plain.example.com", "/exact").await.status, 503, "Exact paths are not translated");
    assert_eq!(get(http, "plain.example.com", "/").await.status, 503);
    assert_eq!(route_outcome(&router, "shop", "site-ingress-0-0").await["admitted"], true);

    // An edit of the Ingress applies on reload, like any manifest change.
    dir.write("ingress.yaml", &ingress("/store"));
    eventually("the edited Ingress path served", Duration::from_secs(10), || async move {
        (get(http, "plain.example.com", "/store/x").await.backend() == "web").then_some(())
    })
    .await;
    assert_eq!(get(http, "plain.example.com", "/shop/cart").await.status, 503, "the old path is gone");

    // Without the Ingress, nothing of it is served.
    dir.remove("ingress.yaml");
    eventually("the Ingress's routes removed", Duration::from_secs(10), || async move {
        (get(http, "plain.example.com", "/store/x").await.status == 503).then_some(())
    })
    .await;
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_route_waits_for_its_secret_in_another_file() {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("ingress-ca");
    let leaf = ca.leaf(&["secure.example.com"]);
    let files = PemDir::new();
    let ca_file = files.write("ca.pem", &ca.cert_pem);
    let dir = ManifestDir::new();
    dir.write("web.yaml", &service("shop", "web", &[web.addr]));
    dir.write("ingress.yaml", &ingress("/shop"));
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    assert_eq!(get(router.http_addr, "plain.example.com", "/shop").await.backend(), "web", "no TLS: served");
    assert_eq!(route_outcome(&router, "shop", "site-ingress-0-0").await, serde_json::Value::Null, "waits");
    assert_eq!(get(router.http_addr, "secure.example.com", "/app").await.status, 503);

    dir.write("secret.yaml", &tls_secret(&leaf.cert_pem, &leaf.key_pem));
    let ca_arg = path_arg(&ca_file).to_string();
    eventually("the TLS route once its Secret exists", Duration::from_secs(10), || {
        let ca_arg = ca_arg.clone();
        async move {
            let reply = curl_https(https, "secure.example.com", "/app", &["--cacert", &ca_arg]).await;
            (reply.exit_code == 0 && reply.status == 200).then_some(())
        }
    })
    .await;
    router.shutdown().await;
}
