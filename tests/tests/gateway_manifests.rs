//! Gateway API objects in manifest files, served through real sockets: a Gateway of the router's class with
//! HTTP, HTTPS (terminating with a Secret's certificate) and TLS passthrough listeners; HTTPRoutes by path
//! prefix with weights, header modifiers and a prefix rewrite; HTTPRoute matches by exact path, headers, method
//! and query in the Gateway API's precedence; a redirect to https; a TLSRoute to a pod that
//! terminates TLS itself; a Route and an HTTPRoute for one host and path decided oldest first; and nothing of it
//! read without ROUTER_GATEWAY_CLASS.

use std::collections::HashMap;

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::cli::curl_https;
use router_tests::client::{get, KeepAliveClient};
use router_tests::manifests::{route, service, ManifestDir};
use router_tests::pki::{PemDir, TestCa};
use router_tests::tls_client::{client_config, https_get, peer_certificate, tls_connect, Trust};
use router_tests::{route_outcome, start_tls_router};
use serde_json::json;

const CLASS: &str = "openshift-router";

/// Gateway `shop/gw` of `class`: `http` (:80), `https` (:443, `*.example.com`, Secret `gw-tls`), `tls` (:443
/// passthrough).
fn gateway(class: &str) -> String {
    format!(
        r#"apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: shop}}
spec:
  gatewayClassName: "{class}"
  listeners:
  - {{name: http, port: 80, protocol: HTTP}}
  - name: https
    port: 443
    protocol: HTTPS
    hostname: "*.example.com"
    tls: {{certificateRefs: [{{name: gw-tls}}]}}
  - {{name: tls, port: 443, protocol: TLS, tls: {{mode: Passthrough}}}}
---
"#
    )
}

/// HTTPRoute `shop/shop` (created 2024) on the `http` listener for `shop.example.com`: `/api` rewritten to `/v2`
/// with header changes to `a`; `/` to `a` and `b` weighted 3:1; a regular-expression path (not served); `/old`
/// to `b`.
fn shop_route() -> String {
    String::from(
        r#"apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: shop, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [shop.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api/}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {set: [{name: X-Gw, value: "yes 100%"}], remove: [X-Drop]}
    - type: ResponseHeaderModifier
      responseHeaderModifier: {set: [{name: X-Served-By, value: gateway}]}
    - type: URLRewrite
      urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}
    backendRefs: [{name: a, port: 80}]
  - backendRefs: [{name: a, port: 80, weight: 3}, {name: b, port: 80, weight: 1}]
  - matches: [{path: {type: RegularExpression, value: "/re.*"}}]
    backendRefs: [{name: b, port: 80}]
  - matches: [{path: {value: /old}}]
    backendRefs: [{name: b, port: 80}]
---
"#,
    )
}

/// A Route `shop/<name>` for `host` + `path` to `service`, created at `created`.
fn dated_route(name: &str, host: &str, path: &str, service: &str, created: &str) -> String {
    route("shop", name, host, path, service).replacen(
        "metadata:\n",
        &format!("metadata:\n  creationTimestamp: \"{created}\"\n"),
        1,
    )
}

