//! Routes' client certificate checks in the compiled table: the check a handshake gets by SNI, the routes a
//! bad bundle or annotation rejects (and only those), and a changed bundle recompiling its route.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::ByteString;

use super::{build, build_from, BuildOptions, RouteTable, TlsBuild, CLIENT_TLS_VALIDATION_FAILED};
use crate::model::{ObjectKey, Route, Snapshot};
use crate::tls::default_certificate;
use crate::tls::test_pki::Pki;

/// A route `name` in namespace `ns` created at second `second`, with `tls` lines (`termination: edge`, ...) and
/// annotations.
fn route(name: &str, host: &str, path: &str, second: u32, tls: &str, annotations: &[(&str, &str)]) -> Route {
    let annotations: String = annotations.iter().map(|(k, v)| format!("{k}: {v:?}, ")).collect();
    let tls = if tls.is_empty() { String::new() } else { format!("  tls: {{{tls}}}\n") };
    let yaml = format!(
        "metadata: {{name: {name}, namespace: ns, creationTimestamp: \"2026-01-01T00:00:{second:02}Z\", annotations: \
         {{{annotations}}}}}\nspec:\n  host: {host}\n  path: \"{path}\"\n  to: {{kind: Service, name: svc}}\n{tls}"
    );
    serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("test route: {e}\n{yaml}"))
}

fn config_map(name: &str, key: &str, text: &str) -> (ObjectKey, Arc<ConfigMap>) {
    let mut config_map = ConfigMap::default();
    config_map.metadata.name = Some(name.into());
    config_map.metadata.namespace = Some("ns".into());
    config_map.data = Some([(key.to_string(), text.to_string())].into());
    (ObjectKey::new("ns", name), Arc::new(config_map))
}

fn snapshot(routes: Vec<Route>, config_maps: Vec<(ObjectKey, Arc<ConfigMap>)>) -> Snapshot {
    let mut snapshot = Snapshot::default();
    for route in routes {
        let key = ObjectKey::new("ns", route.metadata.name.clone().unwrap_or_default());
        snapshot.routes.insert(key, Arc::new(route));
    }
    for (key, config_map) in config_maps {
        snapshot.config_maps.insert(key, config_map);
    }
    snapshot
}

fn options(global: bool) -> BuildOptions {
    let default = default_certificate(None, None).expect("generated default certificate");
    let mut tls = TlsBuild::new(Some(default), None, Duration::from_secs(1));
    tls.global_client_auth = global;
    BuildOptions { allow_loopback_endpoints: true, tls, ..Default::default() }
}

fn outcome(table: &RouteTable, name: &str) -> Result<(), (String, String)> {
    let found = table.outcomes().find(|o| o.key.name == name).unwrap_or_else(|| panic!("no outcome for {name}"));
    found.result.clone().map_err(|r| (r.reason.to_string(), r.message))
}

const EDGE: &str = "termination: edge";
const CA: &str = "router.openshift.io/client-tls-ca";

#[test]
fn a_checked_route_gives_its_sni_and_its_backend_the_check() {
    let pki = Pki::new();
    let snapshot = snapshot(
        vec![
            route("a", "a.example.com", "", 1, EDGE, &[(CA, "clients")]),
            route("a2", "a.example.com", "/two", 2, EDGE, &[(CA, "clients")]),
            route("b", "b.example.com", "", 3, "termination: reencrypt", &[(CA, "clients/other.pem")]),
            route("c", "c.example.com", "", 4, EDGE, &[]),
        ],
        vec![config_map("clients", "ca-bundle.pem", &pki.ca.pem())],
    );
    let mut snapshot = snapshot;
    let data = [("ca-bundle.pem".into(), pki.ca.pem()), ("other.pem".into(), pki.ca.pem())].into();
    let both = ConfigMap { data: Some(data), ..ConfigMap::default() };
    snapshot.config_maps.insert(ObjectKey::new("ns", "clients"), Arc::new(both));
    let table = build(&snapshot, &options(false), 1);
    for name in ["a", "a2", "b", "c"] {
        assert_eq!(outcome(&table, name), Ok(()), "{name}");
    }
    let check = table.client_auth(Some("a.example.com")).expect("a's SNI is checked");
    assert!(check.required());
    assert!(table.client_auth(Some("b.example.com")).is_some());
    assert!(table.client_auth(Some("c.example.com")).is_none());
    let backend = table.https().lookup("a.example.com", "/two").expect("a2");
    assert_eq!(backend.client_auth.as_ref(), Some(check));
    assert!(table.https().lookup("c.example.com", "/").expect("c").client_auth.is_none());
}

