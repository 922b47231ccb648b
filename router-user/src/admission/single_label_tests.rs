//! Single-label hosts (`com`, `net`, `org`, `info`) are DNS-1123 subdomains like any other: admitted, claimed
//! by their namespace and served, also as the host of a wildcard route. The rows are those of OpenShift's
//! HostAdmitter tests (`host_admitter_test.go`: the valid and invalid admission fuzzing tests, and the one with
//! the ownership check disabled). Each row lists the older routes that, when admitted, make it HostAlreadyClaimed;
//! every subset of a table tried here must come out that way.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{admit, claims, effective_host, serves_subdomain, wildcard_domain, AdmissionSettings, Admitted};
use crate::model::{ObjectKey, Route, Snapshot};
use crate::table::{build, BuildOptions};

/// One route of a table: namespace, name, host, path, wildcard, seconds after the oldest, and the routes
/// whose admission rejects it.
type Row = (&'static str, &'static str, &'static str, &'static str, bool, u32, &'static [&'static str]);

/// `TestValidRouteAdmissionFuzzing`: none of these block another.
const VALID: &[Row] = &[
    ("ns1", "r1", "net", "", false, 0, &[]),
    ("ns2", "r2", "com", "", false, 1, &[]),
    ("ns3", "r3", "domain1.com", "", false, 2, &[]),
    ("ns4", "r4", "domain2.com", "", false, 3, &[]),
    ("ns5", "r5", "foo.domain1.com", "", false, 4, &[]),
    ("ns6", "r6", "bar.domain1.com", "", false, 5, &[]),
    ("ns7", "r7", "sub.foo.domain1.com", "", true, 6, &[]),
    ("ns8", "r8", "sub.bar.domain1.com", "", true, 7, &[]),
    ("ns8", "r9", "sub.bar.domain1.com", "/p1", true, 8, &[]),
    ("ns8", "r10", "sub.bar.domain1.com", "/p2", true, 9, &[]),
    ("ns8", "r11", "sub.bar.domain1.com", "/p1/p2/p3", true, 10, &[]),
    ("ns9", "r12", "sub.bar.domain2.com", "", false, 11, &[]),
    ("ns9", "r13", "sub.bar.domain2.com", "/p1", false, 12, &[]),
    ("ns9", "r14", "sub.bar.domain2.com", "/p2", false, 13, &[]),
];

