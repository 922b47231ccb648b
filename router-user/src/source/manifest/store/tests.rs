//! Tests of the per-file last-good cache, deletion, duplicates and change detection.

use std::fs;
use std::path::Path;

use super::ManifestSource;
use crate::model::ObjectKey;
use crate::source::SourceUpdate;

fn route(name: &str, host: &str) -> String {
    let head = "apiVersion: route.openshift.io/v1\nkind: Route\n";
    let meta = format!("metadata:\n  name: {name}\n  namespace: ns\n");
    let spec = format!("spec:\n  host: {host}\n  to:\n    kind: Service\n    name: {name}\n");
    format!("{head}{meta}{spec}")
}

fn host(update: &SourceUpdate, name: &str) -> Option<String> {
    update.snapshot.routes.get(&ObjectKey::new("ns", name)).and_then(|route| route.spec.host.clone())
}

fn write(path: &Path, text: &str) {
    fs::write(path, text).expect("write manifest");
}

#[test]
fn last_good_kept_after_bad_edit_and_replaced_after_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("a.yaml");
    write(&file, &route("a", "one.example.com"));
    let mut source = ManifestSource::new(dir.path());
    let first = source.reload();
    assert!(first.errors.is_empty(), "{:?}", first.errors);
    assert_eq!(host(&first, "a").as_deref(), Some("one.example.com"));

    // A bad edit: a second document that does not parse. The file's last good objects stay.
    write(
        &file,
        &format!("{}---\n{}", route("a", "two.example.com"), "kind: Route\napiVersion: route.openshift.io/v1\n"),
    );
    let broken = source.reload();
    assert_eq!(broken.errors.len(), 1, "{:?}", broken.errors);
    assert_eq!(broken.errors[0].path, file);
    assert_eq!(broken.errors[0].line, Some(12), "the second document starts after line 11's `---`");
    assert_eq!(host(&broken, "a").as_deref(), Some("one.example.com"));

    // The file unchanged: the error is still reported (it is current state), the objects still
    // kept.
    let again = source.reload();
    assert_eq!(again.errors, broken.errors);
    assert_eq!(host(&again, "a").as_deref(), Some("one.example.com"));

    write(&file, &route("a", "three.example.com"));
    let fixed = source.reload();
    assert!(fixed.errors.is_empty(), "{:?}", fixed.errors);
    assert_eq!(host(&fixed, "a").as_deref(), Some("three.example.com"));
}

#[test]
fn other_files_apply_while_one_is_broken() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(&dir.path().join("a.yaml"), &route("a", "a.example.com"));
    write(&dir.path().join("b.yaml"), &route("b", "b.example.com"));
    let mut source = ManifestSource::new(dir.path());
    source.reload();
    write(&dir.path().join("a.yaml"), "apiVersion: v1\nkind: Service\nmetadata: [\n");
    write(&dir.path().join("b.yaml"), &route("b", "b2.example.com"));
    let update = source.reload();
    assert_eq!(update.errors.len(), 1);
    assert_eq!(host(&update, "a").as_deref(), Some("a.example.com"));
    assert_eq!(host(&update, "b").as_deref(), Some("b2.example.com"));
}

#[test]
fn a_file_never_clean_contributes_what_parsed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!("{}---\nkind: Route\n", route("a", "a.example.com"));
    write(&dir.path().join("a.yaml"), &text);
    let update = ManifestSource::new(dir.path()).reload();
    assert_eq!(update.errors.len(), 1);
    assert_eq!(host(&update, "a").as_deref(), Some("a.example.com"));
}

#[test]
fn file_deletion_drops_its_objects() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::create_dir(dir.path().join("sub")).expect("mkdir");
    write(&dir.path().join("a.yaml"), &route("a", "a.example.com"));
    write(&dir.path().join("sub/b.yml"), &route("b", "b.example.com"));
    let mut source = ManifestSource::new(dir.path());
    assert_eq!(source.reload().snapshot.routes.len(), 2);
    fs::remove_file(dir.path().join("sub/b.yml")).expect("rm");
    let update = source.reload();
    assert!(update.errors.is_empty());
    assert_eq!(update.snapshot.routes.keys().collect::<Vec<_>>(), [&ObjectKey::new("ns", "a")]);
}

#[test]
fn a_vanished_root_keeps_what_was_known() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("manifests");
    fs::create_dir(&root).expect("mkdir");
    write(&root.join("a.yaml"), &route("a", "a.example.com"));
    let mut source = ManifestSource::new(&root);
    source.reload();
    fs::remove_dir_all(&root).expect("rm -r");
    let update = source.reload();
    assert_eq!(update.errors.len(), 1);
    assert_eq!((update.errors[0].path.as_path(), update.errors[0].line), (root.as_path(), None));
    assert_eq!(host(&update, "a").as_deref(), Some("a.example.com"));
}

#[test]
fn same_object_in_two_files_later_path_wins() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(&dir.path().join("10-base.yaml"), &route("a", "base.example.com"));
    write(&dir.path().join("20-override.yaml"), &route("a", "override.example.com"));
    let update = ManifestSource::new(dir.path()).reload();
    assert!(update.errors.is_empty());
    assert_eq!(update.snapshot.routes.len(), 1);
    assert_eq!(host(&update, "a").as_deref(), Some("override.example.com"));
}

