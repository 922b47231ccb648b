//! OpenShift route semantics as tables of cases: admission outcomes, host+path ownership, match order,
//! endpoint selection. Objects are written as YAML, the way users write them.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::{build, BuildOptions, HttpAction, RouteTable};
use crate::model::{ObjectKey, Route, Snapshot};

fn route(yaml: &str) -> Route {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("test route does not parse: {e}\n{yaml}"))
}

fn simple_route(namespace: &str, name: &str, host: &str, path: &str, created: &str) -> Route {
    route(&format!(
        "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {{name: {name}, namespace: {namespace}, creationTimestamp: \"{created}\"}}\nspec: {{host: \"{host}\", path: \"{path}\", to: {{kind: Service, name: svc}}}}\n"
    ))
}

fn snapshot(routes: Vec<Route>) -> Snapshot {
    let mut snapshot = Snapshot::default();
    for route in routes {
        let key = ObjectKey::new(
            route.metadata.namespace.clone().unwrap_or_default(),
            route.metadata.name.clone().unwrap_or_default(),
        );
        snapshot.routes.insert(key, Arc::new(route));
    }
    snapshot
}

fn table(snapshot: &Snapshot) -> RouteTable {
    build(snapshot, &BuildOptions { allow_loopback_endpoints: true, ..Default::default() }, 1)
}

fn outcome(table: &RouteTable, name: &str) -> Result<(), &'static str> {
    let found = table.outcomes().find(|o| o.key.name == name).unwrap_or_else(|| panic!("no outcome for {name}"));
    found.result.as_ref().map(|_| ()).map_err(|r| r.reason)
}

fn served_by(table: &RouteTable, host: &str, path: &str) -> Option<String> {
    table.lookup(host, path).map(|backend| backend.route.name.clone())
}

#[test]
fn oldest_route_wins_a_host_and_path_regardless_of_name_order() {
    let snapshot = snapshot(vec![
        simple_route("ns", "a-newer", "x.example.com", "/", "2026-01-02T00:00:00Z"),
        simple_route("ns", "z-older", "x.example.com", "/", "2026-01-01T00:00:00Z"),
        simple_route("ns", "other-path", "x.example.com", "/api", "2026-01-03T00:00:00Z"),
    ]);
    let table = table(&snapshot);
    assert_eq!(outcome(&table, "z-older"), Ok(()));
    assert_eq!(outcome(&table, "a-newer"), Err("HostAlreadyClaimed"));
    assert_eq!(outcome(&table, "other-path"), Ok(()));
    assert_eq!(served_by(&table, "x.example.com", "/"), Some("z-older".into()));
    assert_eq!(served_by(&table, "x.example.com", "/api/v1"), Some("other-path".into()));
}

#[test]
fn displaced_route_is_admitted_when_the_winner_goes_away() {
    let mut snapshot = snapshot(vec![
        simple_route("ns", "first", "y.example.com", "/", "2026-01-01T00:00:00Z"),
        simple_route("ns", "second", "y.example.com", "/", "2026-01-02T00:00:00Z"),
    ]);
    assert_eq!(outcome(&table(&snapshot), "second"), Err("HostAlreadyClaimed"));
    snapshot.routes.remove(&ObjectKey::new("ns", "first"));
    let table = table(&snapshot);
    assert_eq!(outcome(&table, "second"), Ok(()));
    assert_eq!(served_by(&table, "y.example.com", "/"), Some("second".into()));
}

#[test]
fn hosts_are_validated() {
    let cases = [
        ("", Err("NoHostValue")),
        ("UPPER.example.com", Ok(())),
        ("trailing.example.com.", Err("InvalidHost")),
        ("bad_host.example.com", Err("InvalidHost")),
        ("-lead.example.com", Err("InvalidHost")),
        ("*.example.com", Err("InvalidHost")),
    ];
    for (host, want) in cases {
        let table = table(&snapshot(vec![simple_route("ns", "r", host, "/", "2026-01-01T00:00:00Z")]));
        assert_eq!(outcome(&table, "r"), want, "host {host:?}");
    }
    let table = table(&snapshot(vec![simple_route("ns", "r", "UPPER.example.com", "/", "2026-01-01T00:00:00Z")]));
    assert_eq!(served_by(&table, "upper.example.com", "/"), Some("r".into()), "route hosts are lowercased");
}

#[test]
fn wildcard_routes_are_not_admitted_by_default() {
    let wildcard = route(
        "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: w, namespace: ns}\nspec: {host: www.example.com, wildcardPolicy: Subdomain, to: {kind: Service, name: svc}}\n",
    );
    let table = table(&snapshot(vec![wildcard]));
    assert_eq!(outcome(&table, "w"), Err("RouteNotAdmitted"));
    assert_eq!(served_by(&table, "www.example.com", "/"), None);
}

