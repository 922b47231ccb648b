//! Tests of the Gateway API step: listeners, attachment, rules and filters as routes, what is reported.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

use super::*;
use crate::model::{ObjectKey, Route, Snapshot};

const CLASS: &str = "router";

fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Arc<T> {
    Arc::new(serde_json::from_value(value).expect("fixture"))
}

/// A snapshot with Service `ns/web` (port 80 named `http`), Secret `ns/cert` and Gateway `ns/gw` with
/// listeners `http` (:80), `https` (:443, cert) and `tls` (:443 passthrough).
fn snapshot() -> Snapshot {
    let mut snapshot = Snapshot::default();
    let service: Arc<Service> = object(json!({
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}, {"port": 81, "targetPort": 9090}]}
    }));
    let service = Arc::unwrap_or_clone(service).into();
    snapshot.services.insert(ObjectKey::new("ns", "web"), Arc::new(service));
    let secret: Arc<Secret> = object(json!({
        "metadata": {"name": "cert", "namespace": "ns"},
        "data": {"tls.crt": "Q0VSVA==", "tls.key": "S0VZ"}
    }));
    snapshot.secrets.insert(ObjectKey::new("ns", "cert"), secret);
    snapshot.gateways.insert(
        ObjectKey::new("ns", "gw"),
        object(json!({
            "metadata": {"name": "gw", "namespace": "ns", "generation": 3},
            "spec": {"gatewayClassName": CLASS, "listeners": [
                {"name": "http", "port": 80, "protocol": "HTTP"},
                {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "*.example.com",
                 "tls": {"certificateRefs": [{"name": "cert"}]}},
                {"name": "tls", "port": 443, "protocol": "TLS", "tls": {"mode": "Passthrough"}},
                {"name": "odd", "port": 8080, "protocol": "HTTP"}
            ]}
        })),
    );
    snapshot
}

fn http_route(snapshot: &mut Snapshot, name: &str, spec: serde_json::Value) {
    let value = json!({"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec});
    snapshot.http_routes.insert(ObjectKey::new("ns", name), object(value));
}

fn route<'s>(snapshot: &'s Snapshot, name: &str) -> &'s Route {
    snapshot
        .routes
        .get(&ObjectKey::new("ns", name))
        .unwrap_or_else(|| panic!("route {name}: {:?}", snapshot.routes.keys().collect::<Vec<_>>()))
}

fn parent(snapshot: &Snapshot, name: &str, index: usize) -> ParentOutcome {
    snapshot.gateway_report.routes[&(RouteKind::HTTPRoute, ObjectKey::new("ns", name))].parents[index].clone()
}