#[test]
fn a_single_file_path_and_change_detection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("routes.yaml");
    write(&file, &route("a", "a.example.com"));
    let mut source = ManifestSource::new(&file);
    assert!(source.pass().changed, "the first pass is always a change");
    assert!(!source.pass().changed, "nothing changed on disk");
    write(&file, &route("a", "b.example.com"));
    let pass = source.pass();
    assert!(pass.changed);
    assert_eq!(host(&pass.update, "a").as_deref(), Some("b.example.com"));
}

#[test]
fn a_pass_over_named_paths_sees_what_a_full_pass_sees() {
    use std::collections::BTreeSet;

    use super::super::tree::{self, Fingerprint};

    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(&root.join("a.yaml"), &route("a", "a.example.com"));
    write(&root.join("b.yaml"), &route("b", "b.example.com"));
    let mut source = ManifestSource::new(root);
    let mut seen: Fingerprint = tree::fingerprint(root);
    assert!(source.pass_paths(&BTreeSet::new(), &mut seen).is_none(), "a full pass comes first");
    source.pass();
    let paths = |names: &[&str]| names.iter().map(|name| root.join(name)).collect::<BTreeSet<_>>();

    write(&root.join("c.yaml"), &route("c", "c.example.com"));
    write(&root.join("a.yaml"), &route("a", "a2.example.com"));
    write(&root.join(".c.yaml.tmp"), &route("hidden", "hidden.example.com"));
    let pass =
        source.pass_paths(&paths(&["c.yaml", "a.yaml", ".c.yaml.tmp", "notes.txt"]), &mut seen).expect("no rescan");
    assert!(pass.changed);
    assert_eq!(host(&pass.update, "a").as_deref(), Some("a2.example.com"));
    assert_eq!(host(&pass.update, "c").as_deref(), Some("c.example.com"));
    assert_eq!(pass.update.snapshot.routes.len(), 3, "the hidden file is not read");
    assert_eq!(seen, tree::fingerprint(root), "the poll's fingerprint follows");

    let unchanged = source.pass_paths(&paths(&["b.yaml", ".c.yaml.tmp"]), &mut seen).expect("no rescan");
    assert!(!unchanged.changed);

    fs::remove_file(root.join("b.yaml")).expect("rm");
    let pass = source.pass_paths(&paths(&["b.yaml"]), &mut seen).expect("no rescan");
    assert!(pass.changed);
    assert_eq!(host(&pass.update, "b"), None);
    assert_eq!(pass.update.snapshot.routes.len(), 2);
    assert_eq!(seen, tree::fingerprint(root));

    // A new directory, or a known file's directory gone: only a listing tells.
    fs::create_dir(root.join("sub")).expect("mkdir");
    write(&root.join("sub/d.yaml"), &route("d", "d.example.com"));
    assert!(source.pass_paths(&paths(&["sub"]), &mut seen).is_none());
    assert_eq!(host(&source.pass().update, "d").as_deref(), Some("d.example.com"));
    fs::remove_dir_all(root.join("sub")).expect("rm -r");
    assert!(source.pass_paths(&paths(&["sub"]), &mut seen).is_none());
}

#[test]
fn an_ingress_becomes_routes_after_the_merge_and_a_route_object_keeps_its_name() {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = include_str!("../testdata/ingress.yaml");
    let (service, rest) = fixture.split_once("\n---\n").expect("the Service comes first");
    write(&dir.path().join("ingress.yaml"), rest);
    let mut source = ManifestSource::new(dir.path());
    let update = source.reload();
    assert!(update.errors.is_empty(), "{:?}", update.errors);
    let names = |update: &SourceUpdate| update.snapshot.routes.keys().map(ToString::to_string).collect::<Vec<_>>();
    // Without the Service, the paths that name its port by number wait; the one naming it by name does not.
    assert_eq!(names(&update), ["shop/site-ingress-1-0"]);

    write(&dir.path().join("service.yaml"), service);
    let update = source.reload();
    assert_eq!(names(&update), ["shop/site-ingress-0-0", "shop/site-ingress-1-0", "shop/site-ingress-1-2"]);
    let route = |name: &str| update.snapshot.routes[&ObjectKey::new("shop", name)].clone();
    let secure = route("site-ingress-0-0");
    assert_eq!(secure.spec.host.as_deref(), Some("secure.example.com"));
    assert_eq!(secure.spec.path.as_deref(), Some("/app"));
    assert_eq!(secure.spec.to.name, "web");
    assert_eq!(secure.spec.port.as_ref().map(|p| &p.target_port), Some(&IntOrString::String("http".into())));
    let tls = secure.spec.tls.as_ref().expect("a TLS entry covers the host: edge");
    assert_eq!(tls.termination, "edge");
    assert_eq!((tls.certificate.as_deref(), tls.key.as_deref()), (Some("CERT"), Some("KEY")));
    assert_eq!(tls.insecure_edge_termination_policy.as_deref(), Some("Redirect"));
    let raw = route("site-ingress-1-2");
    assert_eq!(raw.spec.port.as_ref().map(|p| &p.target_port), Some(&IntOrString::Int(9443)));
    assert!(raw.spec.tls.is_none());

    let own = "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: site-ingress-1-0\n  namespace: shop\nspec:\n  host: own.example.com\n  to:\n    kind: Service\n    name: web\n";
    write(&dir.path().join("route.yaml"), own);
    let update = source.reload();
    let host = update.snapshot.routes[&ObjectKey::new("shop", "site-ingress-1-0")].spec.host.clone();
    assert_eq!(host.as_deref(), Some("own.example.com"), "the Route object wins over the translation");
    assert_eq!(update.snapshot.routes.len(), 3);
}