/// `TestInvalidRouteAdmissionFuzzing` (HostAdmitter alone, ownership check on).
const INVALID: &[Row] = &[
    ("ns1", "r1", "net", "", false, 0, &[]),
    ("ns1", "r2", "net", "", true, 1, &[]),
    ("ns1", "r3", "www.same.net", "", false, 2, &[]),
    ("ns1", "r4", "www.same.net", "", true, 3, &[]),
    ("ns1", "r5", "foo.same.net", "", true, 4, &["ns1/r4"]),
    ("ns2", "r1", "com", "", false, 10, &["ns1/r2"]),
    ("ns2", "r2", "com", "", true, 11, &["ns1/r1", "ns1/r2"]),
    ("ns2", "r3", "www.same.com", "", false, 12, &[]),
    ("ns2", "r4", "www.same.com", "", true, 13, &[]),
    ("ns2", "r5", "www.same.com", "/abc", true, 13, &[]),
    ("ns2", "r6", "foo.same.com", "", true, 14, &["ns2/r4"]),
    ("ns2", "r7", "foo.same.com", "/abc", true, 14, &["ns2/r5"]),
    ("ns3", "r1", "net", "", false, 20, &["ns1/r1", "ns1/r2", "ns2/r2"]),
    ("ns3", "r2", "net", "", true, 21, &["ns1/r1", "ns1/r2", "ns2/r1", "ns2/r2"]),
    ("ns3", "r3", "net", "/p1", true, 22, &["ns1/r1", "ns1/r2", "ns2/r1", "ns2/r2"]),
    ("ns3", "r4", "com", "", false, 23, &["ns1/r2", "ns2/r1", "ns2/r2"]),
    ("ns3", "r5", "com", "", true, 24, &["ns1/r1", "ns1/r2", "ns2/r1", "ns2/r2", "ns3/r2"]),
    ("ns3", "r6", "com", "/p1/p2", true, 25, &["ns1/r1", "ns1/r2", "ns2/r1", "ns2/r2"]),
    ("ns4", "r1", "domain1.com", "", false, 30, &[]),
    ("ns5", "r1", "domain1.com", "", false, 31, &["ns4/r1"]),
    ("ns4", "r2", "domain1.com", "", false, 32, &["ns4/r1", "ns5/r1"]),
    ("ns5", "r2", "domain1.com", "", false, 33, &["ns4/r1", "ns5/r1", "ns4/r2"]),
    ("ns6", "r1", "foo.domain1.com", "", true, 40, &[]),
    ("ns7", "r1", "bar.domain1.com", "", true, 50, &["ns6/r1"]),
    ("ns7", "r2", "bar.domain1.com", "", false, 51, &["ns6/r1"]),
    ("ns7", "r3", "bar.domain1.com", "/foo", false, 51, &["ns6/r1"]),
    ("ns8", "r1", "baz.domain1.com", "", true, 60, &["ns6/r1", "ns7/r1", "ns7/r2", "ns7/r3"]),
    ("ns8", "r2", "baz.domain1.com", "", false, 61, &["ns6/r1", "ns7/r1"]),
    ("ns9", "r1", "foo.domain2.com", "", false, 40, &[]),
    ("ns10", "r1", "bar.domain2.com", "", true, 50, &["ns9/r1"]),
    ("ns10", "r2", "bar.domain2.com", "", false, 51, &[]),
    ("ns10", "r3", "foo.domain2.com", "", false, 52, &["ns9/r1"]),
    ("ns10", "r4", "foo.domain2.com", "/p1", false, 53, &["ns9/r1"]),
    ("ns10", "r5", "foo.domain2.com", "/p2", false, 54, &["ns9/r1"]),
    ("ns10", "r6", "foo.domain2.com", "/p1/p2/other", false, 55, &["ns9/r1"]),
    ("ns10", "r7", "foo.domain2.com", "/someother", false, 56, &["ns9/r1"]),
    (
        "ns11",
        "r1",
        "baz.domain2.com",
        "",
        true,
        60,
        &["ns9/r1", "ns10/r1", "ns10/r2", "ns10/r3", "ns10/r4", "ns10/r5", "ns10/r6", "ns10/r7"],
    ),
    ("ns11", "r2", "baz.domain2.com", "", false, 61, &["ns10/r1"]),
    ("ns12", "r1", "foo.domain3.com", "", false, 70, &[]),
    ("ns12", "r2", "bar.domain3.com", "/abc", false, 71, &[]),
    ("ns13", "r1", "foo.domain3.com", "", true, 80, &["ns12/r1", "ns12/r2"]),
    ("ns13", "r2", "bar.domain3.com", "", false, 81, &["ns12/r2"]),
    ("ns13", "r3", "bar.domain3.com", "/abc", false, 82, &["ns12/r2"]),
    ("ns13", "r4", "bar.domain3.com", "/def", false, 83, &["ns12/r2"]),
    ("ns13", "r5", "wild.domain3.com", "/aces", true, 84, &["ns12/r1", "ns12/r2"]),
    ("ns13", "r6", "wild.domain3.com", "", true, 85, &["ns12/r1", "ns12/r2", "ns13/r1"]),
    ("ns14", "r1", "foo.domain3.com", "", false, 90, &["ns12/r1", "ns13/r1", "ns13/r5", "ns13/r6"]),
    (
        "ns14",
        "r2",
        "bar.domain3.com",
        "",
        false,
        91,
        &["ns12/r2", "ns13/r1", "ns13/r2", "ns13/r3", "ns13/r4", "ns13/r5", "ns13/r6"],
    ),
    ("ns15", "r1", "foo.domain4.com", "", false, 100, &[]),
    ("ns15", "r2", "foo.domain4.com", "/abc", false, 101, &[]),
    ("ns15", "r3", "foo.domain4.com", "", false, 102, &["ns15/r1"]),
    ("ns15", "r4", "foo.domain4.com", "/abc", false, 103, &["ns15/r2"]),
    ("ns15", "r5", "www.domain4.com", "", true, 104, &[]),
    ("ns15", "r6", "www.domain4.com", "/abc", true, 105, &[]),
    ("ns15", "r7", "www.domain4.com", "", true, 106, &["ns15/r5"]),
    ("ns15", "r8", "www.domain4.com", "/abc", true, 107, &["ns15/r6"]),
    ("ns15", "r9", "www.domain4.com", "/def", true, 108, &[]),
    ("ns15", "r10", "www.domain4.com", "/def", true, 109, &["ns15/r9"]),
];

