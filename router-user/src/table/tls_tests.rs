//! TLS routes in the compiled table: which listener serves them, which certificate :443 presents, and the
//! extended validation of certificates (a bad one rejects only its route).

use std::sync::Arc;
use std::time::Duration;

use super::{build, BuildOptions, HttpAction, RouteTable, Termination, TlsBuild};
use crate::model::{ObjectKey, Route, Snapshot};
use crate::tls::test_pki::{self_signed, Pki};
use crate::tls::{default_certificate, CertChoice};

struct Tls<'a> {
    termination: &'a str,
    policy: &'a str,
    cert: Option<(String, String)>,
}

fn tls_route(name: &str, host: &str, path: &str, created: &str, tls: Option<Tls<'_>>) -> Route {
    let mut yaml = format!(
        "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {{name: {name}, namespace: ns, creationTimestamp: \"{created}\"}}\nspec:\n  host: \"{host}\"\n  path: \"{path}\"\n  to: {{kind: Service, name: svc}}\n"
    );
    if let Some(tls) = tls {
        yaml.push_str(&format!("  tls:\n    termination: {}\n", tls.termination));
        if !tls.policy.is_empty() {
            yaml.push_str(&format!("    insecureEdgeTerminationPolicy: {}\n", tls.policy));
        }
        if let Some((cert, key)) = tls.cert {
            let indent = |pem: &str| pem.lines().map(|l| format!("      {l}\n")).collect::<String>();
            yaml.push_str(&format!("    certificate: |\n{}    key: |\n{}", indent(&cert), indent(&key)));
        }
    }
    serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("test route does not parse: {e}\n{yaml}"))
}

fn table(routes: Vec<Route>) -> RouteTable {
    let mut snapshot = Snapshot::default();
    for route in routes {
        let key = ObjectKey::new("ns", route.metadata.name.clone().unwrap_or_default());
        snapshot.routes.insert(key, Arc::new(route));
    }
    let default = default_certificate(None, None).expect("generated default certificate");
    let tls = TlsBuild::new(Some(default), None, Duration::from_secs(1));
    build(&snapshot, &BuildOptions { allow_loopback_endpoints: true, tls, ..Default::default() }, 1)
}

fn served_name(choice: &CertChoice) -> Vec<u8> {
    choice.key.end_entity_cert().expect("leaf").to_vec()
}

fn reason(table: &RouteTable, name: &str) -> Result<(), &'static str> {
    let found = table.outcomes().find(|o| o.key.name == name).unwrap_or_else(|| panic!("no outcome for {name}"));
    found.result.as_ref().map(|_| ()).map_err(|r| r.reason)
}

#[test]
fn each_listener_sees_the_routes_it_serves() {
    let table = table(vec![
        tls_route("plain", "a.example.com", "", "2026-01-01T00:00:00Z", None),
        tls_route(
            "edge",
            "b.example.com",
            "",
            "2026-01-01T00:00:01Z",
            Some(Tls { termination: "edge", policy: "Allow", cert: None }),
        ),
        tls_route(
            "secure",
            "c.example.com",
            "",
            "2026-01-01T00:00:02Z",
            Some(Tls { termination: "reencrypt", policy: "", cert: None }),
        ),
        tls_route(
            "pass",
            "d.example.com",
            "",
            "2026-01-01T00:00:03Z",
            Some(Tls { termination: "passthrough", policy: "Redirect", cert: None }),
        ),
        tls_route(
            "edge-path",
            "a.example.com",
            "/secure",
            "2026-01-01T00:00:04Z",
            Some(Tls { termination: "edge", policy: "", cert: None }),
        ),
    ]);
    let https = |host: &str, path: &str| table.https().lookup(host, path).map(|b| b.route.name.clone());
    assert_eq!(https("a.example.com", "/"), None, "a plain route is not served on :443");
    assert_eq!(https("a.example.com", "/secure/x"), Some("edge-path".into()));
    assert_eq!(https("b.example.com", "/"), Some("edge".into()));
    assert_eq!(https("c.example.com", "/"), Some("secure".into()));
    assert_eq!(https("d.example.com", "/"), None, "passthrough is never terminated");
    let passthrough = table.passthrough().lookup("d.example.com", "/").expect("passthrough by SNI");
    assert_eq!(passthrough.termination, Some(Termination::Passthrough));
    assert_eq!(passthrough.labels.backend.as_ref(), "be_tcp:ns:pass");
    assert_eq!(
        table.https().lookup("c.example.com", "/").expect("reencrypt").labels.backend.as_ref(),
        "be_secure:ns:secure"
    );
    assert!(table.https().lookup("c.example.com", "/").expect("reencrypt").reencrypt.is_some());

    let http = |host: &str, path: &str| table.lookup(host, path).map(|b| (b.route.name.clone(), b.action));
    assert_eq!(http("a.example.com", "/"), Some(("plain".into(), HttpAction::Forward)));
    assert_eq!(http("a.example.com", "/secure"), Some(("edge-path".into(), HttpAction::NotOnHttp)));
    assert_eq!(http("b.example.com", "/"), Some(("edge".into(), HttpAction::Forward)));
    assert_eq!(http("d.example.com", "/"), Some(("pass".into(), HttpAction::RedirectToHttps)));
}

