//! A build taking over from the previous table compiles only the shards a change touches, and the table it
//! makes serves and reports exactly what a fresh build of the same snapshot does.

use std::sync::Arc;

use super::shards::SHARDS;
use super::{build, build_from, BuildOptions, RouteTable};
use crate::admission::AdmissionSettings;
use crate::model::{ObjectKey, Route, Snapshot};

/// A route `name` in `namespace` for `host` (`*.x` or `wildcard` for a Subdomain route), `seconds` after the
/// oldest, to service `name`.
fn route(namespace: &str, name: &str, host: &str, seconds: u32, wildcard: bool) -> Arc<Route> {
    let policy = if wildcard { "Subdomain" } else { "None" };
    let yaml = format!(
        "metadata: {{name: {name}, namespace: {namespace}, uid: \"{name}\", creationTimestamp: \
         \"2026-01-01T00:{:02}:{:02}Z\"}}\nspec: {{host: \"{host}\", wildcardPolicy: {policy}, to: {{kind: Service, \
         name: {name}}}}}\n",
        seconds / 60,
        seconds % 60
    );
    Arc::new(serde_saphyr::from_str(&yaml).expect("test route"))
}

fn slice(namespace: &str, service: &str, ip: &str) -> Arc<crate::model::StoredSlice> {
    let yaml = format!(
        "metadata: {{name: {service}-1, namespace: {namespace}, labels: {{kubernetes.io/service-name: {service}}}}}\n\
         addressType: IPv4\nports: [{{name: http, port: 8080, protocol: TCP}}]\nendpoints: [{{addresses: [\"{ip}\"]}}]\n"
    );
    let slice: k8s_openapi::api::discovery::v1::EndpointSlice = serde_saphyr::from_str(&yaml).expect("test slice");
    Arc::new(slice.into())
}

fn add(snapshot: &mut Snapshot, namespace: &str, name: &str, host: &str, seconds: u32, ip: &str) {
    snapshot.routes.insert(ObjectKey::new(namespace, name), route(namespace, name, host, seconds, false));
    snapshot.endpoint_slices.insert(ObjectKey::new(namespace, format!("{name}-1")), slice(namespace, name, ip));
}

/// 300 routes `r0`... on hosts `r0.example.com`..., each with its own service and pod.
fn many() -> Snapshot {
    let mut snapshot = Snapshot::default();
    for i in 0..300 {
        add(
            &mut snapshot,
            "ns",
            &format!("r{i}"),
            &format!("r{i}.example.com"),
            i,
            &format!("10.1.{}.{}", i / 250, i % 250),
        );
    }
    snapshot
}

/// Outcomes by route, in key order, and who serves each host asked about, with its endpoints.
fn served(table: &RouteTable, hosts: &[String]) -> (Vec<String>, Vec<String>) {
    let mut outcomes: Vec<String> = table.outcomes().map(|o| format!("{} {} {:?}", o.key, o.host, o.result)).collect();
    outcomes.sort();
    let lookups = hosts
        .iter()
        .map(|host| match table.lookup(host, "/") {
            Some(backend) => {
                let endpoints: Vec<String> = backend.endpoints.iter().map(|e| e.addr.to_string()).collect();
                format!("{host} -> {} {endpoints:?}", backend.route)
            }
            None => format!("{host} -> none"),
        })
        .collect();
    (outcomes, lookups)
}

fn kept_shards(before: &RouteTable, after: &RouteTable) -> usize {
    before.shards.iter().zip(&after.shards).filter(|(a, b)| Arc::ptr_eq(a, b)).count()
}

#[test]
fn a_change_compiles_only_the_shards_it_touches_and_serves_what_a_fresh_build_does() {
    let options = BuildOptions { allow_loopback_endpoints: true, ..BuildOptions::default() };
    let before = many();
    let first = build(&before, &options, 1);
    assert_eq!(first.routes_admitted(), 300);

    let mut after = before.clone();
    after.routes.remove(&ObjectKey::new("ns", "r5"));
    after.routes.insert(ObjectKey::new("ns", "r7"), route("ns", "r7", "moved.example.com", 7, false));
    // A younger route in another namespace asks for r9's host: HostAlreadyClaimed, as in a fresh build.
    add(&mut after, "other", "late", "r9.example.com", 900, "10.2.0.1");
    add(&mut after, "ns", "new", "new.example.com", 901, "10.2.0.2");
    after.endpoint_slices.insert(ObjectKey::new("ns", "r11-1"), slice("ns", "r11", "10.3.0.11"));

    let next = build_from(&after, &options, 2, Some((&before, &first)));
    let fresh = build(&after, &options, 2);
    let mut hosts: Vec<String> = (0..300).map(|i| format!("r{i}.example.com")).collect();
    hosts.extend(["moved.example.com".into(), "new.example.com".into()]);
    assert_eq!(served(&next, &hosts), served(&fresh, &hosts));
    assert_eq!(next.lookup("r5.example.com", "/").map(|b| b.route.clone()), None);
    assert_eq!(next.lookup("r9.example.com", "/").map(|b| b.route.name.clone()), Some("r9".into()));
    let endpoints = |table: &RouteTable| table.lookup("r11.example.com", "/").map(|b| b.endpoints[0].addr.to_string());
    assert_eq!(endpoints(&next).as_deref(), Some("10.3.0.11:8080"));

    // r5, r7 (twice: its old and new host), late, new and r11: at most seven shards compiled.
    let kept = kept_shards(&first, &next);
    assert!((SHARDS - 7..SHARDS).contains(&kept), "{kept} of {SHARDS} kept");
    let untouched = kept_shards(&next, &build_from(&after, &options, 3, Some((&after, &next))));
    assert_eq!(untouched, SHARDS, "nothing changed: every shard is taken over");
}

