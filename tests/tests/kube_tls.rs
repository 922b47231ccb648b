//! TLS through the Kubernetes source against a real kube-apiserver: edge, reencrypt and passthrough Routes
//! created through the API are served on :443; a route whose key does not match its certificate is written
//! back as Admitted=False ExtendedValidationFailed; `spec.tls.externalCertificate` serves a kubernetes.io/tls
//! Secret of the route's namespace, follows its updates without a restart, and a missing Secret is written
//! back as ExternalCertificateValidationFailed, and so is a Secret the router was not granted access to (a
//! Role naming the Secret, as OpenShift asks of a route's owner).
//!
//! Each test owns its control plane; the tests of this file run one at a time.

use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::ByteString;
use router_tests::apiserver::objects::{apply_all, endpoint_slices, namespace, service, wait_admitted};
use router_tests::apiserver::{apply_json, get, ControlPlane, Identity};
use router_tests::backend::{TestBackend, TlsEcho};
use router_tests::pki::{Leaf, TestCa};
use router_tests::tls_client::{client_config, https_get, peer_certificate, tls_connect, try_https_get, Trust};
use router_tests::{eventually, start_router_with};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
const ROUTER: &str = "default";
const NS: &str = "secure";

/// A Route to `service` with `spec.tls` set to `tls`.
fn tls_route(name: &str, host: &str, service: &str, tls: Value) -> Value {
    json!({
        "apiVersion": "route.openshift.io/v1", "kind": "Route",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"host": host, "to": {"kind": "Service", "name": service, "weight": 100}, "tls": tls}
    })
}

/// A `kubernetes.io/tls` Secret holding `leaf`.
fn tls_secret(name: &str, leaf: &Leaf) -> Value {
    let data = |text: &str| serde_json::to_value(ByteString(text.as_bytes().to_vec())).expect("base64");
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": NS},
        "data": {"tls.crt": data(&leaf.chain_pem()), "tls.key": data(&leaf.key_pem)}
    })
}

/// A Role and RoleBinding that let the router's service account get, list and watch `secrets` by name.
fn secret_reader(name: &str, secrets: &[&str]) -> [Value; 2] {
    [
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": NS},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": secrets,
                       "verbs": ["get", "list", "watch"]}]
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "router", "namespace": "openshift-ingress"}]
        }),
    ]
}

