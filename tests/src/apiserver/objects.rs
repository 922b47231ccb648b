//! Kubernetes objects for the apiserver tests, as JSON the way `kubectl get -o json` prints them, and small
//! readers for what the router writes back (route status).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use kube::Client;
use serde_json::{json, Value};

use super::{apply_json, get};
use crate::eventually;

/// A namespace with `labels`.
pub fn namespace(name: &str, labels: &[(&str, &str)]) -> Value {
    let labels: BTreeMap<_, _> = labels.iter().copied().collect();
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

/// A ClusterIP Service with one port named `http`.
pub fn service(namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}
    })
}

/// A `discovery.k8s.io/v1beta1` EndpointSlice (what a 1.20 server serves) of `service` listing `pods` as ready
/// endpoints of its `http` port. Test pods listen on different ports, so each gets its own slice, named
/// `<slice>-<index>`.
pub fn endpoint_slices(namespace: &str, service: &str, slice: &str, pods: &[SocketAddr]) -> Vec<Value> {
    pods.iter()
        .enumerate()
        .map(|(index, pod)| {
            json!({
                "apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
                "metadata": {
                    "name": format!("{slice}-{index}"), "namespace": namespace,
                    "labels": {"kubernetes.io/service-name": service}
                },
                "addressType": "IPv4",
                "ports": [{"name": "http", "port": pod.port(), "protocol": "TCP"}],
                "endpoints": [{
                    "addresses": [pod.ip().to_string()],
                    "conditions": {"ready": true},
                    "targetRef": {"kind": "Pod", "name": format!("{service}-pod-{index}"), "namespace": namespace}
                }]
            })
        })
        .collect()
}

/// A plain HTTP route with `labels`.
pub fn route(namespace: &str, name: &str, host: &str, path: &str, service: &str, labels: &[(&str, &str)]) -> Value {
    let labels: BTreeMap<_, _> = labels.iter().copied().collect();
    json!({
        "apiVersion": "route.openshift.io/v1", "kind": "Route",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"host": host, "path": path, "to": {"kind": "Service", "name": service, "weight": 100}}
    })
}

/// Applies each object in turn.
pub async fn apply_all(client: &Client, objects: impl IntoIterator<Item = Value>) {
    for object in objects {
        apply_json(client, object).await;
    }
}

/// `(status, reason)` of the `Admitted` condition in `router_name`'s status entry of a route, if written.
pub async fn admitted(client: &Client, namespace: &str, name: &str, router_name: &str) -> Option<(String, String)> {
    let route = get(client, "route.openshift.io/v1", "Route", Some(namespace), name).await?;
    let entries = route.data["status"]["ingress"].as_array()?.clone();
    let ours = entries.iter().find(|entry| entry["routerName"] == router_name)?;
    let condition = ours["conditions"].as_array()?.iter().find(|c| c["type"] == "Admitted")?.clone();
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    Some((text(&condition["status"]), text(&condition["reason"])))
}

/// Waits until `router_name`'s entry of the route says `status` (and `reason`, when not empty).
pub async fn wait_admitted(
    client: &Client,
    namespace: &str,
    name: &str,
    router_name: &str,
    status: &str,
    reason: &str,
) {
    let what = format!("route {namespace}/{name}: {router_name} says Admitted={status} {reason}");
    eventually(&what, Duration::from_secs(20), move || async move {
        let found = admitted(client, namespace, name, router_name).await;
        found.filter(|(s, r)| s == status && (reason.is_empty() || r == reason)).map(|_| ())
    })
    .await;
}

/// Waits until the Route CRD reports `Established`.
pub async fn wait_crd_established(client: &Client) {
    wait_named_crd_established(client, "routes.route.openshift.io").await;
}

/// Waits until the CRD `name` (`<plural>.<group>`) reports `Established`.
pub async fn wait_named_crd_established(client: &Client, name: &str) {
    let what = format!("the CRD {name} to be established");
    eventually(&what, Duration::from_secs(30), move || async move {
        let crd = get(client, "apiextensions.k8s.io/v1", "CustomResourceDefinition", None, name).await?;
        let conditions = crd.data["status"]["conditions"].as_array()?.clone();
        conditions.iter().any(|c| c["type"] == "Established" && c["status"] == "True").then_some(())
    })
    .await;
}
