//! The import graph of a crate and its cycles: every module's `use` items and path references resolved to the
//! files they name (`crate::`, `super::`, `self::`, child modules, re-exports through `mod.rs`), leaving out
//! `#[cfg(test)]` code and a module's edges into its own children. Cycles are reported between files and between
//! top-level modules (the first component of a module's path).
//!
//! - `lexer`: tokens without comments and literal contents; `syntax`: one file's modules, `use` items, defined
//!   names and paths; `crate_tree`: the crate's modules from its root file; `resolve`: paths to files, the edges;
//!   `cycles`: strongly connected components and a shortest cycle in each.

pub mod crate_tree;
pub mod cycles;
pub mod lexer;
pub mod resolve;
pub mod syntax;

use std::path::Path;

use crate_tree::{CrateTree, ReadSource};
use cycles::{components, describe, Graph};
use resolve::file_edges;

/// The name of the top-level module a file belongs to (`<root>` for the crate root file).
fn top_level(module: &[String]) -> String {
    module.first().cloned().unwrap_or_else(|| "<root>".into())
}

/// The file graph (nodes named by file, relative to the source directory) and the top-level module graph.
pub fn graphs(tree: &CrateTree) -> (Graph, Graph) {
    let mut files = Graph::new();
    let mut top = Graph::new();
    for (from, targets) in file_edges(tree) {
        let from_file = tree.file_name(&from);
        files.entry(from_file.clone()).or_default();
        for (to, evidence) in targets {
            let to_file = tree.file_name(&to);
            let why = format!("{from_file}:{} {}", evidence.line, evidence.path);
            let (from_top, to_top) = (top_level(&from), top_level(&to));
            if from_top != to_top {
                top.entry(from_top).or_default().entry(to_top).or_insert_with(|| format!("{why} (in {to_file})"));
            }
            files.entry(from_file.clone()).or_default().insert(to_file, why);
        }
    }
    (files, top)
}

/// Every import cycle of the crate rooted at `root_file`, described; empty when there is none.
pub fn import_cycles(root_file: &Path, read: ReadSource<'_>) -> Result<Vec<String>, String> {
    let tree = crate_tree::load(root_file, read)?;
    let (files, top) = graphs(&tree);
    let file_cycles = components(&files).into_iter().map(|c| describe(&files, &c, "file-level"));
    let top_cycles = components(&top).into_iter().map(|c| describe(&top, &c, "top-level module"));
    Ok(file_cycles.chain(top_cycles).collect())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;

    /// The cycles of an in-memory crate whose root is `lib.rs`.
    fn cycles_of(files: &[(&str, &str)]) -> Vec<String> {
        let files: BTreeMap<PathBuf, String> =
            files.iter().map(|(name, text)| (Path::new("/src").join(name), text.to_string())).collect();
        let read = |path: &Path| files.get(path).cloned();
        import_cycles(Path::new("/src/lib.rs"), &read).expect("the crate loads")
    }

    #[test]
    fn a_cycle_between_two_files_is_named_with_its_references() {
        let cycles = cycles_of(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            ("b.rs", "pub struct B;\npub fn f() -> super::a::A { super::a::A }\n"),
        ]);
        assert_eq!(cycles.len(), 2, "{cycles:#?}");
        assert!(cycles[0].starts_with("file-level import cycle: a.rs -> b.rs -> a.rs\n"), "{}", cycles[0]);
        assert!(cycles[0].contains("    a.rs -> b.rs: a.rs:1 crate::b::B\n"), "{}", cycles[0]);
        assert!(cycles[0].contains("    b.rs -> a.rs: b.rs:2 super::a::A\n"), "{}", cycles[0]);
        assert!(cycles[1].starts_with("top-level module import cycle: a -> b -> a\n"), "{}", cycles[1]);
    }

    #[test]
    fn edges_into_own_children_tests_comments_and_strings_make_no_cycle() {
        let cycles = cycles_of(&[
            ("lib.rs", "mod a;\nmod b;\npub use a::A;\npub struct Root;\n#[cfg(test)]\nmod absent_tests;\n"),
            ("a.rs", "use crate::Root;\nuse crate::b::B;\npub struct A;\n"),
            (
                "b.rs",
                "// use crate::a::A;\nconst S: &str = \"crate::a::A\";\n#[cfg(test)]\nuse crate::a::A;\n\
                 #[cfg(test)]\nmod tests { use crate::a::A; }\npub struct B;\n",
            ),
        ]);
        assert!(cycles.is_empty(), "{cycles:#?}");
    }

    #[test]
    fn re_exports_through_mod_rs_lead_to_the_defining_file() {
        for reexport in ["pub use inner::Thing;", "pub use self::inner::*;"] {
            let cycles = cycles_of(&[
                ("lib.rs", "mod m;\nmod x;\n"),
                ("m/mod.rs", &format!("mod inner;\n{reexport}\n")),
                ("m/inner.rs", "use crate::x::X;\npub struct Thing;\n"),
                ("x.rs", "use crate::m::Thing;\npub struct X;\n"),
            ]);
            assert!(
                cycles
                    .first()
                    .is_some_and(|c| c.starts_with("file-level import cycle: m/inner.rs -> x.rs -> m/inner.rs")),
                "{reexport}: {cycles:#?}"
            );
        }
    }

    #[test]
    fn top_level_cycles_are_found_where_files_do_not_cycle() {
        let cycles = cycles_of(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a/mod.rs", "mod x;\nmod z;\n"),
            ("a/x.rs", "use crate::b::Y;\n"),
            ("a/z.rs", "pub struct Z;\n"),
            ("b/mod.rs", "mod y;\npub use y::Y;\n"),
            ("b/y.rs", "use crate::a::z::Z;\npub struct Y;\n"),
        ]);
        assert_eq!(cycles.len(), 1, "{cycles:#?}");
        assert!(cycles[0].starts_with("top-level module import cycle: a -> b -> a\n"), "{}", cycles[0]);
    }

    #[test]
    fn a_missing_module_file_is_an_error() {
        let files: BTreeMap<PathBuf, String> = [(PathBuf::from("/src/lib.rs"), "mod gone;".to_string())].into();
        let read = |path: &Path| files.get(path).cloned();
        let error = import_cycles(Path::new("/src/lib.rs"), &read).expect_err("gone.rs is missing");
        assert!(error.contains("/src/gone/mod.rs"), "{error}");
    }
}