#[test]
fn rules_become_routes_with_weights_headers_rewrites_and_conditions() {
    let mut snapshot = snapshot();
    http_route(
        &mut snapshot,
        "shop",
        json!({
            "parentRefs": [{"name": "gw", "sectionName": "http"}],
            "hostnames": ["Shop.example.com"],
            "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": "/api/"}}, {"path": {"type": "Exact", "value": "/x"}}],
                "filters": [
                    {"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "X-A", "value": "50%"}], "remove": ["X-B"]}},
                    {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/v2"}}}
                ],
                "backendRefs": [{"name": "web", "port": 80, "weight": 3000}, {"name": "web", "port": 80, "weight": 1000}]
            }, {
                "matches": [{"headers": [{"name": "X", "value": "y"}], "method": "PUT"}, {"path": {"type": "RegularExpression", "value": "/r.*"}}],
                "backendRefs": [{"name": "web", "port": 80}]
            }]
        }),
    );
    add_gateway_routes(&mut snapshot, CLASS);
    assert_eq!(snapshot.routes.len(), 3, "{:?}", snapshot.routes.keys().collect::<Vec<_>>());
    let made = route(&snapshot, "shop-httproute-0-0-shop.example.com");
    assert!(made.spec.request_match.is_none(), "a path prefix alone needs no conditions");
    assert_eq!(made.spec.host.as_deref(), Some("shop.example.com"));
    assert_eq!(made.spec.path.as_deref(), Some("/api"), "the trailing slash is dropped");
    assert!(made.spec.tls.is_none(), "an HTTP listener only: plain");
    assert_eq!(made.spec.to.weight, Some(256), "weights scaled into 0..256");
    assert_eq!(made.spec.alternate_backends[0].weight, Some(85));
    assert_eq!(made.spec.port.as_ref().map(|p| &p.target_port), Some(&IntOrString::String("http".into())));
    let actions = made.spec.http_headers.as_ref().and_then(|h| h.actions.as_ref()).expect("actions");
    assert_eq!(actions.request.len(), 2);
    assert_eq!(actions.request[0].action.set.as_ref().map(|s| s.value.as_str()), Some("50%%"));
    assert_eq!(actions.request[1].action.kind, "Delete");
    let annotations = made.metadata.annotations.as_ref().expect("annotations");
    assert_eq!(annotations["haproxy.router.openshift.io/rewrite-target"], "/v2");
    let outcome = parent(&snapshot, "shop", 0);
    assert_eq!(outcome.attached, Ok(()));
    let reported: Vec<&str> = outcome.unsupported.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(reported, ["rule 1 match 1: RegularExpression path matches are not served"]);
    let names: Vec<&str> = outcome.routes.iter().map(|key| key.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "shop-httproute-0-0-shop.example.com",
            "shop-httproute-0-1-shop.example.com",
            "shop-httproute-1-0-shop.example.com"
        ]
    );
    assert_eq!(snapshot.gateway_report.gateways[&ObjectKey::new("ns", "gw")].listeners[0].attached_routes, 1);

    let exact = route(&snapshot, "shop-httproute-0-1-shop.example.com");
    assert_eq!(exact.spec.path.as_deref(), Some("/x"));
    let conditions = &exact.spec.request_match.as_ref().expect("an exact path is a condition").conditions;
    assert!(conditions.exact_path && conditions.headers.is_empty());
    let with_header = route(&snapshot, "shop-httproute-1-0-shop.example.com");
    assert_eq!(with_header.spec.path.as_deref(), Some("/"), "no path: every path");
    let request_match = with_header.spec.request_match.as_ref().expect("conditions");
    assert_eq!(request_match.conditions.method.as_deref(), Some("PUT"));
    assert_eq!(request_match.conditions.headers[0].name, "x", "header names lowercased");
    assert_eq!((request_match.origin.name.as_str(), request_match.origin.rule), ("shop", 1));
}