#[test]
fn tls_routes_on_the_http_listener_follow_the_insecure_policy() {
    let cases = [
        ("edge", None, Some(HttpAction::NotOnHttp)),
        ("edge", Some("None"), Some(HttpAction::NotOnHttp)),
        ("edge", Some("Allow"), Some(HttpAction::Forward)),
        ("edge", Some("Redirect"), Some(HttpAction::RedirectToHttps)),
        ("reencrypt", Some("Redirect"), Some(HttpAction::RedirectToHttps)),
        ("passthrough", None, Some(HttpAction::NotOnHttp)),
        ("passthrough", Some("Redirect"), Some(HttpAction::RedirectToHttps)),
        ("passthrough", Some("Allow"), None),
        ("bogus", None, None),
    ];
    for (termination, policy, want) in cases {
        let policy_field = policy.map_or(String::new(), |p| format!(", insecureEdgeTerminationPolicy: {p}"));
        let tls_route = route(&format!(
            "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {{name: t, namespace: ns}}\nspec: {{host: t.example.com, to: {{kind: Service, name: svc}}, tls: {{termination: {termination}{policy_field}}}}}\n"
        ));
        let table = table(&snapshot(vec![tls_route]));
        let action = table.lookup("t.example.com", "/").map(|b| b.action);
        assert_eq!(action, want, "{termination} {policy:?}");
        assert_eq!(outcome(&table, "t").is_ok(), want.is_some(), "{termination} {policy:?}");
    }
}

#[test]
fn endpoints_come_from_ready_slice_addresses_of_every_weighted_service() {
    let mut snapshot = snapshot(vec![route(
        "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: r, namespace: ns}\nspec:\n  host: e.example.com\n  to: {kind: Service, name: main, weight: 1}\n  alternateBackends:\n  - {kind: Service, name: alt, weight: 1}\n  - {kind: Service, name: off, weight: 0}\n",
    )]);
    let slice = |service: &str, addresses: &str| -> EndpointSlice {
        serde_saphyr::from_str(&format!(
            "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: {service}-x, namespace: ns, labels: {{kubernetes.io/service-name: {service}}}}}\naddressType: IPv4\nports: [{{name: http, port: 8080}}, {{name: dns, port: 53, protocol: UDP}}]\nendpoints:\n{addresses}"
        ))
        .expect("slice")
    };
    for (service, addresses) in [
        ("main", "- addresses: [10.0.0.1]\n- addresses: [10.0.0.2]\n  conditions: {ready: false}\n- addresses: [10.0.0.3]\n  conditions: {ready: null}\n"),
        ("alt", "- addresses: [10.0.1.1, 127.0.0.1]\n"),
        ("off", "- addresses: [10.0.2.1]\n"),
    ] {
        snapshot.endpoint_slices.insert(ObjectKey::new("ns", format!("{service}-x")), Arc::new(slice(service, addresses).into()));
    }
    let strict = build(&snapshot, &BuildOptions { allow_loopback_endpoints: false, ..Default::default() }, 1);
    let backend = strict.lookup("e.example.com", "/").expect("route");
    let addrs: Vec<(String, u32)> = backend.endpoints.iter().map(|e| (e.addr.to_string(), e.weight)).collect();
    // main: 1 over 2 endpoints, alt: 1 over 1 -> alt's endpoint is the heaviest (256), main's get 128;
    // the weight-0 service keeps its endpoint for sticky sessions but takes no new traffic.
    let want = [("10.0.0.1:8080", 128), ("10.0.0.3:8080", 128), ("10.0.1.1:8080", 256), ("10.0.2.1:8080", 0)];
    assert_eq!(addrs, want.map(|(a, w)| (a.to_string(), w)));
    assert_eq!(&*backend.endpoints[0].id, "ept:main:http:10.0.0.1:8080");
    let loose = table(&snapshot);
    assert_eq!(loose.lookup("e.example.com", "/").expect("route").endpoints.len(), 5, "loopback kept when allowed");
}

#[test]
fn core_endpoints_serve_a_service_without_slices() {
    let mut snapshot = snapshot(vec![simple_route("ns", "r", "c.example.com", "", "2026-01-01T00:00:00Z")]);
    let endpoints: Endpoints = serde_saphyr::from_str(
        "apiVersion: v1\nkind: Endpoints\nmetadata: {name: svc, namespace: ns}\nsubsets:\n- addresses: [{ip: 10.9.0.1, targetRef: {kind: Pod, name: web-1}}]\n  notReadyAddresses: [{ip: 10.9.0.2}]\n  ports: [{name: web, port: 80}]\n",
    )
    .expect("endpoints");
    snapshot.endpoints.insert(ObjectKey::new("ns", "svc"), Arc::new(endpoints.into()));
    let table = table(&snapshot);
    let backend = table.lookup("c.example.com", "/x").expect("route");
    let ids: Vec<&str> = backend.endpoints.iter().map(|e| &*e.id).collect();
    assert_eq!(ids, ["pod:web-1:svc:web:10.9.0.1:80"]);
}