#[test]
fn unusable_bundles_and_settings_reject_only_their_route() {
    let pki = Pki::new();
    let snapshot = snapshot(
        vec![
            route("good", "good.example.com", "", 1, EDGE, &[(CA, "clients")]),
            route("missing", "missing.example.com", "", 2, EDGE, &[(CA, "nothing")]),
            route("nokey", "nokey.example.com", "", 3, EDGE, &[(CA, "clients/absent.pem")]),
            route("garbage", "garbage.example.com", "", 4, EDGE, &[(CA, "garbage")]),
            route(
                "filter",
                "filter.example.com",
                "",
                5,
                EDGE,
                &[(CA, "clients"), ("router.openshift.io/client-tls-subject-filter", "(")],
            ),
            route(
                "verify",
                "verify.example.com",
                "",
                6,
                EDGE,
                &[(CA, "clients"), ("router.openshift.io/client-tls-verify", "maybe")],
            ),
            route("pass", "pass.example.com", "", 7, "termination: passthrough", &[(CA, "clients")]),
            route("plain", "plain.example.com", "", 8, "", &[(CA, "clients")]),
            route(
                "allow",
                "allow.example.com",
                "",
                9,
                "termination: edge, insecureEdgeTerminationPolicy: Allow",
                &[(CA, "clients")],
            ),
            route("other", "good.example.com", "/other", 10, EDGE, &[]),
        ],
        vec![config_map("clients", "ca-bundle.pem", &pki.ca.pem()), config_map("garbage", "ca-bundle.pem", "not PEM")],
    );
    let table = build(&snapshot, &options(false), 1);
    assert_eq!(outcome(&table, "good"), Ok(()));
    for (name, says) in [
        ("missing", "configmaps \"nothing\" not found"),
        ("nokey", "has no key \"absent.pem\""),
        ("garbage", "no certificates found"),
        ("filter", "subject filter"),
        ("verify", "client-tls-verify"),
        ("pass", "edge or reencrypt"),
        ("plain", "edge or reencrypt"),
        ("allow", "Allow"),
        ("other", "older route of this host"),
    ] {
        let (reason, message) = outcome(&table, name).expect_err(name);
        assert_eq!(reason, CLIENT_TLS_VALIDATION_FAILED, "{name}");
        assert!(message.contains(says), "{name}: {message}");
    }
    assert!(table.client_auth(Some("good.example.com")).is_some());
    assert!(table.https().lookup("missing.example.com", "/").is_none(), "a rejected route is not served");
}

#[test]
fn with_router_wide_client_certificates_the_annotations_only_warn() {
    let snapshot = snapshot(vec![route("a", "a.example.com", "", 1, EDGE, &[(CA, "nothing")])], Vec::new());
    let table = build(&snapshot, &options(true), 1);
    assert_eq!(outcome(&table, "a"), Ok(()));
    assert!(table.client_auth(Some("a.example.com")).is_none());
    assert!(table.warnings().any(|(key, w)| key.name == "a" && w.contains("ROUTER_MUTUAL_TLS_AUTH")));
}

#[test]
fn a_changed_bundle_recompiles_the_route_and_an_unchanged_one_keeps_it() {
    let (first, second) = (Pki::new(), Pki::new());
    let routes = || vec![route("a", "a.example.com", "", 1, EDGE, &[(CA, "clients")])];
    let before = snapshot(routes(), vec![config_map("clients", "ca-bundle.pem", &first.ca.pem())]);
    let options = options(false);
    let table = build(&before, &options, 1);
    let same = snapshot(routes(), vec![config_map("clients", "ca-bundle.pem", &first.ca.pem())]);
    let kept = build_from(&same, &options, 2, Some((&before, &table)));
    let backend = |t: &RouteTable| Arc::clone(t.https().lookup("a.example.com", "/").expect("a"));
    assert!(Arc::ptr_eq(&backend(&table), &backend(&kept)));
    let changed = snapshot(routes(), vec![config_map("clients", "ca-bundle.pem", &second.ca.pem())]);
    let rebuilt = build_from(&changed, &options, 3, Some((&same, &kept)));
    assert!(!Arc::ptr_eq(&backend(&kept), &backend(&rebuilt)));
    assert_ne!(backend(&kept).client_auth, backend(&rebuilt).client_auth);
    assert_eq!(rebuilt.client_auth(Some("a.example.com")), backend(&rebuilt).client_auth.as_ref());
}

#[test]
fn a_secret_can_hold_the_bundle_under_ca_crt() {
    let pki = Pki::new();
    const CA_SECRET: &str = "router.openshift.io/client-tls-ca-secret";
    let mut snapshot = snapshot(
        vec![
            route("s", "s.example.com", "", 1, EDGE, &[(CA_SECRET, "client-ca")]),
            route("keyed", "keyed.example.com", "", 2, EDGE, &[(CA_SECRET, "client-ca/tls.crt")]),
            route("missing", "missing.example.com", "", 3, EDGE, &[(CA_SECRET, "nothing")]),
            route("nokey", "nokey.example.com", "", 4, EDGE, &[(CA_SECRET, "client-ca/absent.crt")]),
            route("both", "both.example.com", "", 5, EDGE, &[(CA_SECRET, "client-ca"), (CA, "clients")]),
        ],
        vec![config_map("clients", "ca-bundle.pem", &pki.ca.pem())],
    );
    let data = [("ca.crt", pki.ca.pem()), ("tls.crt", pki.ca.pem())]
        .map(|(key, pem)| (key.to_string(), ByteString(pem.into_bytes())));
    let secret = Secret { type_: Some("kubernetes.io/tls".into()), data: Some(data.into()), ..Secret::default() };
    snapshot.secrets.insert(ObjectKey::new("ns", "client-ca"), Arc::new(secret));
    let table = build(&snapshot, &options(false), 1);
    for name in ["s", "keyed"] {
        assert_eq!(outcome(&table, name), Ok(()), "{name}");
    }
    assert!(table.client_auth(Some("s.example.com")).expect("s's SNI is checked").required());
    for (name, says) in [
        ("missing", "secrets \"nothing\" not found (a Secret of type kubernetes.io/tls)"),
        ("nokey", "secret \"client-ca\" has no key \"absent.crt\""),
        ("both", "name one CA bundle"),
    ] {
        let (reason, message) = outcome(&table, name).expect_err(name);
        assert_eq!(reason, CLIENT_TLS_VALIDATION_FAILED, "{name}");
        assert!(message.contains(says), "{name}: {message}");
    }
}
