//! HTTPRoute matches through the whole chain (Gateway API step, admission, table): which route a request with
//! a method, headers and a query string is served by, following the Gateway API's precedence, and which routes of
//! one host and path conflict. The cases follow the Gateway API's conformance tests for matching.

use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde_json::json;

use super::{build, BuildOptions, RequestFacts, RouteTable};
use crate::admission::AdmissionSettings;
use crate::model::{add_gateway_routes, ObjectKey, Route, Snapshot};

const HOST: &str = "x.example.com";

/// A snapshot with Gateway `ns/gw` of class `router` (one HTTP listener) and HTTPRoutes `(name, created, rules)`
/// for `HOST`, through the Gateway API step.
fn snapshot(routes: &[(&str, &str, serde_json::Value)], plain: &[Route]) -> Snapshot {
    let mut snapshot = Snapshot::default();
    let gateway = json!({
        "metadata": {"name": "gw", "namespace": "ns"},
        "spec": {"gatewayClassName": "router", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}
    });
    snapshot.gateways.insert(ObjectKey::new("ns", "gw"), Arc::new(serde_json::from_value(gateway).expect("gateway")));
    for (name, created, rules) in routes {
        let value = json!({
            "metadata": {"name": name, "namespace": "ns", "uid": uid(name), "creationTimestamp": created},
            "spec": {"parentRefs": [{"name": "gw"}], "hostnames": [HOST], "rules": rules}
        });
        let route = Arc::new(serde_json::from_value(value).expect("httproute"));
        snapshot.http_routes.insert(ObjectKey::new("ns", *name), route);
    }
    for route in plain {
        let key = ObjectKey::new("ns", route.metadata.name.clone().unwrap_or_default());
        snapshot.routes.insert(key, Arc::new(route.clone()));
    }
    add_gateway_routes(&mut snapshot, "router");
    snapshot
}

/// A UID that orders the other way from the name, so that ties follow names only when the table orders them so.
fn uid(name: &str) -> String {
    name.chars().rev().collect()
}

fn table(snapshot: &Snapshot) -> RouteTable {
    build(snapshot, &BuildOptions::default(), 1)
}

/// A rule of one match to backend `web`.
fn rule(one: serde_json::Value) -> serde_json::Value {
    json!({"matches": [one], "backendRefs": [{"name": "web", "port": 80}]})
}

/// The route serving `method target` with `headers` (`target` may carry a query), without the host suffix.
fn served(table: &RouteTable, method: &str, target: &str, headers: &[(&str, &str)]) -> Option<String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).expect("name"),
            HeaderValue::from_str(value).expect("value"),
        );
    }
    let (path, query) = target.split_once('?').map_or((target, None), |(p, q)| (p, Some(q)));
    let method = Method::from_bytes(method.as_bytes()).expect("method");
    let facts = RequestFacts { path, method: &method, headers: &map, query };
    let found = table.http().lookup_request(HOST, &facts)?;
    Some(found.route.name.trim_end_matches(&format!("-{HOST}")).to_string())
}

fn outcome(table: &RouteTable, name: &str) -> Result<(), &'static str> {
    let name = format!("{name}-{HOST}");
    let found = table.outcomes().find(|o| o.key.name == name).unwrap_or_else(|| panic!("no outcome for {name}"));
    found.result.as_ref().map(|_| ()).map_err(|r| r.reason)
}

const CREATED: &str = "2026-01-01T00:00:00Z";

#[test]
fn exact_paths_come_before_prefixes_and_longer_prefixes_first() {
    let rules = json!([
        rule(json!({"path": {"type": "Exact", "value": "/match"}})),
        rule(json!({"path": {"type": "Exact", "value": "/match/exact"}})),
        rule(json!({"path": {"type": "PathPrefix", "value": "/match/"}})),
        rule(json!({"path": {"type": "PathPrefix", "value": "/match/prefix/one"}})),
    ]);
    let table = table(&snapshot(&[("order", CREATED, rules)], &[]));
    let get = |target: &str| served(&table, "GET", target, &[]);
    assert_eq!(get("/match").as_deref(), Some("order-httproute-0-0"));
    assert_eq!(get("/match/exact").as_deref(), Some("order-httproute-1-0"), "exact before the /match prefix");
    assert_eq!(get("/match/exact/x").as_deref(), Some("order-httproute-2-0"));
    assert_eq!(get("/match/prefix/one/any").as_deref(), Some("order-httproute-3-0"));
    assert_eq!(get("/match/").as_deref(), Some("order-httproute-2-0"), "not /match exactly");
    assert_eq!(get("/Match"), None);
    assert_eq!(get("/"), None, "nothing for other paths");
}

#[test]
fn headers_route_by_value_and_ties_go_to_the_first_rule() {
    let header = |pairs: &[(&str, &str)]| {
        let headers: Vec<_> = pairs.iter().map(|(n, v)| json!({"name": n, "value": v})).collect();
        rule(json!({"headers": headers}))
    };
    let rules = json!([
        header(&[("version", "one")]),
        header(&[("version", "two")]),
        header(&[("version", "two"), ("color", "orange")]),
        header(&[("color", "blue")]),
    ]);
    let table = table(&snapshot(&[("hdr", CREATED, rules)], &[]));
    let get = |headers: &[(&str, &str)]| served(&table, "GET", "/", headers);
    assert_eq!(get(&[("Version", "one")]).as_deref(), Some("hdr-httproute-0-0"));
    assert_eq!(get(&[("Version", "two")]).as_deref(), Some("hdr-httproute-1-0"));
    assert_eq!(get(&[("version", "two"), ("color", "orange")]).as_deref(), Some("hdr-httproute-2-0"), "more headers");
    assert_eq!(get(&[("version", "two"), ("color", "blue")]).as_deref(), Some("hdr-httproute-1-0"), "first rule");
    assert_eq!(get(&[("color", "orange")]), None);
    assert_eq!(get(&[]), None);
}

