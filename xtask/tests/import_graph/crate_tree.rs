//! A crate's modules, found the way rustc finds them: from the root file through each `mod name;` (`name.rs` or
//! `name/mod.rs` beside it, or `#[path]`) and each inline `mod name { }`. Modules declared under `#[cfg(test)]`
//! are never loaded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::lexer::tokenize;
use super::syntax::{parse, ModuleSyntax, PathRef, UseItem};

/// A module's path from the crate root (empty for the root).
pub type ModPath = Vec<String>;

pub struct Module {
    /// The file it is written in.
    pub file: PathBuf,
    /// The module owning that file (itself, unless it is an inline module).
    pub file_module: ModPath,
    pub uses: Vec<UseItem>,
    pub defined: BTreeSet<String>,
    pub references: Vec<PathRef>,
}

pub struct CrateTree {
    /// The root file's directory: files are named relative to it.
    pub src: PathBuf,
    pub modules: BTreeMap<ModPath, Module>,
}

impl CrateTree {
    /// A file's name relative to the crate's source directory.
    pub fn file_name(&self, module: &ModPath) -> String {
        let file = self.modules.get(module).map_or_else(PathBuf::new, |m| m.file.clone());
        file.strip_prefix(&self.src).unwrap_or(&file).display().to_string()
    }
}

/// Reads a source file; `None` when it does not exist.
pub type ReadSource<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// Loads every module reachable from `root_file` (`lib.rs` or `main.rs`).
pub fn load(root_file: &Path, read: ReadSource<'_>) -> Result<CrateTree, String> {
    let src = root_file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut tree = CrateTree { src: src.clone(), modules: BTreeMap::new() };
    load_file(&mut tree, read, root_file, Vec::new(), &src)?;
    Ok(tree)
}

/// Loads the module in `file` at `path`, whose `mod name;` children live in `child_dir`.
fn load_file(
    tree: &mut CrateTree,
    read: ReadSource<'_>,
    file: &Path,
    path: ModPath,
    child_dir: &Path,
) -> Result<(), String> {
    let source = read(file).ok_or_else(|| format!("cannot read {}", file.display()))?;
    let syntax = parse(&tokenize(&source));
    if syntax.test_only {
        return Ok(());
    }
    add_module(tree, read, syntax, file, path.clone(), path, child_dir)
}

fn add_module(
    tree: &mut CrateTree,
    read: ReadSource<'_>,
    syntax: ModuleSyntax,
    file: &Path,
    file_module: ModPath,
    path: ModPath,
    child_dir: &Path,
) -> Result<(), String> {
    let ModuleSyntax { children, uses, defined, references, test_only: _ } = syntax;
    tree.modules.insert(
        path.clone(),
        Module { file: file.to_path_buf(), file_module: file_module.clone(), uses, defined, references },
    );
    for child in children {
        let child_path: ModPath = path.iter().cloned().chain([child.name.clone()]).collect();
        let own_dir = child_dir.join(&child.name);
        if let Some(inline) = child.inline {
            add_module(tree, read, inline, file, file_module.clone(), child_path, &own_dir)?;
            continue;
        }
        let (child_file, grandchild_dir) = match &child.path_attribute {
            Some(relative) => {
                let base = file.parent().unwrap_or(Path::new(""));
                let child_file = base.join(relative);
                let dir = child_file.parent().map(Path::to_path_buf).unwrap_or_default();
                (child_file, dir)
            }
            None => {
                let flat = child_dir.join(format!("{}.rs", child.name));
                if read(&flat).is_some() {
                    (flat, own_dir)
                } else {
                    (own_dir.join("mod.rs"), own_dir)
                }
            }
        };
        load_file(tree, read, &child_file, child_path, &grandchild_dir)?;
    }
    Ok(())
}