#[test]
fn header_adds_and_full_path_rewrites_are_carried_beside_the_route() {
    let mut snapshot = snapshot();
    http_route(
        &mut snapshot,
        "full",
        json!({
            "parentRefs": [{"name": "gw", "sectionName": "http"}],
            "hostnames": ["full.example.com"],
            "rules": [{
                "filters": [
                    {"type": "RequestHeaderModifier", "requestHeaderModifier": {"add": [{"name": "X-Add", "value": "1%"}]}},
                    {"type": "ResponseHeaderModifier", "responseHeaderModifier": {"add": [{"name": "X-Resp", "value": "r"}]}},
                    {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/one"}}}
                ],
                "backendRefs": [{"name": "web", "port": 80}]
            }, {
                "matches": [{"path": {"value": "/bad"}}],
                "filters": [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplaceFullPath", "replaceFullPath": "one"}}}],
                "backendRefs": [{"name": "web", "port": 80}]
            }]
        }),
    );
    add_gateway_routes(&mut snapshot, CLASS);
    let made = route(&snapshot, "full-httproute-0-0-full.example.com");
    let filters = made.spec.gateway_filters.as_ref().expect("filters");
    assert_eq!(filters.request_header_adds, [("X-Add".to_string(), "1%".to_string())], "literally");
    assert_eq!(filters.response_header_adds, [("X-Resp".to_string(), "r".to_string())]);
    assert_eq!(filters.replace_full_path.as_deref(), Some("/one"));
    assert!(made.spec.http_headers.is_none(), "nothing for Route fields");
    let reported: Vec<String> = parent(&snapshot, "full", 0).unsupported.into_iter().map(|p| p.message).collect();
    assert_eq!(reported, ["rule 1: URLRewrite ReplaceFullPath Some(\"one\") does not start with /"]);
    assert_eq!(snapshot.routes.len(), 1);
}

#[test]
fn http_and_https_listeners_make_one_edge_route_and_a_redirect_rule_redirects_it() {
    let mut snapshot = snapshot();
    http_route(
        &mut snapshot,
        "site",
        json!({
            "parentRefs": [{"name": "gw", "sectionName": "https"}, {"name": "gw", "sectionName": "http"}],
            "hostnames": ["a.example.com", "other.org"],
            "rules": [{"backendRefs": [{"name": "web", "port": 81}]}]
        }),
    );
    add_gateway_routes(&mut snapshot, CLASS);
    let made = route(&snapshot, "site-httproute-0-0-a.example.com");
    let tls = made.spec.tls.as_ref().expect("edge");
    assert_eq!((tls.termination.as_str(), tls.certificate.as_deref()), ("edge", Some("CERT")));
    assert_eq!(tls.insecure_edge_termination_policy.as_deref(), Some("Allow"), "served on HTTP too");
    assert_eq!(made.spec.port.as_ref().map(|p| &p.target_port), Some(&IntOrString::Int(9090)));
    let plain = route(&snapshot, "site-httproute-0-0-other.org");
    assert!(plain.spec.tls.is_none(), "other.org is outside the HTTPS listener's hostname");

    let mut snapshot = self::snapshot();
    http_route(
        &mut snapshot,
        "site",
        json!({
            "parentRefs": [{"name": "gw", "sectionName": "https"}],
            "hostnames": ["a.example.com"],
            "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]
        }),
    );
    http_route(
        &mut snapshot,
        "to-https",
        json!({
            "parentRefs": [{"name": "gw", "sectionName": "http"}],
            "hostnames": ["a.example.com", "b.example.com"],
            "rules": [{"filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https"}}]}]
        }),
    );
    add_gateway_routes(&mut snapshot, CLASS);
    let made = route(&snapshot, "site-httproute-0-0-a.example.com");
    let policy = made.spec.tls.as_ref().and_then(|tls| tls.insecure_edge_termination_policy.as_deref());
    assert_eq!(policy, Some("Redirect"));
    assert_eq!(snapshot.routes.len(), 1, "a redirect makes no route of its own");
    let redirect = parent(&snapshot, "to-https", 0);
    assert_eq!(redirect.routes, [ObjectKey::new("ns", "site-httproute-0-0-a.example.com")]);
    assert_eq!(redirect.unsupported.len(), 1, "b.example.com has no HTTPS route: {:?}", redirect.unsupported);
}

#[test]
fn a_redirect_rule_with_conditions_redirects_the_https_route_asking_the_same() {
    let mut snapshot = snapshot();
    let header = |value: &str| json!([{"headers": [{"name": "x", "value": value}]}]);
    http_route(
        &mut snapshot,
        "site",
        json!({
            "parentRefs": [{"name": "gw", "sectionName": "https"}],
            "hostnames": ["a.example.com"],
            "rules": [{"matches": header("1"), "backendRefs": [{"name": "web", "port": 80}]},
                      {"matches": header("2"), "backendRefs": [{"name": "web", "port": 80}]},
                      {"backendRefs": [{"name": "web", "port": 80}]}]
        }),
    );
    http_route(
        &mut snapshot,
        "to-https",
        json!({
            "parentRefs": [{"name": "gw", "sectionName": "http"}],
            "hostnames": ["a.example.com"],
            "rules": [{"matches": [{"headers": [{"name": "X", "value": "1"}]}, {"headers": [{"name": "x", "value": "3"}]}],
                       "filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https"}}]}]
        }),
    );
    add_gateway_routes(&mut snapshot, CLASS);
    let policy = |name: &str| {
        let made = route(&snapshot, name);
        made.spec.tls.as_ref().and_then(|tls| tls.insecure_edge_termination_policy.clone()).unwrap_or_default()
    };
    assert_eq!(policy("site-httproute-0-0-a.example.com"), "Redirect", "the same header match");
    assert_eq!(policy("site-httproute-1-0-a.example.com"), "None", "another value");
    assert_eq!(policy("site-httproute-2-0-a.example.com"), "None", "no conditions");
    let redirect = parent(&snapshot, "to-https", 0);
    assert_eq!(redirect.routes, [ObjectKey::new("ns", "site-httproute-0-0-a.example.com")]);
    assert_eq!(redirect.unsupported.len(), 1, "x: 3 has no HTTPS route: {:?}", redirect.unsupported);
}

