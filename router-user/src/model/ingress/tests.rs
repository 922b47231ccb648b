//! Tests of the Ingress step: rules and paths as routes, wildcards, TLS, classes, Route objects first.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::*;

fn ingress(value: serde_json::Value) -> Ingress {
    serde_json::from_value(value).expect("ingress fixture")
}

fn snapshot_with_web_service() -> Snapshot {
    let service: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"ports": [
            {"name": "http", "port": 80, "targetPort": 8080},
            {"port": 81, "targetPort": 9090}
        ]}
    }))
    .expect("service fixture");
    let mut snapshot = Snapshot::default();
    snapshot.services.insert(ObjectKey::new("ns", "web"), Arc::new(service.into()));
    snapshot
}

fn rule(host: &str, paths: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"host": host, "http": {"paths": paths}})
}

#[test]
fn each_rule_path_becomes_a_route_and_exact_paths_are_skipped() {
    let ingress = ingress(serde_json::json!({
        "metadata": {"name": "shop", "namespace": "ns", "uid": "u1", "labels": {"team": "a"}},
        "spec": {"rules": [rule("shop.example.com", serde_json::json!([
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
            {"path": "/exact", "pathType": "Exact", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
            {"path": "/raw", "pathType": "ImplementationSpecific",
             "backend": {"service": {"name": "web", "port": {"number": 81}}}}
        ]))]}
    }));
    let routes = ingress_routes(&ingress, &snapshot_with_web_service());
    let names: Vec<_> = routes.iter().map(|(key, _)| key.to_string()).collect();
    assert_eq!(names, ["ns/shop-ingress-0-0", "ns/shop-ingress-0-2"]);
    let (_, first) = &routes[0];
    assert_eq!(first.spec.host.as_deref(), Some("shop.example.com"));
    assert_eq!(first.spec.path.as_deref(), Some("/"));
    assert_eq!(first.spec.to.name, "web");
    assert_eq!(first.spec.port.as_ref().map(|p| &p.target_port), Some(&IntOrString::String("http".into())));
    assert_eq!(first.metadata.labels.as_ref().and_then(|l| l.get("team")).map(String::as_str), Some("a"));
    assert!(first.spec.tls.is_none());
    // An unnamed service port resolves to its target port.
    assert_eq!(routes[1].1.spec.port.as_ref().map(|p| &p.target_port), Some(&IntOrString::Int(9090)));
}

#[test]
fn wildcard_hosts_become_subdomain_routes() {
    let ingress = ingress(serde_json::json!({
        "metadata": {"name": "any", "namespace": "ns"},
        "spec": {"rules": [rule("*.apps.example.com", serde_json::json!([
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}
        ]))]}
    }));
    let routes = ingress_routes(&ingress, &Snapshot::default());
    assert_eq!(routes.len(), 1);
    assert_eq!(routes[0].1.spec.host.as_deref(), Some("wildcard.apps.example.com"));
    assert_eq!(routes[0].1.spec.wildcard_policy.as_deref(), Some("Subdomain"));
}

#[test]
fn tls_entries_make_edge_routes_with_the_secret_and_wait_for_it() {
    let value = serde_json::json!({
        "metadata": {"name": "secure", "namespace": "ns"},
        "spec": {
            "tls": [{"hosts": ["secure.example.com"], "secretName": "cert"}],
            "rules": [rule("secure.example.com", serde_json::json!([
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}
            ]))]
        }
    });
    let mut snapshot = Snapshot::default();
    assert!(ingress_routes(&ingress(value.clone()), &snapshot).is_empty(), "waits for its secret");

    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "cert", "namespace": "ns"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "Q0VSVA==", "tls.key": "S0VZ"}
    }))
    .expect("secret fixture");
    snapshot.secrets.insert(ObjectKey::new("ns", "cert"), Arc::new(secret));
    let routes = ingress_routes(&ingress(value), &snapshot);
    let tls = routes[0].1.spec.tls.as_ref().expect("edge TLS");
    assert_eq!(tls.termination, "edge");
    assert_eq!(tls.insecure_edge_termination_policy.as_deref(), Some("Redirect"));
    assert_eq!((tls.certificate.as_deref(), tls.key.as_deref()), (Some("CERT"), Some("KEY")));
}

