//! Client certificates per route through the Kubernetes source, against a real kube-apiserver and with only the
//! rights `deploy/rbac.yaml` grants: a Route annotated `router.openshift.io/client-tls-ca` whose ConfigMap is
//! missing is written back as Admitted=False ClientTLSValidationFailed while another route serves; once the
//! ConfigMap is created the route is admitted and asks for certificates from that bundle (curl --cert/--key);
//! a bundle replaced in place is followed without a restart; `client-tls-ca-secret` reads a kubernetes.io/tls
//! Secret's `ca.crt` the same way.

use std::time::Duration;

use router_tests::apiserver::objects::{apply_all, endpoint_slices, namespace, service, wait_admitted};
use router_tests::apiserver::{apply_json, apply_yaml, get, ControlPlane, Identity};
use router_tests::backend::TestBackend;
use router_tests::cli::curl_https;
use router_tests::pki::{PemDir, TestCa};
use router_tests::{eventually, start_router_with};
use serde_json::{json, Value};

const ROUTER: &str = "default";
const NS: &str = "shop";

/// An edge Route for `host` with its own certificate and the client certificate annotations.
fn route(name: &str, host: &str, server_ca: &TestCa, annotations: Value) -> Value {
    let leaf = server_ca.leaf(&[host]);
    json!({
        "apiVersion": "route.openshift.io/v1", "kind": "Route",
        "metadata": {"name": name, "namespace": NS, "annotations": annotations},
        "spec": {"host": host, "to": {"kind": "Service", "name": "web", "weight": 100},
                 "tls": {"termination": "edge", "certificate": leaf.cert_pem, "key": leaf.key_pem}}
    })
}

/// A `kubernetes.io/tls` Secret whose `ca.crt` holds `ca`'s certificate (the form cert-manager writes).
fn tls_secret_with_ca(name: &str, ca: &TestCa) -> Value {
    let leaf = ca.leaf(&[name]);
    json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
           "metadata": {"name": name, "namespace": NS},
           "stringData": {"tls.crt": leaf.cert_pem, "tls.key": leaf.key_pem, "ca.crt": ca.cert_pem}})
}

fn config_map(name: &str, pem: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
           "data": {"ca-bundle.pem": pem}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routes_client_ca_config_map_is_read_from_the_api_and_followed() {
    let Some(plane) = ControlPlane::start().await else { return };
    let client = plane.client().await;
    apply_yaml(&client, include_str!("../../deploy/crd.yaml")).await;
    apply_yaml(&client, include_str!("../../deploy/rbac.yaml")).await;
    router_tests::apiserver::objects::wait_crd_established(&client).await;
    let (server_ca, first_ca, second_ca) = (TestCa::new("server-ca"), TestCa::new("first"), TestCa::new("second"));
    let web = TestBackend::start("web").await;
    apply_all(&client, [namespace(NS, &[]), service(NS, "web")]).await;
    apply_all(&client, endpoint_slices(NS, "web", "web", &[web.addr])).await;
    let checked = json!({"router.openshift.io/client-tls-ca": "clients"});
    let by_secret = json!({"router.openshift.io/client-tls-ca-secret": "client-ca"});
    apply_all(
        &client,
        [
            route("checked", "checked.example.com", &server_ca, checked),
            route("open", "open.example.com", &server_ca, json!({})),
            route("by-secret", "by-secret.example.com", &server_ca, by_secret),
        ],
    )
    .await;

    let router = start_router_with(plane.router_settings(Identity::Router)).await;
    wait_admitted(&client, NS, "open", ROUTER, "True", "").await;
    wait_admitted(&client, NS, "checked", ROUTER, "False", "ClientTLSValidationFailed").await;
    let status = get(&client, "route.openshift.io/v1", "Route", Some(NS), "checked").await.expect("route");
    let message = status.data["status"]["ingress"][0]["conditions"][0]["message"].as_str().unwrap_or("").to_string();
    assert!(message.contains("\"clients\" not found"), "{message}");

    let files = PemDir::new();
    let ca_file = files.write("server-ca.pem", &server_ca.cert_pem).to_string_lossy().into_owned();
    let (first, second) = (first_ca.client_leaf("first-client"), second_ca.client_leaf("second-client"));
    let identity = |name: &str, leaf: &router_tests::pki::Leaf| {
        let cert = files.write(&format!("{name}.pem"), &leaf.cert_pem).to_string_lossy().into_owned();
        let key = files.write(&format!("{name}.key"), &leaf.key_pem).to_string_lossy().into_owned();
        vec!["--cacert".to_string(), ca_file.clone(), "--cert".into(), cert, "--key".into(), key]
    };
    let (first_args, second_args) = (identity("first", &first), identity("second", &second));
    let curl = |host: &'static str, args: &[String]| {
        let args: Vec<String> = args.to_vec();
        let https = router.https_addr;
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            curl_https(https, host, "/", &args).await
        }
    };
    let open = curl("open.example.com", &["--cacert".into(), ca_file.clone()]).await;
    assert_eq!((open.exit_code, open.status), (0, 200), "{}", open.stderr);

    apply_json(&client, config_map("clients", &first_ca.cert_pem)).await;
    wait_admitted(&client, NS, "checked", ROUTER, "True", "").await;
    let served = eventually("the first bundle's client served", Duration::from_secs(20), || async {
        let reply = curl("checked.example.com", &first_args).await;
        (reply.status == 200).then_some(reply)
    })
    .await;
    assert!(served.seen_header("x-ssl-client-cn").join("").contains("first-client"));
    let anonymous = curl("checked.example.com", &["--cacert".into(), ca_file.clone()]).await;
    assert_ne!(anonymous.exit_code, 0, "required: no certificate, no handshake");
    let other = curl("checked.example.com", &second_args).await;
    assert_ne!(other.exit_code, 0, "a certificate of another CA is refused");

    // A Secret holds the bundle of another route.
    wait_admitted(&client, NS, "by-secret", ROUTER, "False", "ClientTLSValidationFailed").await;
    apply_json(&client, tls_secret_with_ca("client-ca", &second_ca)).await;
    wait_admitted(&client, NS, "by-secret", ROUTER, "True", "").await;
    eventually("the Secret's bundle checks its route", Duration::from_secs(20), || async {
        (curl("by-secret.example.com", &second_args).await.status == 200).then_some(())
    })
    .await;
    assert_ne!(curl("by-secret.example.com", &first_args).await.exit_code, 0, "first's CA is not in the Secret");

    // The bundle is replaced in place: the router follows it.
    apply_json(&client, config_map("clients", &second_ca.cert_pem)).await;
    eventually("the second bundle's client served", Duration::from_secs(20), || async {
        (curl("checked.example.com", &second_args).await.status == 200).then_some(())
    })
    .await;
    assert_ne!(curl("checked.example.com", &first_args).await.exit_code, 0, "the first CA is no longer trusted");
    router.shutdown().await;
}
