//! Manifest errors and duplicate objects are logged once, not on every reload. A test binary of its own: a
//! global subscriber in a process where no other test registers `tracing` call sites first (a scoped one
//! raced with other test threads over the call-site interest cache).

use std::path::Path;
use std::sync::{Arc, Mutex};

use router::source::manifest::ManifestSource;

fn route(name: &str, host: &str) -> String {
    format!(
        "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: {name}\n  namespace: ns\nspec:\n  host: {host}\n  to:\n    kind: Service\n    name: {name}\n"
    )
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write manifest");
}

/// A `tracing` writer into a shared buffer, to count log lines.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

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
    let logs = Captured::default();
    let writer = logs.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let dir = tempfile::tempdir().expect("tempdir");
    // b.yaml: the route (lines 1-10), `---` (11), then `kind: [` (12) whose bracket never closes.
    write(&dir.path().join("a.yaml"), &route("a", "a.example.com"));
    write(&dir.path().join("b.yaml"), &format!("{}---\nkind: [\n", route("a", "b.example.com")));
    let mut source = ManifestSource::new(dir.path());
    for _ in 0..3 {
        assert_eq!(source.reload().errors.len(), 1);
    }
    assert_eq!(logs.count("manifest error"), 1);
    assert_eq!(logs.count("b.yaml line=12"), 1, "{}", String::from_utf8_lossy(&logs.0.lock().expect("log buffer")));
    assert_eq!(logs.count("defined in two manifest files"), 1);
}