/// `TestDisableOwnershipChecksFuzzing` (HostAdmitter and UniqueHost, ownership check off).
const ANY_NAMESPACE: &[Row] = &[
    ("ns1", "r1", "org", "", true, 0, &[]),
    ("ns1", "r2", "org", "/p1", false, 1, &[]),
    ("ns1", "r3", "www.w3.org", "", false, 2, &[]),
    ("ns1", "r4", "www.w3.org", "/p1", true, 3, &[]),
    ("ns1", "r5", "info", "", false, 4, &[]),
    ("ns2", "r1", "info", "/p1", false, 10, &[]),
    ("ns2", "r2", "www.server.info", "", false, 11, &[]),
    ("ns2", "r3", "www.server.info", "/p1", false, 12, &[]),
    ("ns2", "r4", "wild.server.info", "", true, 13, &[]),
    ("ns2", "r5", "wilder.server.info", "/p1", true, 14, &[]),
    ("ns2", "r6", "org", "/other", false, 15, &[]),
    ("ns3", "r1", "org", "", true, 20, &["ns1/r1"]),
    ("ns3", "r2", "org", "/p1", false, 21, &["ns1/r2"]),
    ("ns3", "r3", "org", "", true, 22, &["ns1/r1", "ns3/r1"]),
    ("ns3", "r4", "info", "", true, 23, &["ns1/r1", "ns1/r5", "ns3/r1", "ns3/r3"]),
    ("ns4", "r1", "www.server.info", "", false, 24, &["ns2/r2"]),
    ("ns4", "r2", "www.server.info", "/p1", false, 25, &["ns2/r3"]),
    ("ns4", "r3", "wild.server.info", "", true, 26, &["ns2/r4"]),
    ("ns4", "r4", "wild.server.info", "", true, 27, &["ns2/r4", "ns4/r3"]),
    ("ns4", "r5", "wilder.server.info", "/p1", true, 28, &["ns2/r5"]),
    ("ns5", "r1", "org", "/abc", true, 30, &[]),
    ("ns5", "r2", "www.server.info", "/xyz", false, 31, &[]),
    ("p5", "r3", "www.server.info", "/abc/xyz", true, 32, &[]),
    ("ns6", "r1", "somedomain.org", "", false, 40, &[]),
    ("ns7", "r1", "somedomain.org", "", false, 41, &["ns6/r1"]),
    ("ns6", "r2", "somedomain.org", "", false, 42, &["ns6/r1", "ns7/r1"]),
    ("ns7", "r2", "somedomain.org", "", false, 43, &["ns6/r1", "ns7/r1", "ns6/r2"]),
    ("ns8", "r1", "foo.somedomain.org", "", true, 50, &[]),
    ("ns8", "r2", "foo.somedomain.org", "/path1", true, 51, &[]),
    ("ns9", "r1", "foo.somedomain.org", "", true, 52, &["ns8/r1"]),
    ("ns9", "r2", "foo.somedomain.org", "/path1", true, 53, &["ns8/r2"]),
    ("ns9", "r3", "bar.somedomain.org", "", false, 54, &[]),
    ("ns10", "r1", "baz.somedomain.org", "", true, 55, &["ns8/r1", "ns9/r1"]),
    ("ns10", "r2", "foo.somedomain.org", "", true, 56, &["ns8/r1", "ns9/r1", "ns10/r1"]),
    ("ns10", "r3", "bar.somedomain.org", "", false, 57, &["ns9/r3"]),
    ("ns10", "r4", "bar.somedomain.org", "/path2", false, 58, &[]),
];

