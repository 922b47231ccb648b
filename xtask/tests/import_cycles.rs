//! No import cycles: the `use` items and path references of xtask/src and router-user/src (the `router` library)
//! resolved to files must form no cycle between files, nor between top-level modules. A cycle fails the test with
//! its files and the reference behind each edge. The analysis is in `import_graph/`.

mod import_graph;

use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().map_or_else(|| manifest_dir.to_path_buf(), Path::to_path_buf)
}

fn assert_no_import_cycles(root_file: &Path) {
    let read = |path: &Path| std::fs::read_to_string(path).ok();
    let cycles = import_graph::import_cycles(root_file, &read)
        .unwrap_or_else(|error| panic!("reading the crate at {}: {error}", root_file.display()));
    assert!(cycles.is_empty(), "{} has import cycles:\n{}", root_file.display(), cycles.join("\n"));
}

#[test]
fn xtask_has_no_import_cycles() {
    assert_no_import_cycles(&workspace_root().join("xtask/src/main.rs"));
}

#[test]
fn router_library_has_no_import_cycles() {
    assert_no_import_cycles(&workspace_root().join("router-user/src/lib.rs"));
}
