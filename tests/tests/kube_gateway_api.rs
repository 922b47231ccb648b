//! The Gateway API through the Kubernetes source (a real kube-apiserver 1.20 with the minimal CRDs of
//! `deploy/gateway-api-crds.yaml`): a Gateway of the router's class with HTTP, HTTPS and TLS passthrough
//! listeners, HTTPRoutes and a TLSRoute served through real sockets, and the status the router writes: the
//! Gateway's Accepted/Programmed and per-listener conditions with attached route counts, each route parent's
//! Accepted/ResolvedRefs (PartiallyInvalid when some of it is not served), other controllers' entries kept and
//! ours removed from a route that leaves our Gateway, and a host claimed by a Route and an HTTPRoute going to the
//! older one, the loser's status saying why, until the winner goes.

use std::time::Duration;

use k8s_openapi::ByteString;
use kube::api::{Patch, PatchParams};
use router::model::gateway::HTTPRoute;
use router_tests::apiserver::objects::{
    apply_all, endpoint_slices, namespace, route, service, wait_admitted, wait_named_crd_established,
};
use router_tests::apiserver::{apply_json, apply_yaml, delete, get, ControlPlane, Identity};
use router_tests::backend::TestBackend;
use router_tests::client::{get as http_get, KeepAliveClient};
use router_tests::pki::TestCa;
use router_tests::tls_client::{client_config, https_get, Trust};
use router_tests::{eventually, start_router_with};
use serde_json::{json, Value};

const NS: &str = "gw";
const CLASS: &str = "openshift-router";
const GROUP_VERSION: &str = "gateway.networking.k8s.io/v1";

async fn control_plane_with_crds() -> Option<ControlPlane> {
    let plane = ControlPlane::start_with_routes().await?;
    let client = plane.client().await;
    apply_yaml(&client, include_str!("../../deploy/gateway-api-crds.yaml")).await;
    for crd in ["gateways", "httproutes", "tlsroutes"] {
        wait_named_crd_established(&client, &format!("{crd}.gateway.networking.k8s.io")).await;
    }
    Some(plane)
}

/// A `kubernetes.io/tls` Secret with `certificate` and `key`.
fn tls_secret(name: &str, certificate: &str, key: &str) -> Value {
    let data = |text: &str| serde_json::to_value(ByteString(text.as_bytes().to_vec())).expect("base64");
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": NS},
        "data": {"tls.crt": data(certificate), "tls.key": data(key)}
    })
}

fn gateway() -> Value {
    json!({
        "apiVersion": GROUP_VERSION, "kind": "Gateway",
        "metadata": {"name": "gw", "namespace": NS},
        "spec": {"gatewayClassName": CLASS, "listeners": [
            {"name": "http", "port": 80, "protocol": "HTTP"},
            {"name": "https", "port": 443, "protocol": "HTTPS", "tls": {"certificateRefs": [{"name": "gw-tls"}]}},
            {"name": "tls", "port": 443, "protocol": "TLS", "tls": {"mode": "Passthrough"}}
        ]}
    })
}

fn http_route(name: &str, section: &str, host: &str, rules: Value) -> Value {
    json!({
        "apiVersion": GROUP_VERSION, "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"parentRefs": [{"name": "gw", "sectionName": section}], "hostnames": [host], "rules": rules}
    })
}

/// `type=status reason` of each condition of our entry in `status.parents[]` of an HTTPRoute or TLSRoute.
async fn parent_conditions(client: &kube::Client, api_version: &str, kind: &str, name: &str) -> Vec<String> {
    let Some(object) = get(client, api_version, kind, Some(NS), name).await else { return Vec::new() };
    let parents = object.data["status"]["parents"].as_array().cloned().unwrap_or_default();
    let ours = parents.iter().find(|p| p["controllerName"] == router::source::kube::CONTROLLER_NAME);
    ours.map(|entry| conditions(&entry["conditions"])).unwrap_or_default()
}