#[test]
fn reencrypt_takes_its_destination_ca_from_the_annotated_secret_and_waits_for_it() {
    let value = serde_json::json!({
        "metadata": {"name": "re", "namespace": "ns", "annotations": {
            "route.openshift.io/termination": "reencrypt",
            "route.openshift.io/destination-ca-certificate-secret": "pod-ca"
        }},
        "spec": {"rules": [rule("re.example.com", serde_json::json!([
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}
        ]))]}
    });
    let mut snapshot = snapshot_with_web_service();
    assert!(ingress_routes(&ingress(value.clone()), &snapshot).is_empty(), "waits for its CA secret");

    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "pod-ca", "namespace": "ns"},
        "type": "Opaque",
        "data": {"tls.crt": "UE9EIENB"}
    }))
    .expect("secret fixture");
    snapshot.secrets.insert(ObjectKey::new("ns", "pod-ca"), Arc::new(secret));
    let routes = ingress_routes(&ingress(value.clone()), &snapshot);
    let tls = routes[0].1.spec.tls.as_ref().expect("reencrypt TLS");
    assert_eq!(tls.termination, "reencrypt");
    assert_eq!(tls.destination_ca_certificate.as_deref(), Some("POD CA"));

    // Edge routes do not use it.
    let mut edge = value;
    edge["metadata"]["annotations"]["route.openshift.io/termination"] = "edge".into();
    let routes = ingress_routes(&ingress(edge), &snapshot);
    assert_eq!(routes[0].1.spec.tls.as_ref().expect("edge TLS").destination_ca_certificate, None);
}

#[test]
fn the_termination_annotation_picks_passthrough() {
    let ingress = ingress(serde_json::json!({
        "metadata": {"name": "pt", "namespace": "ns", "annotations": {"route.openshift.io/termination": "passthrough"}},
        "spec": {"rules": [rule("pt.example.com", serde_json::json!([
            {"pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "https"}}}}
        ]))]}
    }));
    let routes = ingress_routes(&ingress, &Snapshot::default());
    let tls = routes[0].1.spec.tls.as_ref().expect("passthrough TLS");
    assert_eq!(tls.termination, "passthrough");
    assert!(tls.certificate.is_none());
    assert_eq!(routes[0].1.spec.path, None);
}

#[test]
fn other_ingress_classes_are_not_ours() {
    let paths = serde_json::json!([
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}
    ]);
    let by_field = ingress(serde_json::json!({
        "metadata": {"name": "a", "namespace": "ns"},
        "spec": {"ingressClassName": "nginx", "rules": [rule("a.example.com", paths.clone())]}
    }));
    let by_annotation = ingress(serde_json::json!({
        "metadata": {"name": "b", "namespace": "ns", "annotations": {"kubernetes.io/ingress.class": "nginx"}},
        "spec": {"rules": [rule("b.example.com", paths.clone())]}
    }));
    let ours = ingress(serde_json::json!({
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"ingressClassName": "openshift-default", "rules": [rule("c.example.com", paths)]}
    }));
    assert!(ingress_routes(&by_field, &Snapshot::default()).is_empty());
    assert!(ingress_routes(&by_annotation, &Snapshot::default()).is_empty());
    assert_eq!(ingress_routes(&ours, &Snapshot::default()).len(), 1);
}

#[test]
fn the_step_adds_every_ingress_and_leaves_route_objects_alone() {
    let paths = serde_json::json!([
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}
    ]);
    let mut snapshot = Snapshot::default();
    for (name, host) in [("a", "a.example.com"), ("b", "b.example.com")] {
        let value = serde_json::json!({
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"rules": [rule(host, paths.clone())]}
        });
        snapshot.ingresses.insert(ObjectKey::new("ns", name), Arc::new(ingress(value)));
    }
    let own = Route {
        metadata: ObjectMeta { name: Some("b-ingress-0-0".into()), ..ObjectMeta::default() },
        spec: RouteSpec { host: Some("own.example.com".into()), ..RouteSpec::default() },
        status: None,
    };
    snapshot.routes.insert(ObjectKey::new("ns", "b-ingress-0-0"), Arc::new(own));
    add_ingress_routes(&mut snapshot);
    let hosts: Vec<(String, Option<&str>)> =
        snapshot.routes.iter().map(|(key, route)| (key.to_string(), route.spec.host.as_deref())).collect();
    assert_eq!(
        hosts,
        [
            ("ns/a-ingress-0-0".to_string(), Some("a.example.com")),
            ("ns/b-ingress-0-0".to_string(), Some("own.example.com"))
        ]
    );
    assert_eq!(snapshot.ingresses.len(), 2, "the Ingresses stay in the snapshot");
}
