//! The Ingress destination CA annotation through the Kubernetes source (a real kube-apiserver): an Ingress with
//! `route.openshift.io/termination: reencrypt` and `route.openshift.io/destination-ca-certificate-secret`
//! naming a `kubernetes.io/tls` Secret reaches its TLS pod when the Secret's `tls.crt` verifies it, gets 503 when
//! it does not, and is not served while the Secret is missing; creating the Secret later brings it in.

use std::time::Duration;

use k8s_openapi::ByteString;
use router_tests::apiserver::objects::{apply_all, endpoint_slices, namespace, service};
use router_tests::apiserver::{apply_json, ControlPlane, Identity};
use router_tests::backend::TestBackend;
use router_tests::pki::TestCa;
use router_tests::tls_client::{client_config, try_https_get, Trust};
use router_tests::{eventually, start_router_with};
use serde_json::{json, Value};

const NS: &str = "ingress-tls";

/// A reencrypt Ingress for `host` to service `pod`, its destination CA in Secret `secret`.
fn ingress(name: &str, host: &str, secret: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": name, "namespace": NS, "annotations": {
            "route.openshift.io/termination": "reencrypt",
            "route.openshift.io/destination-ca-certificate-secret": secret
        }},
        "spec": {"rules": [{"host": host, "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "pod", "port": {"name": "http"}}}}
        ]}}]}
    })
}

/// A `kubernetes.io/tls` Secret whose `tls.crt` is `ca_pem` (the apiserver wants a `tls.key` too).
fn ca_secret(name: &str, ca_pem: &str, key_pem: &str) -> Value {
    let data = |text: &str| serde_json::to_value(ByteString(text.as_bytes().to_vec())).expect("base64");
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": NS},
        "data": {"tls.crt": data(ca_pem), "tls.key": data(key_pem)}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_destination_ca_secret_verifies_reencrypt_pods() {
    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    let (pod_ca, other_ca) = (TestCa::new("pod-ca"), TestCa::new("other-ca"));
    let pod_leaf = pod_ca.leaf(&["pod.internal"]);
    let pod = TestBackend::start_tls("tls-pod", &pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    apply_all(&client, [namespace(NS, &[]), service(NS, "pod")]).await;
    apply_all(&client, endpoint_slices(NS, "pod", "pod", &[pod.addr])).await;
    apply_all(
        &client,
        [
            ca_secret("pod-ca", &pod_ca.cert_pem, &pod_leaf.key_pem),
            ca_secret("other-ca", &other_ca.cert_pem, &pod_leaf.key_pem),
            ingress("good", "good.example.com", "pod-ca"),
            ingress("bad", "bad.example.com", "other-ca"),
            ingress("late", "late.example.com", "late-ca"),
        ],
    )
    .await;
    let router = start_router_with(plane.router_settings(Identity::Router)).await;
    let https = router.https_addr;
    let status = move |host: &'static str| async move {
        let anything = client_config(Trust::Anything, &["http/1.1"], None);
        try_https_get(https, Some(host), host, "/", anything, &[])
            .await
            .map(|reply| (reply.status.as_u16(), reply.body.clone()))
    };

    eventually("the verified Ingress to be served", Duration::from_secs(20), || async move {
        status("good.example.com").await.ok().filter(|(code, _)| *code == 200)
    })
    .await;
    assert_eq!(status("bad.example.com").await.map(|r| r.0), Ok(503), "the pod does not chain to other-ca");
    assert_eq!(status("late.example.com").await.map(|r| r.0), Ok(503), "no route while its CA Secret is missing");

    apply_json(&client, ca_secret("late-ca", &pod_ca.cert_pem, &pod_leaf.key_pem)).await;
    eventually("the Ingress whose Secret came later", Duration::from_secs(20), || async move {
        status("late.example.com").await.ok().filter(|(code, _)| *code == 200)
    })
    .await;
    router.shutdown().await;
}