#[test]
fn method_then_headers_then_query_and_a_longer_prefix_above_all() {
    let rules = json!([
        rule(json!({"path": {"value": "/path5"}})),
        rule(json!({"queryParams": [{"name": "animal", "value": "hydra"}]})),
        rule(json!({"headers": [{"name": "version", "value": "four"}]})),
        rule(json!({"method": "PATCH"})),
    ]);
    let table = table(&snapshot(&[("prec", CREATED, rules)], &[]));
    let four = [("version", "four")];
    assert_eq!(served(&table, "PATCH", "/path5?animal=hydra", &four).as_deref(), Some("prec-httproute-0-0"));
    assert_eq!(served(&table, "PATCH", "/?animal=hydra", &four).as_deref(), Some("prec-httproute-3-0"));
    assert_eq!(served(&table, "GET", "/?animal=hydra", &four).as_deref(), Some("prec-httproute-2-0"));
    assert_eq!(served(&table, "GET", "/?animal=hydra", &[]).as_deref(), Some("prec-httproute-1-0"));
    assert_eq!(served(&table, "GET", "/?animal=whale", &[]), None);
}

#[test]
fn ties_between_httproutes_go_to_the_older_then_by_name_and_routes_keep_their_paths() {
    let one_header = |name: &str| json!([rule(json!({"headers": [{"name": name, "value": "1"}]}))]);
    let routes = [
        ("b-older", "2025-01-01T00:00:00Z", one_header("z")),
        ("a-newer", CREATED, one_header("y")),
        ("c-same", CREATED, one_header("x")),
    ];
    let plain: Route = serde_json::from_value(json!({
        "metadata": {"name": "plain", "namespace": "ns", "creationTimestamp": "2020-01-01T00:00:00Z"},
        "spec": {"host": HOST, "to": {"kind": "Service", "name": "web"}}
    }))
    .expect("route");
    let table = table(&snapshot(&routes, &[plain]));
    let all = [("x", "1"), ("y", "1"), ("z", "1")];
    assert_eq!(served(&table, "GET", "/", &all).as_deref(), Some("b-older-httproute-0-0"));
    assert_eq!(served(&table, "GET", "/", &all[..2]).as_deref(), Some("a-newer-httproute-0-0"), "by name");
    assert_eq!(served(&table, "GET", "/", &all[..1]).as_deref(), Some("c-same-httproute-0-0"));
    assert_eq!(served(&table, "GET", "/", &[]).as_deref(), Some("plain"), "the Route takes what no match does");
}

#[test]
fn only_routes_asking_the_same_of_a_request_conflict() {
    let routes = [
        ("first", "2025-01-01T00:00:00Z", json!([rule(json!({"headers": [{"name": "v", "value": "1"}]}))])),
        ("same", CREATED, json!([rule(json!({"headers": [{"name": "V", "value": "1"}]}))])),
        ("other-value", CREATED, json!([rule(json!({"headers": [{"name": "v", "value": "2"}]}))])),
        ("exact", CREATED, json!([rule(json!({"path": {"type": "Exact", "value": "/"}}))])),
        ("prefix", CREATED, json!([rule(json!({"path": {"type": "PathPrefix", "value": "/"}}))])),
    ];
    let plain: Route = serde_json::from_value(json!({
        "metadata": {"name": "plain", "namespace": "ns", "creationTimestamp": "2026-02-01T00:00:00Z"},
        "spec": {"host": HOST, "path": "/", "to": {"kind": "Service", "name": "web"}}
    }))
    .expect("route");
    let snapshot = snapshot(&routes, &[plain]);
    // With wildcard routes allowed, host claims are checked first, as their own step: the same outcomes.
    let claims = BuildOptions {
        admission: AdmissionSettings { allow_wildcard_routes: true, ..Default::default() },
        ..Default::default()
    };
    for table in [table(&snapshot), build(&snapshot, &claims, 1)] {
        same_conditions_conflict(&table);
    }
}

fn same_conditions_conflict(table: &RouteTable) {
    assert_eq!(outcome(table, "first-httproute-0-0"), Ok(()));
    assert_eq!(outcome(table, "same-httproute-0-0"), Err("HostAlreadyClaimed"), "the same header, any case");
    assert_eq!(outcome(table, "other-value-httproute-0-0"), Ok(()));
    assert_eq!(outcome(table, "exact-httproute-0-0"), Ok(()));
    assert_eq!(outcome(table, "prefix-httproute-0-0"), Ok(()));
    let plain = table.outcomes().find(|o| o.key.name == "plain").expect("plain");
    assert_eq!(plain.result.as_ref().err().map(|r| r.reason), Some("HostAlreadyClaimed"), "same path, no conditions");
    assert_eq!(served(table, "GET", "/", &[]).as_deref(), Some("exact-httproute-0-0"));
    assert_eq!(served(table, "GET", "/x", &[("v", "2")]).as_deref(), Some("other-value-httproute-0-0"));
    assert_eq!(served(table, "GET", "/x", &[]).as_deref(), Some("prefix-httproute-0-0"));
}