/// Waits until a handshake on `https` with `sni` presents `certificate`.
async fn wait_served_certificate(https: SocketAddr, sni: &'static str, certificate: &[u8], what: &str) {
    let anything = client_config(Trust::Anything, &[], None);
    eventually(what, Duration::from_secs(20), || {
        let config = anything.clone();
        async move {
            let stream = tls_connect(https, Some(sni), config).await.ok()?;
            (peer_certificate(&stream).as_deref() == Some(certificate)).then_some(())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_routes_created_through_the_api_are_served_on_443() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let (front_ca, pod_ca) = (TestCa::new("front-ca"), TestCa::new("pod-ca"));
    let edge_leaf = front_ca.leaf(&["edge.example.com"]);
    let re_leaf = front_ca.leaf(&["re.example.com"]);
    let pod_leaf = pod_ca.leaf(&["pod.internal"]);
    let pass_leaf = pod_ca.leaf(&["pass.example.com"]);
    let (mismatched_cert, stray_key) = (front_ca.leaf(&["bad.example.com"]), front_ca.leaf(&["other.example.com"]));

    let web = TestBackend::start("web").await;
    let pod = TestBackend::start_tls("tls-pod", &pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let echo = TlsEcho::start(&pass_leaf.chain_pem(), &pass_leaf.key_pem).await;
    apply_all(&client, [namespace(NS, &[]), service(NS, "web"), service(NS, "pod"), service(NS, "echo")]).await;
    apply_all(&client, endpoint_slices(NS, "web", "web", &[web.addr])).await;
    apply_all(&client, endpoint_slices(NS, "pod", "pod", &[pod.addr])).await;
    apply_all(&client, endpoint_slices(NS, "echo", "echo", &[echo.addr])).await;
    apply_all(
        &client,
        [
            tls_route(
                "edge",
                "edge.example.com",
                "web",
                json!({"termination": "edge", "certificate": edge_leaf.cert_pem, "key": edge_leaf.key_pem,
                       "caCertificate": front_ca.cert_pem}),
            ),
            tls_route(
                "re",
                "re.example.com",
                "pod",
                json!({"termination": "reencrypt", "certificate": re_leaf.cert_pem, "key": re_leaf.key_pem,
                       "destinationCACertificate": pod_ca.cert_pem}),
            ),
            tls_route("pass", "pass.example.com", "echo", json!({"termination": "passthrough"})),
            tls_route(
                "mismatch",
                "bad.example.com",
                "web",
                json!({"termination": "edge", "certificate": mismatched_cert.cert_pem, "key": stray_key.key_pem}),
            ),
        ],
    )
    .await;

    let router = start_router_with(plane.router_settings(Identity::Router)).await;
    let https = router.https_addr;
    let front = client_config(Trust::Ca(&front_ca.cert_pem), &[], None);
    let edge = https_get(https, Some("edge.example.com"), "edge.example.com", "/hello", front.clone()).await;
    assert_eq!((edge.status.as_u16(), edge.backend()), (200, "web"), "edge route: {}", edge.body);
    assert_eq!(edge.peer_certificate, Some(edge_leaf.der.clone()), "the route's own certificate is served");

    let re = https_get(https, Some("re.example.com"), "re.example.com", "/deep", front).await;
    assert_eq!((re.status.as_u16(), re.backend()), (200, "tls-pod"), "reencrypt route: {}", re.body);
    assert_eq!(re.peer_certificate, Some(re_leaf.der.clone()));
    assert!(re.report()["tls"].is_object(), "the pod was reached over TLS: {}", re.body);

    let pass = tls_connect(https, Some("pass.example.com"), client_config(Trust::Ca(&pod_ca.cert_pem), &[], None))
        .await
        .expect("handshake with the passthrough pod through the router");
    assert_eq!(peer_certificate(&pass), Some(pass_leaf.der.clone()), "the pod terminates passthrough TLS");
    let mut pass = pass;
    pass.write_all(b"ping").await.expect("write through the relay");
    let mut echoed = [0u8; 4];
    pass.read_exact(&mut echoed).await.expect("read the echo");
    assert_eq!(&echoed, b"ping");
    assert_eq!(echo.last_sni().as_deref(), Some("pass.example.com"));

    wait_admitted(&client, NS, "edge", ROUTER, "True", "").await;
    wait_admitted(&client, NS, "re", ROUTER, "True", "").await;
    wait_admitted(&client, NS, "pass", ROUTER, "True", "").await;
    // The key check fails after admission: the status carries the rewritten outcome.
    wait_admitted(&client, NS, "mismatch", ROUTER, "False", "ExtendedValidationFailed").await;
    let anything = client_config(Trust::Anything, &[], None);
    let refused = try_https_get(https, Some("bad.example.com"), "bad.example.com", "/", anything, &[])
        .await
        .expect("the default certificate answers for a refused route");
    assert_eq!(refused.status.as_u16(), 503, "a refused route is not served");
    assert_ne!(refused.peer_certificate, Some(mismatched_cert.der.clone()));
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_certificate_follows_its_secret() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let ca = TestCa::new("external-ca");
    let (first, renewed) = (ca.leaf(&["site.example.com"]), ca.leaf(&["site.example.com"]));
    let (late, locked) = (ca.leaf(&["late.example.com"]), ca.leaf(&["locked.example.com"]));
    let web = TestBackend::start("web").await;
    apply_all(&client, [namespace(NS, &[]), service(NS, "web")]).await;
    apply_all(&client, [tls_secret("site-cert", &first), tls_secret("locked-cert", &locked)]).await;
    apply_all(&client, secret_reader("router-reads-certs", &["site-cert", "late-cert"])).await;
    apply_all(&client, endpoint_slices(NS, "web", "web", &[web.addr])).await;
    let external = |secret: &str| json!({"termination": "edge", "externalCertificate": {"name": secret}});
    apply_all(
        &client,
        [
            tls_route("site", "site.example.com", "web", external("site-cert")),
            tls_route("late", "late.example.com", "web", external("late-cert")),
            tls_route("locked", "locked.example.com", "web", external("locked-cert")),
        ],
    )
    .await;

    let router = start_router_with(plane.router_settings(Identity::Router)).await;
    let https = router.https_addr;
    let trusting = client_config(Trust::Ca(&ca.cert_pem), &[], None);
    let reply = https_get(https, Some("site.example.com"), "site.example.com", "/", trusting.clone()).await;
    assert_eq!((reply.status.as_u16(), reply.backend()), (200, "web"), "{}", reply.body);
    assert_eq!(reply.peer_certificate, Some(first.der.clone()), "the Secret's certificate is served");
    wait_admitted(&client, NS, "site", ROUTER, "True", "").await;
    wait_admitted(&client, NS, "late", ROUTER, "False", "ExternalCertificateValidationFailed").await;
    // The Secret exists but the router was not granted access to it.
    wait_admitted(&client, NS, "locked", ROUTER, "False", "ExternalCertificateValidationFailed").await;
    let locked_route = get(&client, "route.openshift.io/v1", "Route", Some(NS), "locked").await.expect("route");
    let message = locked_route.data["status"]["ingress"][0]["conditions"][0]["message"].as_str().unwrap_or("");
    assert!(message.contains("Forbidden"), "denied access is reported as Forbidden: {message:?}");
    let anything = client_config(Trust::Anything, &[], None);
    let refused = try_https_get(https, Some("locked.example.com"), "locked.example.com", "/", anything, &[])
        .await
        .expect("the default certificate answers for a refused route");
    assert_eq!(refused.status.as_u16(), 503);
    assert_ne!(refused.peer_certificate, Some(locked.der.clone()), "an unreadable Secret is not served");

    // The Secret is renewed in place: the same router serves the new certificate.
    apply_json(&client, tls_secret("site-cert", &renewed)).await;
    wait_served_certificate(https, "site.example.com", &renewed.der, "the renewed certificate to be served").await;
    let reply = https_get(https, Some("site.example.com"), "site.example.com", "/", trusting.clone()).await;
    assert_eq!(reply.status.as_u16(), 200);
    wait_admitted(&client, NS, "site", ROUTER, "True", "").await;

    // The missing Secret appears: the route is admitted and served with it.
    apply_json(&client, tls_secret("late-cert", &late)).await;
    wait_admitted(&client, NS, "late", ROUTER, "True", "").await;
    wait_served_certificate(https, "late.example.com", &late.der, "the late Secret's certificate").await;

    // Access granted, the route is checked again when its spec changes (as OpenShift validates on update).
    apply_all(&client, secret_reader("router-reads-locked", &["locked-cert"])).await;
    let mut tls = external("locked-cert");
    tls["insecureEdgeTerminationPolicy"] = json!("Redirect");
    apply_json(&client, tls_route("locked", "locked.example.com", "web", tls)).await;
    wait_admitted(&client, NS, "locked", ROUTER, "True", "").await;
    wait_served_certificate(https, "locked.example.com", &locked.der, "the unlocked Secret's certificate").await;
    router.shutdown().await;
}