/// Backends a, b and c as Services of namespace `shop`, and the Gateway of the class, in a manifest directory (the
/// backends serve as long as the caller holds them).
async fn shop_backends_behind_the_gateway() -> ((TestBackend, TestBackend, TestBackend), ManifestDir) {
    let (a, b, c) = (TestBackend::start("a").await, TestBackend::start("b").await, TestBackend::start("c").await);
    let dir = ManifestDir::new();
    dir.write(
        "services.yaml",
        &[service("shop", "a", &[a.addr]), service("shop", "b", &[b.addr]), service("shop", "c", &[c.addr])].concat(),
    );
    dir.write("gateway.yaml", &gateway(CLASS));
    ((a, b, c), dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_httproute_is_served_by_path_with_weights_header_changes_and_a_rewrite() {
    let (_backends, dir) = shop_backends_behind_the_gateway().await;
    dir.write("httproute.yaml", &shop_route());
    // A Route older than the HTTPRoute holds /old; one younger than it loses /api.
    dir.write(
        "routes.yaml",
        &[
            dated_route("legacy", "shop.example.com", "/old", "c", "2020-01-01T00:00:00Z"),
            dated_route("late", "shop.example.com", "/api", "c", "2025-01-01T00:00:00Z"),
        ]
        .concat(),
    );
    let mut settings = Settings::for_loopback(dir.path());
    settings.gateway_class = CLASS.into();
    let (router, _https) = start_tls_router(settings).await;
    let http = router.http_addr;

    let mut client = KeepAliveClient::connect(http).await;
    let reply = client.get_with("shop.example.com", "/api/items?q=1", &[("x-drop", "1")]).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.backend(), "a");
    assert_eq!(reply.report()["path"], "/v2/items?q=1", "the /api prefix is replaced by /v2");
    assert_eq!(reply.seen_header("x-gw"), ["yes 100%"], "set, literally");
    assert!(reply.seen_header("x-drop").is_empty(), "removed");
    assert_eq!(reply.headers["x-served-by"], "gateway");

    let mut served: HashMap<String, usize> = HashMap::new();
    for _ in 0..40 {
        *served.entry(client.get("shop.example.com", "/anything").await.backend().to_string()).or_default() += 1;
    }
    let (to_a, to_b) = (served.get("a").copied().unwrap_or(0), served.get("b").copied().unwrap_or(0));
    assert_eq!(to_a + to_b, 40, "{served:?}");
    assert!((26..=34).contains(&to_a), "weights 3:1 give a about 30 of 40: {served:?}");

    // A regular-expression path is left out: its paths fall to the `/` rule.
    assert_eq!(route_outcome(&router, "shop", "shop-httproute-2-0-shop.example.com").await, serde_json::Value::Null);

    // Oldest first between Routes and HTTPRoutes.
    assert_eq!(get(http, "shop.example.com", "/old/x").await.backend(), "c", "the older Route keeps /old");
    let lost = route_outcome(&router, "shop", "shop-httproute-3-0-shop.example.com").await;
    assert_eq!(
        (&lost["admitted"], &lost["reason"]),
        (&serde_json::json!(false), &serde_json::json!("HostAlreadyClaimed"))
    );
    assert!(lost["message"].as_str().unwrap_or("").contains("legacy"), "names the winner: {lost}");
    let late = route_outcome(&router, "shop", "late").await;
    assert_eq!(late["admitted"], false, "the younger Route loses /api to the HTTPRoute: {late}");
    assert_eq!(late["reason"], "HostAlreadyClaimed");
    router.shutdown().await;
}

/// HTTPRoute `shop/matches` on the `http` listener for `match.example.com`: `/exact` exactly to `a`, the `/exact`
/// prefix to `b`; on `/`, header `version: two` to `b`; on `/api`, `POST` to `c`, query `animal=whale` to `a`, the
/// rest to `b`; on `/legacy`, header `x-canary: 1` to `c` (beside a Route for `/legacy` to `a`).
/// `method path` with `headers` to `match.example.com`: the status and the backend that answered ("" for none).
async fn served(client: &mut KeepAliveClient, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let reply = client.send(method, "match.example.com", path, headers).await;
    (reply.status.as_u16(), reply.backend().to_string())
}

const MATCHES: &str = r#"apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: matches, namespace: shop, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [match.example.com]
  rules:
  - matches: [{path: {type: Exact, value: /exact}}]
    backendRefs: [{name: a, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /exact}}]
    backendRefs: [{name: b, port: 80}]
  - matches: [{headers: [{name: version, value: two}]}]
    backendRefs: [{name: b, port: 80}]
  - matches: [{path: {value: /api}, queryParams: [{name: animal, value: whale}]}]
    backendRefs: [{name: a, port: 80}]
  - matches: [{path: {value: /api}, method: POST}]
    backendRefs: [{name: c, port: 80}]
  - matches: [{path: {value: /api}}]
    backendRefs: [{name: b, port: 80}]
  - matches: [{path: {value: /legacy}, headers: [{name: X-Canary, value: "1"}]}]
    backendRefs: [{name: c, port: 80}]