/// 2026-01-01T00:00:00Z, the oldest route's creation time.
const OLDEST_UNIX: u32 = 1_767_225_600;

fn key(row: &Row) -> String {
    format!("{}/{}", row.0, row.1)
}

/// The route of `row`, with OpenShift's test UID (`<unix seconds>_<namespace>_<name>`) as the tie-breaker.
fn route(row: &Row) -> Route {
    let (namespace, name, host, path, wildcard, seconds, _) = *row;
    let created = k8s_openapi::jiff::Timestamp::from_second(i64::from(OLDEST_UNIX + seconds)).expect("time");
    let policy = if wildcard { "Subdomain" } else { "None" };
    let uid = format!("{}_{namespace}_{name}", OLDEST_UNIX + seconds);
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, namespace: {namespace}, uid: {uid}, creationTimestamp: \"{created}\"}}\nspec: {{host: \"{host}\", path: \"{path}\", wildcardPolicy: {policy}, to: {{kind: Service, name: svc}}}}\n"
    ))
    .expect("route")
}

fn snapshot(rows: &[&Row]) -> Snapshot {
    let mut snapshot = Snapshot::default();
    for row in rows {
        snapshot.routes.insert(ObjectKey::new(row.0, row.1), Arc::new(route(row)));
    }
    snapshot
}

fn wildcard_settings(any_namespace: bool) -> AdmissionSettings {
    AdmissionSettings {
        allow_wildcard_routes: true,
        disable_namespace_ownership_check: any_namespace,
        ..Default::default()
    }
}

/// The routes HostAdmitter alone refuses (ownership check on), as `namespace/name`.
fn refused_by_claims(rows: &[&Row]) -> BTreeSet<String> {
    let snapshot = snapshot(rows);
    let settings = wildcard_settings(false);
    let candidates = super::oldest_first(&snapshot)
        .into_iter()
        .map(|(key, route)| Admitted {
            key,
            route,
            host: effective_host(route, &settings),
            wildcard: route.spec.wildcard_policy.as_deref() == Some("Subdomain"),
        })
        .collect();
    let (_, refused) = claims::resolve(candidates, false);
    refused
        .into_iter()
        .map(|(candidate, rejection)| {
            assert_eq!(rejection.reason, "HostAlreadyClaimed");
            format!("{}/{}", candidate.key.namespace, candidate.key.name)
        })
        .collect()
}

/// The routes the whole admission chain rejects with `settings`, as `namespace/name`.
fn rejected_by_admission(rows: &[&Row], settings: &AdmissionSettings) -> BTreeSet<String> {
    let snapshot = snapshot(rows);
    admit(&snapshot, settings)
        .outcomes
        .into_iter()
        .filter_map(|outcome| {
            let rejection = outcome.result.err()?;
            assert_eq!(rejection.reason, "HostAlreadyClaimed", "{}: {}", outcome.key.name, rejection.message);
            Some(format!("{}/{}", outcome.key.namespace, outcome.key.name))
        })
        .collect()
}

/// What the rows say of `present`: walking oldest first, a route is rejected when one of the routes its row
/// names is present and was not rejected itself.
fn expected_rejections(present: &[&Row]) -> BTreeSet<String> {
    let mut ordered = present.to_vec();
    ordered.sort_by_key(|row| (row.5, format!("{}_{}_{}", OLDEST_UNIX + row.5, row.0, row.1)));
    let mut admitted = BTreeSet::new();
    let mut rejected = BTreeSet::new();
    for row in ordered {
        if row.6.iter().any(|blocker| admitted.contains(*blocker)) {
            rejected.insert(key(row));
        } else {
            admitted.insert(key(row));
        }
    }
    rejected
}

