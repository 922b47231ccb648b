//! A passthrough route and another TLS route on one host, as OpenShift's host index decides
//! (`hostindex_test.go`): whichever is younger is HostAlreadyClaimed and serves nothing, on :443 or :80. A
//! plain HTTP route on a path coexists with the passthrough route.

use std::sync::Arc;

use crate::model::{ObjectKey, Route, Snapshot};
use crate::table::{build, BuildOptions, RouteTable};

/// `(name, seconds after the oldest, path, termination or "" for plain HTTP)` on host `test.com`, namespace `test`.
type Row = (&'static str, u32, &'static str, &'static str);

fn route((name, seconds, path, termination): Row) -> Route {
    let tls = match termination {
        "" => String::new(),
        "passthrough" => ", tls: {termination: passthrough, insecureEdgeTerminationPolicy: Redirect}".to_string(),
        other => format!(", tls: {{termination: {other}, insecureEdgeTerminationPolicy: Allow}}"),
    };
    serde_saphyr::from_str(&format!(
        "metadata: {{name: \"{name}\", namespace: test, uid: \"{seconds:03}\", creationTimestamp: \"2026-01-01T00:00:{seconds:02}Z\"}}\nspec: {{host: test.com, path: \"{path}\", to: {{kind: Service, name: svc}}{tls}}}\n"
    ))
    .expect("route")
}

fn table(rows: &[Row]) -> RouteTable {
    let mut snapshot = Snapshot::default();
    for row in rows {
        snapshot.routes.insert(ObjectKey::new("test", row.0), Arc::new(route(*row)));
    }
    build(&snapshot, &BuildOptions::default(), 1)
}

fn rejected(table: &RouteTable) -> Vec<String> {
    let mut names: Vec<String> = table
        .outcomes()
        .filter_map(|outcome| {
            let rejection = outcome.result.as_ref().err()?;
            assert_eq!(rejection.reason, "HostAlreadyClaimed", "{}: {}", outcome.key.name, rejection.message);
            Some(outcome.key.name.clone())
        })
        .collect();
    names.sort();
    names
}

/// Every route name the table serves for test.com, on :80 (`http`), terminated :443 (`https`) or by SNI.
fn served(table: &RouteTable) -> Vec<String> {
    let mut names: Vec<String> = [table.http(), table.https(), table.passthrough()]
        .into_iter()
        .flat_map(|rules| rules.backends().map(|backend| backend.route.name.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_younger_of_a_passthrough_route_and_another_tls_route_is_displaced() {
    let rows: &[(&[Row], &[&str])] = &[
        // "path-based route that conflicts with passthrough route"
        (&[("1", 1, "", "passthrough"), ("2", 2, "/bar", ""), ("3", 3, "/foo", "edge")], &["3"]),
        // "passthrough route that conflicts with path-based route"
        (&[("1", 1, "/foo", "edge"), ("2", 2, "", "passthrough")], &["2"]),
        (&[("1", 1, "/foo", "reencrypt"), ("2", 2, "", "passthrough")], &["2"]),
        (&[("1", 1, "", "passthrough"), ("2", 2, "/foo", "reencrypt")], &["2"]),
        // The same, listed in the other order: age decides, not arrival.
        (&[("2", 2, "", "passthrough"), ("1", 1, "/foo", "edge")], &["2"]),
        // Plain HTTP routes on paths share the host with a passthrough route either way.
        (&[("1", 1, "/bar", ""), ("2", 2, "", "passthrough")], &[]),
        // Edge and reencrypt routes on different paths share a host.
        (&[("1", 1, "/foo", "edge"), ("2", 2, "/bar", "reencrypt")], &[]),
    ];
    for (routes, want_rejected) in rows {
        let table = table(routes);
        assert_eq!(rejected(&table), *want_rejected, "routes {routes:?}");
        let want_served: Vec<&str> =
            routes.iter().map(|row| row.0).filter(|name| !want_rejected.contains(name)).collect();
        let mut want_served: Vec<String> = want_served.into_iter().map(str::to_string).collect();
        want_served.sort();
        assert_eq!(served(&table), want_served, "routes {routes:?}: a rejected route serves nothing");
    }
}