#[test]
fn attachment_problems_are_reported_per_parent() {
    let mut snapshot = snapshot();
    snapshot.gateways.insert(
        ObjectKey::new("ns", "theirs"),
        object(json!({"metadata": {"name": "theirs", "namespace": "ns"}, "spec": {"gatewayClassName": "other", "listeners": []}})),
    );
    http_route(
        &mut snapshot,
        "r",
        json!({
            "parentRefs": [
                {"name": "theirs"},
                {"name": "gw", "sectionName": "https"},
                {"name": "gw", "sectionName": "tls"},
                {"name": "gw", "sectionName": "nope"},
                {"name": "gw", "sectionName": "odd"}
            ],
            "hostnames": ["x.org"],
            "rules": [{"backendRefs": [{"name": "missing", "port": 80}, {"name": "web", "namespace": "elsewhere", "port": 80}]}]
        }),
    );
    let tls: Arc<TLSRoute> = object(json!({
        "metadata": {"name": "t", "namespace": "other-ns"},
        "spec": {"parentRefs": [{"name": "gw", "namespace": "ns"}], "hostnames": ["t.example.com"], "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}
    }));
    snapshot.tls_routes.insert(ObjectKey::new("other-ns", "t"), tls);
    add_gateway_routes(&mut snapshot, CLASS);
    let report = &snapshot.gateway_report;
    let parents = &report.routes[&(RouteKind::HTTPRoute, ObjectKey::new("ns", "r"))].parents;
    let reasons: Vec<&str> = parents.iter().map(|p| p.attached.as_ref().err().map_or("ok", |e| e.reason)).collect();
    assert_eq!(
        reasons,
        ["NoMatchingListenerHostname", "NotAllowedByListeners", "NoMatchingParent", "NotAllowedByListeners"]
    );
    let tls_parent = &report.routes[&(RouteKind::TLSRoute, ObjectKey::new("other-ns", "t"))].parents[0];
    assert_eq!(
        tls_parent.attached.as_ref().err().map(|e| e.reason),
        Some("NotAllowedByListeners"),
        "Same namespace only"
    );
    let listeners = &report.gateways[&ObjectKey::new("ns", "gw")].listeners;
    assert_eq!(listeners[3].accepted.as_ref().err().map(|e| e.reason), Some("PortUnavailable"));
    assert!(!report.gateways.contains_key(&ObjectKey::new("ns", "theirs")));

    let mut snapshot = self::snapshot();
    http_route(
        &mut snapshot,
        "r",
        json!({
            "parentRefs": [{"name": "gw", "sectionName": "http"}],
            "hostnames": ["x.org"],
            "rules": [{"backendRefs": [{"name": "missing", "port": 80}, {"name": "web", "namespace": "elsewhere", "port": 80}]}]
        }),
    );
    add_gateway_routes(&mut snapshot, CLASS);
    let outcome = parent(&snapshot, "r", 0);
    let reasons: Vec<&str> = outcome.unresolved.iter().map(|p| p.reason).collect();
    assert_eq!(reasons, ["BackendNotFound", "RefNotPermitted"]);
    assert_eq!(route(&snapshot, "r-httproute-0-0-x.org").spec.to.name, "missing", "its share of traffic fails");
}

#[test]
fn tls_routes_are_passthrough_and_nothing_is_read_without_a_class() {
    let mut snapshot = snapshot();
    let tls: Arc<TLSRoute> = object(json!({
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"parentRefs": [{"name": "gw"}], "hostnames": ["t.example.com"], "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}
    }));
    snapshot.tls_routes.insert(ObjectKey::new("ns", "t"), tls);
    let mut off = snapshot.clone();
    add_gateway_routes(&mut snapshot, CLASS);
    let made = route(&snapshot, "t-tlsroute-t.example.com");
    assert_eq!(made.spec.tls.as_ref().map(|t| t.termination.as_str()), Some("passthrough"));
    assert_eq!(snapshot.gateway_report.gateways[&ObjectKey::new("ns", "gw")].listeners[2].attached_routes, 1);
    add_gateway_routes(&mut off, "");
    assert!(off.routes.is_empty());
    assert!(off.gateway_report.gateways.is_empty());
}