---
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_matches_route_by_exact_path_headers_method_and_query_in_precedence_order() {
    let (_backends, dir) = shop_backends_behind_the_gateway().await;
    dir.write("httproute.yaml", MATCHES);
    // Younger than the HTTPRoute, on a path one of its matches shares with a header condition: both are served.
    dir.write("routes.yaml", &dated_route("legacy", "match.example.com", "/legacy", "a", "2025-01-01T00:00:00Z"));
    let mut settings = Settings::for_loopback(dir.path());
    settings.gateway_class = CLASS.into();
    let (router, _https) = start_tls_router(settings).await;
    let client = &mut KeepAliveClient::connect(router.http_addr).await;
    let by = |backend: &str| (200, backend.to_string());

    assert_eq!(served(client, "GET", "/exact", &[]).await, by("a"), "the exact path before the same prefix");
    assert_eq!(served(client, "GET", "/exact/", &[]).await, by("b"), "not exactly /exact: the prefix");
    assert_eq!(served(client, "GET", "/exact/x?q=1", &[]).await, by("b"));
    assert_eq!(served(client, "GET", "/", &[("Version", "two")]).await, by("b"), "header names in any case");
    assert_eq!(served(client, "GET", "/", &[("version", "Two")]).await, (503, String::new()), "values exactly");
    assert_eq!(served(client, "GET", "/exactly", &[]).await, (503, String::new()), "no match: no route");
    assert_eq!(served(client, "GET", "/api?animal=whale", &[]).await, by("a"));
    assert_eq!(served(client, "POST", "/api?animal=whale", &[]).await, by("c"), "a method match before a query match");
    assert_eq!(served(client, "POST", "/api/x", &[]).await, by("c"));
    assert_eq!(served(client, "GET", "/api?animal=whales", &[]).await, by("b"), "the rest of /api");
    assert_eq!(
        served(client, "GET", "/api/x", &[("version", "two")]).await,
        by("b"),
        "a longer prefix before headers on /"
    );
    assert_eq!(
        served(client, "GET", "/legacy/x", &[("x-canary", "1")]).await,
        by("c"),
        "the HTTPRoute's condition first"
    );
    assert_eq!(served(client, "GET", "/legacy/x", &[]).await, by("a"), "then the Route of the same path");
    for name in ["matches-httproute-6-0-match.example.com", "legacy"] {
        assert_eq!(route_outcome(&router, "shop", name).await["admitted"], true, "{name}");
    }
    let listed = route_outcome(&router, "shop", "matches-httproute-6-0-match.example.com").await;
    let header = json!([{"name": "x-canary", "type": "Exact", "value": "1"}]);
    assert_eq!(listed["conditions"], json!({"pathType": "PathPrefix", "headers": header}), "in /debug/routes");
    assert!(route_outcome(&router, "shop", "legacy").await.get("conditions").is_none());
    router.shutdown().await;
}

/// HTTPRoute `shop/filters` for `filters.example.com`: `/full` to `a` with its path replaced by `/one`, `X-Add: v2`
/// added to requests and `X-Resp: r` to responses; `/cookie` adding a `Set-Cookie`, which admission refuses.
const FILTERS: &str = r#"apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: filters, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [filters.example.com]
  rules:
  - matches: [{path: {value: /full}}]
    filters:
    - {type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /one}}}
    - {type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: X-Add, value: v2}]}}
    - {type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: X-Resp, value: r}]}}
    backendRefs: [{name: a, port: 80}]
  - matches: [{path: {value: /cookie}}]
    filters:
    - {type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: Set-Cookie, value: "x=1"}]}}
    backendRefs: [{name: a, port: 80}]
---
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httproute_header_adds_append_and_a_full_path_rewrite_replaces_the_path() {
    let a = TestBackend::start("a").await;
    let dir = ManifestDir::new();
    dir.write("services.yaml", &service("shop", "a", &[a.addr]));
    dir.write("gateway.yaml", &gateway(CLASS));
    dir.write("httproute.yaml", FILTERS);
    let mut settings = Settings::for_loopback(dir.path());
    settings.gateway_class = CLASS.into();
    let (router, _https) = start_tls_router(settings).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;

    let reply = client.get_with("filters.example.com", "/full/two?q=1", &[("x-add", "v1")]).await;
    assert_eq!((reply.status.as_u16(), reply.backend()), (200, "a"));
    assert_eq!(reply.report()["path"], "/one?q=1", "the whole path replaced, the query kept");
    assert_eq!(reply.seen_header("x-add"), ["v1", "v2"], "added after the client's value");
    let added: Vec<_> = reply.headers.get_all("x-resp").iter().map(|v| v.to_str().unwrap_or("").to_string()).collect();
    assert_eq!(added, ["r"]);

    let refused = route_outcome(&router, "shop", "filters-httproute-1-0-filters.example.com").await;
    assert_eq!((&refused["admitted"], &refused["reason"]), (&json!(false), &json!("ExtendedValidationFailed")));
    assert_eq!(client.get("filters.example.com", "/cookie").await.status, 503);
    router.shutdown().await;
}