#[test]
fn route_certificates_are_served_by_sni_and_bad_ones_reject_only_their_route() {
    let pki = Pki::new();
    let good = pki.leaf("good.example.com");
    let other = pki.leaf("other.example.com");
    let mismatched = (good.cert_pem(), other.key_pem());
    let table = table(vec![
        tls_route(
            "good",
            "good.example.com",
            "",
            "2026-01-01T00:00:00Z",
            Some(Tls { termination: "edge", policy: "", cert: Some((good.cert_pem(), good.key_pem())) }),
        ),
        tls_route(
            "bad",
            "bad.example.com",
            "",
            "2026-01-01T00:00:01Z",
            Some(Tls { termination: "edge", policy: "", cert: Some(mismatched) }),
        ),
        tls_route(
            "nocert",
            "nocert.example.com",
            "",
            "2026-01-01T00:00:02Z",
            Some(Tls { termination: "edge", policy: "", cert: None }),
        ),
    ]);
    assert_eq!(reason(&table, "good"), Ok(()));
    assert_eq!(reason(&table, "bad"), Err("ExtendedValidationFailed"));
    assert_eq!(reason(&table, "nocert"), Ok(()));
    assert!(table.https().lookup("bad.example.com", "/").is_none(), "a rejected route is not served");
    assert!(table.lookup("bad.example.com", "/").is_none());

    let certs = table.certs.as_ref().expect("certificate store");
    let own = certs.find(Some("good.example.com"));
    assert!(own.own);
    assert_eq!(served_name(&own), good.cert.der().to_vec());
    for sni in [Some("nocert.example.com"), Some("unknown.example.com"), None] {
        let choice = certs.find(sni);
        assert!(!choice.own, "{sni:?} gets the default certificate");
        assert_eq!(served_name(&choice), served_name(&certs.find(None)));
    }
}

#[test]
fn a_wildcard_route_serves_its_certificate_to_subdomains() {
    let wildcard = self_signed("*.apps.example.com");
    let mut route = tls_route(
        "wild",
        "www.apps.example.com",
        "",
        "2026-01-01T00:00:00Z",
        Some(Tls { termination: "edge", policy: "", cert: Some((wildcard.cert_pem(), wildcard.key_pem())) }),
    );
    route.spec.wildcard_policy = Some("Subdomain".into());
    let mut snapshot = Snapshot::default();
    snapshot.routes.insert(ObjectKey::new("ns", "wild"), Arc::new(route));
    let default = default_certificate(None, None).expect("default");
    let options = BuildOptions {
        allow_loopback_endpoints: true,
        tls: TlsBuild::new(Some(default), None, Duration::from_secs(1)),
        admission: crate::admission::AdmissionSettings { allow_wildcard_routes: true, ..Default::default() },
        ..Default::default()
    };
    let table = build(&snapshot, &options, 1);
    assert_eq!(reason(&table, "wild"), Ok(()));
    let certs = table.certs.as_ref().expect("store");
    assert!(certs.find(Some("anything.apps.example.com")).own);
    assert!(!certs.find(Some("a.b.apps.example.com")).own, "one label only");
    assert_eq!(
        table.https().lookup("anything.apps.example.com", "/").map(|b| b.route.name.clone()),
        Some("wild".into())
    );
}

