//! Name resolution for the import graph: each `use` and path reference of a module resolved to the module where
//! the named thing lives, following `crate::`, `super::`, `self::`, child modules, and re-exports (`use` items,
//! public or not, since a child may name its parent's imports, and glob re-exports). Paths into other crates
//! resolve to nothing. Edges join the files of the two modules; a module's edges into its own descendants, and
//! edges within one file, are left out.

use std::collections::BTreeMap;

use super::crate_tree::{CrateTree, ModPath};
use super::syntax::Binding;

/// How deep re-exports are followed before giving up (a re-export loop).
const MAX_DEPTH: u32 = 24;

/// What a name resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Found {
    /// A module itself.
    Module(ModPath),
    /// An item defined in (or unknown but named in) this module.
    Item(ModPath),
}

impl Found {
    fn module(&self) -> &ModPath {
        match self {
            Found::Module(path) | Found::Item(path) => path,
        }
    }
}

/// One reference that makes an edge: where it is written and what it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evidence {
    pub line: usize,
    pub path: String,
}

/// File-module -> file-module -> the first reference making that edge.
pub type FileEdges = BTreeMap<ModPath, BTreeMap<ModPath, Evidence>>;

/// Every module's references, resolved and joined per file.
pub fn file_edges(tree: &CrateTree) -> FileEdges {
    let resolver = Resolver { tree };
    let mut edges: FileEdges = tree.modules.values().map(|m| (m.file_module.clone(), BTreeMap::new())).collect();
    for (path, module) in &tree.modules {
        let uses = module.uses.iter().map(|u| (&u.path, u.line));
        let references = module.references.iter().map(|r| (&r.segments, r.line));
        for (segments, line) in uses.chain(references) {
            let Some(found) = resolver.resolve(path, segments, 0) else { continue };
            let from = &module.file_module;
            let Some(to) = tree.modules.get(found.module()).map(|m| &m.file_module) else { continue };
            if to == from || to.starts_with(from) {
                continue;
            }
            edges
                .entry(from.clone())
                .or_default()
                .entry(to.clone())
                .or_insert_with(|| Evidence { line, path: segments.join("::") });
        }
    }
    edges
}

struct Resolver<'a> {
    tree: &'a CrateTree,
}

impl Resolver<'_> {
    fn is_module(&self, path: &ModPath) -> bool {
        self.tree.modules.contains_key(path)
    }

    fn child(&self, module: &ModPath, name: &str) -> Option<ModPath> {
        let child: ModPath = module.iter().cloned().chain([name.to_string()]).collect();
        self.is_module(&child).then_some(child)
    }

    /// `segments` as written in `from`: the module it names or the module of the item it names; none for other
    /// crates and unknown first names.
    fn resolve(&self, from: &ModPath, segments: &[String], depth: u32) -> Option<Found> {
        if depth > MAX_DEPTH {
            return None;
        }
        let (first, rest) = segments.split_first()?;
        let mut found = match first.as_str() {
            "crate" => Found::Module(Vec::new()),
            "self" => Found::Module(from.clone()),
            "super" => Found::Module(from[..from.len().checked_sub(1)?].to_vec()),
            name => self.lookup(from, name, depth + 1)?,
        };
        for segment in rest {
            let Found::Module(module) = &found else { break };
            if segment == "super" && first == "super" {
                found = Found::Module(module[..module.len().checked_sub(1)?].to_vec());
                continue;
            }
            found = self.lookup(module, segment, depth + 1).unwrap_or_else(|| Found::Item(module.clone()));
        }
        Some(found)
    }

    /// `name` in `module`'s namespace: a child module, an item it defines, a name it imports, or a name one of its
    /// glob imports brings.
    fn lookup(&self, module: &ModPath, name: &str, depth: u32) -> Option<Found> {
        if depth > MAX_DEPTH {
            return None;
        }
        if let Some(child) = self.child(module, name) {
            return Some(Found::Module(child));
        }
        let entry = self.tree.modules.get(module)?;
        if entry.defined.contains(name) {
            return Some(Found::Item(module.clone()));
        }
        if let Some(import) = entry.uses.iter().find(|u| u.binding == Binding::Name(name.to_string())) {
            return self.resolve(module, &import.path, depth + 1);
        }
        entry
            .uses
            .iter()
            .filter(|u| u.binding == Binding::Glob)
            .filter_map(|glob| match self.resolve(module, &glob.path, depth + 1) {
                Some(Found::Module(target)) if target != *module => Some(target),
                _ => None,
            })
            .find_map(|target| self.lookup(&target, name, depth + 1))
    }
}