/// A `kubernetes.io/tls` Secret `shop/<name>`.
fn tls_secret(name: &str, certificate: &str, key: &str) -> String {
    let indent = |pem: &str| pem.trim_end().lines().map(|line| format!("    {line}\n")).collect::<String>();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: shop\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: |\n{}  tls.key: |\n{}---\n",
        indent(certificate),
        indent(key)
    )
}

const SECURE_AND_PASSTHROUGH: &str = r#"apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: secure, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: https}]
  hostnames: [secure.example.com]
  rules:
  - backendRefs: [{name: web, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: pass, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: tls}]
  hostnames: [pass.example.com]
  rules:
  - backendRefs: [{name: pod, port: 80}]
---
"#;

const REDIRECT: &str = r#"apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: to-https, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [secure.example.com]
  rules:
  - filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}]
---
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_listeners_terminate_with_their_secret_and_tls_routes_pass_through() {
    let ca = TestCa::new("gateway-ca");
    let listener_leaf = ca.leaf(&["*.example.com"]);
    let pod_leaf = ca.leaf(&["pass.example.com"]);
    let web = TestBackend::start("web").await;
    let pod = TestBackend::start_tls("pod", &pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let files = PemDir::new();
    let ca_file = files.write("ca.pem", &ca.cert_pem);
    let ca_arg = ca_file.to_str().expect("UTF-8 path");
    let dir = ManifestDir::new();
    dir.write("services.yaml", &[service("shop", "web", &[web.addr]), service("shop", "pod", &[pod.addr])].concat());
    dir.write("secret.yaml", &tls_secret("gw-tls", &listener_leaf.chain_pem(), &listener_leaf.key_pem));
    dir.write("gateway.yaml", &gateway(CLASS));
    dir.write("routes.yaml", SECURE_AND_PASSTHROUGH);
    let mut settings = Settings::for_loopback(dir.path());
    settings.gateway_class = CLASS.into();
    let (router, https) = start_tls_router(settings).await;

    let reply = curl_https(https, "secure.example.com", "/page", &["--cacert", ca_arg]).await;
    assert_eq!(reply.exit_code, 0, "curl verifies the listener's certificate: {}", reply.stderr);
    assert_eq!((reply.status, reply.report()["backend"].clone()), (200, serde_json::json!("web")));
    assert_eq!(get(router.http_addr, "secure.example.com", "/page").await.status, 503, "HTTPS listener only");

    let stream = tls_connect(https, Some("pass.example.com"), client_config(Trust::Ca(&ca.cert_pem), &[], None))
        .await
        .expect("handshake with the pod through the router");
    assert_eq!(peer_certificate(&stream), Some(pod_leaf.der.clone()), "the pod terminates TLS");
    drop(stream);
    let config = client_config(Trust::Ca(&ca.cert_pem), &["http/1.1"], None);
    let reply = https_get(https, Some("pass.example.com"), "pass.example.com", "/", config).await;
    assert_eq!(reply.headers["x-backend"], "pod");

    dir.write("redirect.yaml", REDIRECT);
    router_tests::eventually("plain HTTP redirected", std::time::Duration::from_secs(10), || async {
        let reply = get(router.http_addr, "secure.example.com", "/page?x=1").await;
        (reply.status == 302).then(|| reply.headers["location"].to_str().unwrap_or("").to_string())
    })
    .await
    .eq("https://secure.example.com/page?x=1")
    .then_some(())
    .expect("redirected to the same URL on https");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_class_setting_or_with_another_class_nothing_is_served() {
    let a = TestBackend::start("a").await;
    let dir = ManifestDir::new();
    dir.write("services.yaml", &service("shop", "a", &[a.addr]));
    dir.write("httproute.yaml", &shop_route());
    // Off is off even for a Gateway whose class is empty (as the setting is).
    dir.write("gateway.yaml", &gateway(""));
    let (router, _) = start_tls_router(Settings::for_loopback(dir.path())).await;
    assert_eq!(get(router.http_addr, "shop.example.com", "/").await.status, 503, "the Gateway API is off");
    router.shutdown().await;

    dir.write("gateway.yaml", &gateway(CLASS));

    let mut settings = Settings::for_loopback(dir.path());
    settings.gateway_class = "another".into();
    let (router, _) = start_tls_router(settings).await;
    assert_eq!(get(router.http_addr, "shop.example.com", "/").await.status, 503, "not this router's class");
    router.shutdown().await;
}
