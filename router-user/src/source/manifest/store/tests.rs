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

/// A `tracing` writer into a shared buffer, to count log lines.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn count(&self, needle: &str) -> usize {
        String::from_utf8_lossy(&self.0.lock().expect("log buffer")).matches(needle).count()
    }
}

#[test]
fn errors_and_duplicates_are_logged_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(&dir.path().join("a.yaml"), &route("a", "a.example.com"));
    write(&dir.path().join("b.yaml"), &format!("{}---\nkind: [\n", route("a", "b.example.com")));
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        // Another test thread may have cached "no interest" for these callsites before this scoped
        // subscriber existed; recompute it now that it does.
        tracing::callsite::rebuild_interest_cache();
        let mut source = ManifestSource::new(dir.path());
        for _ in 0..3 {
            assert_eq!(source.reload().errors.len(), 1);
        }
    });
    assert_eq!(logs.count("manifest error"), 1);
    assert_eq!(logs.count("b.yaml line=13"), 1, "{}", logs.count("line="));
    assert_eq!(logs.count("defined in two manifest files"), 1);
}