#[test]
fn reencrypt_pools_survive_a_rebuild_while_the_route_is_unchanged() {
    let routes = || {
        vec![tls_route(
            "secure",
            "c.example.com",
            "",
            "2026-01-01T00:00:00Z",
            Some(Tls { termination: "reencrypt", policy: "", cert: None }),
        )]
    };
    let mut snapshot = Snapshot::default();
    for route in routes() {
        snapshot.routes.insert(ObjectKey::new("ns", "secure"), Arc::new(route));
    }
    let default = default_certificate(None, None).expect("default");
    let options = BuildOptions {
        allow_loopback_endpoints: true,
        tls: TlsBuild::new(Some(default), None, Duration::from_secs(1)),
        ..Default::default()
    };
    let upstream = |table: &RouteTable| {
        table.https().lookup("c.example.com", "/").and_then(|b| b.reencrypt.clone()).expect("reencrypt")
    };
    // Weak: a pool still held (by a table, or a request in flight) is kept for its route, as it should be.
    let first = Arc::downgrade(&upstream(&build(&snapshot, &options, 1)));
    let second = upstream(&build(&snapshot, &options, 2));
    assert!(std::ptr::eq(first.as_ptr(), Arc::as_ptr(&second)), "same pool across rebuilds");
    drop(second);
    snapshot.routes.clear();
    build(&snapshot, &options, 3);
    for route in routes() {
        snapshot.routes.insert(ObjectKey::new("ns", "secure"), Arc::new(route));
    }
    let third = upstream(&build(&snapshot, &options, 4));
    assert!(!std::ptr::eq(first.as_ptr(), Arc::as_ptr(&third)), "a route that went away starts afresh");
}

#[test]
fn h2_is_offered_only_on_a_certificate_exactly_one_route_uses() {
    let pki = Pki::new();
    let (alone, shared, default) =
        (pki.leaf("alone.example.com"), pki.leaf("paths.example.com"), pki.leaf("default.example.com"));
    let dir = tempfile::tempdir().expect("temp dir");
    let default_path = dir.path().join("default.pem");
    std::fs::write(&default_path, format!("{}{}", default.cert_pem(), default.key_pem())).expect("write default");
    let edge = |leaf: &crate::tls::test_pki::Leaf| {
        Some(Tls { termination: "edge", policy: "", cert: Some((leaf.cert_pem(), leaf.key_pem())) })
    };
    let routes = [
        tls_route("alone", "alone.example.com", "", "2026-01-01T00:00:00Z", edge(&alone)),
        // Two paths of one host with the same certificate: it is shared even though one route serves it.
        tls_route("paths-a", "paths.example.com", "/a", "2026-01-01T00:00:01Z", edge(&shared)),
        tls_route("paths-b", "paths.example.com", "/b", "2026-01-01T00:00:02Z", edge(&shared)),
        // A route whose certificate is the default certificate.
        tls_route("copy", "copy.example.com", "", "2026-01-01T00:00:03Z", edge(&default)),
    ];
    let mut snapshot = Snapshot::default();
    for route in routes {
        let key = ObjectKey::new("ns", route.metadata.name.clone().unwrap_or_default());
        snapshot.routes.insert(key, Arc::new(route));
    }
    let default_key = default_certificate(Some(&default_path), None).expect("default certificate");
    let tls = TlsBuild::new(Some(default_key), None, Duration::from_secs(1));
    let table = build(&snapshot, &BuildOptions { allow_loopback_endpoints: true, tls, ..Default::default() }, 1);
    let certs = table.certs.as_ref().expect("certificate store");

    let pick = certs.find(Some("alone.example.com"));
    assert!(pick.own && pick.offer_h2, "one route, its own certificate: h2");
    for sni in ["paths.example.com", "copy.example.com"] {
        let pick = certs.find(Some(sni));
        assert!(pick.own && !pick.offer_h2, "{sni}: a shared certificate keeps HTTP/1.1");
    }
    assert!(!certs.find(None).offer_h2);

    // Once one of the two paths goes, the certificate is that host's alone.
    snapshot.routes.remove(&ObjectKey::new("ns", "paths-b"));
    let default_key = default_certificate(Some(&default_path), None).expect("default certificate");
    let tls = TlsBuild::new(Some(default_key), None, Duration::from_secs(1));
    let table = build(&snapshot, &BuildOptions { allow_loopback_endpoints: true, tls, ..Default::default() }, 2);
    assert!(table.certs.as_ref().expect("store").find(Some("paths.example.com")).offer_h2);
}