fn conditions(list: &Value) -> Vec<String> {
    let list = list.as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|c| {
            format!(
                "{}={} {}",
                c["type"].as_str().unwrap_or(""),
                c["status"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// Waits until our entry of route `kind/name` lists exactly `expected`.
async fn wait_parent(client: &kube::Client, api_version: &str, kind: &str, name: &str, expected: &[&str]) {
    let what = format!("{kind} {name}: our parent status {expected:?}");
    eventually(&what, Duration::from_secs(20), || async move {
        let found = parent_conditions(client, api_version, kind, name).await;
        (found == expected).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_api_routes_are_served_and_their_status_written() {
    let Some(plane) = control_plane_with_crds().await else { return };
    let client = plane.client().await;
    let ca = TestCa::new("gateway-ca");
    let listener_leaf = ca.leaf(&["secure.example.com"]);
    let pod_leaf = ca.leaf(&["pass.example.com"]);
    let (a, b, old) = (TestBackend::start("a").await, TestBackend::start("b").await, TestBackend::start("old").await);
    let pod = TestBackend::start_tls("pod", &pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    apply_all(
        &client,
        [namespace(NS, &[]), service(NS, "a"), service(NS, "b"), service(NS, "old"), service(NS, "pod")],
    )
    .await;
    for (name, backend) in [("a", &a), ("b", &b), ("old", &old), ("pod", &pod)] {
        apply_all(&client, endpoint_slices(NS, name, name, &[backend.addr])).await;
    }
    apply_json(&client, tls_secret("gw-tls", &listener_leaf.chain_pem(), &listener_leaf.key_pem)).await;
    // The Route is the oldest claimant of clash.example.com.
    apply_json(&client, route(NS, "old-route", "clash.example.com", "/", "old", &[])).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    apply_all(
        &client,
        [
            gateway(),
            http_route("web", "http", "web.example.com", json!([{"backendRefs": [{"name": "a", "port": 80}]}])),
            http_route("partial", "http", "partial.example.com", json!([
                {"matches": [{"path": {"value": "/p"}}], "backendRefs": [{"name": "b", "port": 80}, {"name": "missing", "port": 80, "weight": 0}]},
                {"matches": [{"headers": [{"name": "x", "value": "y"}]}], "backendRefs": [{"name": "a", "port": 80}]},
                {"matches": [{"path": {"type": "RegularExpression", "value": "/r.*"}}], "backendRefs": [{"name": "b", "port": 80}]}
            ])),
            http_route("clash", "http", "clash.example.com", json!([{"backendRefs": [{"name": "a", "port": 80}]}])),
            http_route("secure", "https", "secure.example.com", json!([{"backendRefs": [{"name": "b", "port": 80}]}])),
            json!({
                "apiVersion": "gateway.networking.k8s.io/v1alpha2", "kind": "TLSRoute",
                "metadata": {"name": "pass", "namespace": NS},
                "spec": {"parentRefs": [{"name": "gw", "sectionName": "tls"}], "hostnames": ["pass.example.com"],
                         "rules": [{"backendRefs": [{"name": "pod", "port": 80}]}]}
            }),
        ],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // Younger than HTTPRoute `web`: it loses web.example.com.
    apply_json(&client, route(NS, "young", "web.example.com", "/", "b", &[])).await;

    let mut settings = plane.router_settings(Identity::Router);
    settings.gateway_class = CLASS.into();
    let router = start_router_with(settings).await;
    let (http, https) = (router.http_addr, router.https_addr);
    eventually("HTTPRoute web served", Duration::from_secs(20), || async move {
        (http_get(http, "web.example.com", "/").await.backend() == "a").then_some(())
    })
    .await;
    assert_eq!(http_get(http, "partial.example.com", "/p/x").await.backend(), "b");
    let header = KeepAliveClient::connect(http).await.get_with("partial.example.com", "/", &[("X", "y")]).await;
    assert_eq!(header.backend(), "a", "a header match is served");
    assert_eq!(http_get(http, "partial.example.com", "/r").await.status, 503, "a regular-expression path is not");
    assert_eq!(http_get(http, "clash.example.com", "/").await.backend(), "old", "the older Route keeps the host");
    let trusted = || client_config(Trust::Ca(&ca.cert_pem), &["http/1.1"], None);
    let reply = https_get(https, Some("secure.example.com"), "secure.example.com", "/", trusted()).await;
    assert_eq!(reply.reply.backend(), "b", "terminated with the listener's Secret");
    let reply = https_get(https, Some("pass.example.com"), "pass.example.com", "/", trusted()).await;
    assert_eq!(reply.reply.backend(), "pod", "passed through to the pod, which terminates TLS");

    let accepted = ["Accepted=True Accepted", "ResolvedRefs=True ResolvedRefs"];
    wait_parent(&client, GROUP_VERSION, "HTTPRoute", "web", &accepted).await;
    wait_parent(&client, GROUP_VERSION, "HTTPRoute", "secure", &accepted).await;
    wait_parent(&client, "gateway.networking.k8s.io/v1alpha2", "TLSRoute", "pass", &accepted).await;
    let partly =
        ["Accepted=True Accepted", "ResolvedRefs=False BackendNotFound", "PartiallyInvalid=True UnsupportedValue"];
    wait_parent(&client, GROUP_VERSION, "HTTPRoute", "partial", &partly).await;
    let lost = ["Accepted=False HostAlreadyClaimed", "ResolvedRefs=True ResolvedRefs"];
    wait_parent(&client, GROUP_VERSION, "HTTPRoute", "clash", &lost).await;
    wait_admitted(&client, NS, "young", "default", "False", "HostAlreadyClaimed").await;

    eventually("the Gateway's status", Duration::from_secs(20), || {
        let client = client.clone();
        async move {
            let object = get(&client, GROUP_VERSION, "Gateway", Some(NS), "gw").await?;
            let status = &object.data["status"];
            let listeners = status["listeners"].as_array()?.clone();
            let attached: Vec<(String, i64)> = listeners
                .iter()
                .map(|l| (l["name"].as_str().unwrap_or("").to_string(), l["attachedRoutes"].as_i64().unwrap_or(-1)))
                .collect();
            let programmed = listeners
                .iter()
                .all(|l| conditions(&l["conditions"]).contains(&"Programmed=True Programmed".to_string()));
            (conditions(&status["conditions"]) == ["Accepted=True Accepted", "Programmed=True Programmed"]
                && programmed
                && attached == [("http".into(), 3), ("https".into(), 1), ("tls".into(), 1)])
            .then_some(())
        }
    })
    .await;

    // Another controller's entry is kept; a route that stops naming our Gateway loses our entry.
    let routes: kube::Api<HTTPRoute> = kube::Api::namespaced(client.clone(), NS);
    let mut web = routes.get_status("web").await.expect("HTTPRoute web").status.unwrap_or_default();
    let foreign = json!({
        "parentRef": {"name": "theirs"}, "controllerName": "example.com/another-controller",
        "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                        "lastTransitionTime": "2024-01-01T00:00:00Z"}]
    });
    web.parents.push(serde_json::from_value(foreign).expect("parent status"));
    let patch = json!({"status": web});
    routes.patch_status("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("foreign entry");
    let mut detached =
        http_route("secure", "https", "secure.example.com", json!([{"backendRefs": [{"name": "b", "port": 80}]}]));
    detached["spec"]["parentRefs"] = json!([{"name": "another-gateway"}]);
    apply_json(&client, detached).await;
    wait_parent(&client, GROUP_VERSION, "HTTPRoute", "secure", &[]).await;
    let web = routes.get_status("web").await.expect("HTTPRoute web").status.unwrap_or_default();
    let controllers: Vec<&str> = web.parents.iter().map(|p| p.controller_name.as_str()).collect();
    assert_eq!(controllers, [router::source::kube::CONTROLLER_NAME, "example.com/another-controller"]);

    // The winner goes: the HTTPRoute gets the host and its status says so.
    delete(&client, "route.openshift.io/v1", "Route", Some(NS), "old-route").await;
    wait_parent(&client, GROUP_VERSION, "HTTPRoute", "clash", &accepted).await;
    eventually("the HTTPRoute serves clash.example.com", Duration::from_secs(20), || async move {
        (http_get(http, "clash.example.com", "/").await.backend() == "a").then_some(())
    })
    .await;
    router.shutdown().await;
}