#[test]
fn with_wildcard_routes_allowed_a_domain_is_one_shard_and_its_claims_hold_across_changes() {
    let admission = AdmissionSettings { allow_wildcard_routes: true, ..AdmissionSettings::default() };
    let options = BuildOptions { allow_loopback_endpoints: true, admission, ..BuildOptions::default() };
    let mut before = many();
    before.routes.insert(ObjectKey::new("wild", "w"), route("wild", "w", "www.apps.test", 1000, true));
    before.endpoint_slices.insert(ObjectKey::new("wild", "w-1"), slice("wild", "w", "10.4.0.1"));
    let first = build(&before, &options, 1);
    assert_eq!(first.lookup("anything.apps.test", "/").map(|b| b.route.name.clone()), Some("w".into()));

    // A younger route of another namespace under the wildcard's domain is refused; once the wildcard route is
    // gone, it is served.
    let mut claimed = before.clone();
    add(&mut claimed, "other", "exact", "x.apps.test", 2000, "10.4.0.2");
    let next = build_from(&claimed, &options, 2, Some((&before, &first)));
    let hosts = ["x.apps.test".to_string(), "y.apps.test".to_string(), "r1.example.com".to_string()];
    assert_eq!(served(&next, &hosts), served(&build(&claimed, &options, 2), &hosts));
    let refused = next.outcomes().find(|o| o.key.name == "exact").expect("outcome");
    assert_eq!(refused.result.as_ref().map_err(|r| r.reason), Err("HostAlreadyClaimed"));

    let mut freed = claimed.clone();
    freed.routes.remove(&ObjectKey::new("wild", "w"));
    let last = build_from(&freed, &options, 3, Some((&claimed, &next)));
    assert_eq!(served(&last, &hosts), served(&build(&freed, &options, 3), &hosts));
    assert_eq!(last.lookup("x.apps.test", "/").map(|b| b.route.name.clone()), Some("exact".into()));
    assert_eq!(kept_shards(&next, &last), SHARDS - 1, "the domain's shard alone is compiled");
}

/// A route `name` for `host`/`path` with `tls` (YAML of `spec.tls`, empty for none), to service `name`.
fn tls_route(name: &str, host: &str, path: &str, tls: &str) -> Arc<Route> {
    let yaml = format!(
        "metadata: {{name: {name}, namespace: ns, uid: \"{name}\", creationTimestamp: \"2026-01-02T00:00:00Z\"}}\n\
         spec:\n  host: \"{host}\"\n  path: \"{path}\"\n  to: {{kind: Service, name: {name}}}\n{tls}"
    );
    Arc::new(serde_saphyr::from_str(&yaml).expect("test route"))
}

#[test]
fn the_tls_material_of_shards_taken_over_is_kept_for_when_they_are_compiled_again() {
    use crate::tls::{default_certificate, test_pki::self_signed};

    let default = default_certificate(None, None).expect("generated default certificate");
    let tls = super::TlsBuild::new(Some(default), None, std::time::Duration::from_secs(1));
    let options = BuildOptions { allow_loopback_endpoints: true, tls, ..BuildOptions::default() };
    let leaf = self_signed("e.example.com");
    let indent = |pem: String| pem.lines().map(|line| format!("      {line}\n")).collect::<String>();
    let edge = format!(
        "  tls:\n    termination: edge\n    certificate: |\n{}    key: |\n{}",
        indent(leaf.cert_pem()),
        indent(leaf.key_pem())
    );
    let mut snapshots = vec![many()];
    snapshots[0].routes.insert(ObjectKey::new("ns", "e"), tls_route("e", "e.example.com", "", &edge));
    let reencrypt = "  tls: {termination: reencrypt}\n";
    snapshots[0].routes.insert(ObjectKey::new("ns", "s"), tls_route("s", "s.example.com", "", reencrypt));
    // Three changes away from e's and s's shards, then one in each.
    let shard = |host: &str| super::shards::ShardBy::Host.of_host(host);
    let elsewhere = (0..).map(|i| format!("elsewhere{i}")).filter(|name| {
        ![shard("e.example.com"), shard("s.example.com")].contains(&shard(&format!("{name}.example.com")))
    });
    for name in elsewhere.take(3) {
        let mut next = snapshots.last().expect("a snapshot").clone();
        add(&mut next, "ns", &name, &format!("{name}.example.com"), 3000, "10.5.0.1");
        snapshots.push(next);
    }
    let mut last = snapshots.last().expect("a snapshot").clone();
    last.routes.insert(ObjectKey::new("ns", "e2"), tls_route("e2", "e.example.com", "/two", &edge));
    last.routes.insert(ObjectKey::new("ns", "s2"), tls_route("s2", "s.example.com", "/two", reencrypt));
    snapshots.push(last);

    let first = build(&snapshots[0], &options, 1);
    let mut tables = vec![first];
    for (generation, pair) in snapshots.windows(2).enumerate() {
        let previous = tables.last().expect("a table");
        let next = build_from(&pair[1], &options, generation as u64 + 2, Some((&pair[0], previous)));
        tables.push(next);
    }
    let (first, last) = (&tables[0], tables.last().expect("a table"));
    assert!(
        (SHARDS - 2..SHARDS).contains(&kept_shards(&tables[3], last)),
        "e's and s's shards alone compiled at the end"
    );
    let served = |table: &RouteTable| table.certs.as_ref().expect("certificates").find(Some("e.example.com")).key;
    assert!(Arc::ptr_eq(&served(first), &served(last)), "e's certificate was not validated again");
    let backend = |table: &RouteTable| table.https().lookup("s.example.com", "/").cloned().expect("s served");
    assert!(Arc::ptr_eq(&backend(first), &backend(last)), "s keeps its reencrypt upstream and so its backend");
}