/// Every pair of rows, then `random` subsets drawn with a fixed xorshift seed.
fn subsets(rows: &'static [Row], random: usize) -> Vec<Vec<&'static Row>> {
    let mut all = Vec::new();
    for (i, a) in rows.iter().enumerate() {
        for b in &rows[i + 1..] {
            all.push(vec![a, b]);
        }
    }
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    for _ in 0..random {
        let mut subset = Vec::new();
        for row in rows {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if state & 1 == 1 {
                subset.push(row);
            }
        }
        all.push(subset);
    }
    all
}

/// Checks every subset: `decide` rejects what the rows say, and the table built with `settings` serves every
/// admitted route at its host (a name under its domain for a wildcard route) and path.
fn check(rows: &'static [Row], settings: &AdmissionSettings, decide: impl Fn(&[&Row]) -> BTreeSet<String>) {
    let mut rejections = 0;
    for subset in subsets(rows, 400) {
        let names: Vec<String> = subset.iter().map(|row| key(row)).collect();
        let expected = expected_rejections(&subset);
        rejections += expected.len();
        assert_eq!(decide(&subset), expected, "routes present: {names:?}");
        assert_admitted_routes_are_served(&subset, settings);
    }
    assert!(rejections > 100, "the subsets exercise the conflicts ({rejections} rejections)");
}

fn assert_admitted_routes_are_served(rows: &[&Row], settings: &AdmissionSettings) {
    let options = BuildOptions { admission: settings.clone(), ..Default::default() };
    let table = build(&snapshot(rows), &options, 1);
    for outcome in table.outcomes().filter(|outcome| outcome.result.is_ok()) {
        let wildcard = outcome.wildcard_policy == "Subdomain";
        let host = match serves_subdomain(&outcome.host, wildcard) {
            true => format!("probe.{}", wildcard_domain(&outcome.host)),
            false => outcome.host.clone(),
        };
        let path = if outcome.path.is_empty() { "/" } else { outcome.path.as_str() };
        let served = table.lookup(&host, path).map(|backend| &backend.route);
        assert_eq!(served, Some(&outcome.key), "{host}{path}, routes present: {rows:?}");
    }
}

#[test]
fn host_claims_match_the_invalid_admission_rows() {
    check(INVALID, &wildcard_settings(false), refused_by_claims);
}

#[test]
fn admission_without_the_ownership_check_matches_its_rows() {
    let settings = wildcard_settings(true);
    check(ANY_NAMESPACE, &settings, |rows| rejected_by_admission(rows, &settings));
}

/// The valid rows are all admitted and served together. A wildcard route on a single-label host is served as
/// that exact host, on :80 and by SNI, like OpenShift's host regex `^myapp$` for it; it covers no name under
/// it. (Two such wildcard routes would both claim the empty domain and conflict, as OpenShift's rows say, so
/// each gets a table of its own.)
#[test]
fn valid_rows_and_single_label_wildcard_hosts_are_served() {
    let rows: Vec<&Row> = VALID.iter().collect();
    assert_eq!(refused_by_claims(&rows), BTreeSet::new());
    assert_eq!(rejected_by_admission(&rows, &wildcard_settings(false)), BTreeSet::new());
    assert_admitted_routes_are_served(&rows, &wildcard_settings(false));

    let options = BuildOptions { admission: wildcard_settings(false), ..Default::default() };
    let rows: Vec<&Row> = vec![&("ns", "wild", "myapp", "", true, 0, &[]), &("ns", "web", "com", "", false, 1, &[])];
    let table = build(&snapshot(&rows), &options, 1);
    assert!(table.outcomes().all(|o| o.result.is_ok()), "{:?}", table.outcomes().collect::<Vec<_>>());
    let served = |host: &str| table.lookup(host, "/").map(|backend| backend.route.name.clone());
    assert_eq!(served("myapp").as_deref(), Some("wild"));
    assert_eq!(served("com").as_deref(), Some("web"));
    assert_eq!(served("x.myapp"), None, "a single-label wildcard host covers nothing under it");

    let mut passthrough = route(&("ns", "pass", "secure", "", true, 0, &[]));
    passthrough.spec.tls = serde_saphyr::from_str("{termination: passthrough}").expect("tls");
    let mut snapshot = Snapshot::default();
    snapshot.routes.insert(ObjectKey::new("ns", "pass"), Arc::new(passthrough));
    let table = build(&snapshot, &options, 1);
    assert!(table.outcomes().all(|o| o.result.is_ok()), "{:?}", table.outcomes().collect::<Vec<_>>());
    let by_sni = table.passthrough().lookup("secure", "").map(|backend| backend.route.name.clone());
    assert_eq!(by_sni.as_deref(), Some("pass"));
}
