//! `ManifestSource`: a per-file last-good cache of parsed manifests, merged into one update.
//!
//! Rules: a file's objects are replaced only by a parse of that file without errors, so one bad
//! edit never takes routes away (a file that has never parsed cleanly contributes whatever did
//! parse, so one bad document at start doesn't hide the rest). A file is re-parsed only when its
//! bytes change. A deleted file drops its objects; a directory that cannot be listed (or a missing
//! root) keeps what was known under it. The same object in two files: the later file in path order
//! wins, with a warning. Ingresses and Gateway API routes become routes after the merge
//! (`model::add_ingress_routes`, `model::add_gateway_routes`), as in the Kubernetes source.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::ErrorKind;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::error::ManifestError;
use super::parse::{self, Parsed};
use super::tree;
use crate::model::{add_gateway_routes, add_ingress_routes, Objects, Snapshot};
use crate::source::SourceUpdate;

/// Reads Kubernetes manifests from a file or a directory tree; see the module docs for the caching
/// rules.
#[derive(Debug)]
pub struct ManifestSource {
    root: PathBuf,
    files: BTreeMap<PathBuf, FileState>,
    listing_errors: Vec<ManifestError>,
    duplicates: BTreeSet<Duplicate>,
    loaded: bool,
    /// `ROUTER_GATEWAY_CLASS`: Gateways of this class are served (none when empty).
    gateway_class: String,
}

/// The result of one pass, and whether anything that feeds it changed since the previous pass.
#[derive(Debug)]
pub(super) struct Pass {
    pub update: SourceUpdate,
    pub changed: bool,
}

#[derive(Debug, Default)]
struct FileState {
    /// Hash and length of the bytes last parsed; `None` after a failed read, so the next read
    /// re-parses.
    digest: Option<(u64, usize)>,
    /// The objects this file contributes (its last good parse).
    objects: Snapshot,
    /// Whether `objects` came from a parse without errors.
    clean: bool,
    /// The file's errors as it stands now.
    errors: Vec<ManifestError>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Duplicate {
    kind: &'static str,
    key: String,
    first: PathBuf,
    winner: PathBuf,
}

impl ManifestSource {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            root: path.into(),
            files: BTreeMap::new(),
            listing_errors: Vec::new(),
            duplicates: BTreeSet::new(),
            loaded: false,
            gateway_class: String::new(),
        }
    }

    /// Serves Gateways of `class` and the routes attached to them (none when empty, the default).
    pub fn with_gateway_class(mut self, class: impl Into<String>) -> Self {
        self.gateway_class = class.into();
        self
    }

    /// The `--manifests` path: a file or a directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Re-reads every file (parsing only those whose bytes changed) and returns the whole state
    /// plus the errors of every file that is currently broken. Each error is logged once, when it
    /// first appears.
    pub fn reload(&mut self) -> SourceUpdate {
        self.pass().update
    }

    pub(super) fn pass(&mut self) -> Pass {
        let listing = tree::list(&self.root);
        let mut changed = !self.loaded;
        self.loaded = true;
        if listing.errors != self.listing_errors {
            log_new(&self.listing_errors, &listing.errors);
            self.listing_errors.clone_from(&listing.errors);
            changed = true;
        }
        let before = self.files.len();
        self.files.retain(|path, _| {
            let keep = listing.files.binary_search(path).is_ok() || listing.is_unknown(path);
            if !keep {
                tracing::debug!(path = %path.display(), "manifest file gone; dropping its objects");
            }
            keep
        });
        changed |= before != self.files.len();
        for path in &listing.files {
            changed |= self.refresh(path);
        }
        self.finish(changed)
    }

    /// Re-reads only `paths` (from filesystem events under a directory root), as `pass` would see them, and
    /// records their new stat in `seen` before reading. `None` when only a full `pass` can tell what changed
    /// (a directory, a file root, a known file's directory gone) or before the first `pass`.
    pub(super) fn pass_paths(&mut self, paths: &BTreeSet<PathBuf>, seen: &mut tree::Fingerprint) -> Option<Pass> {
        if !self.loaded || !self.root.is_dir() {
            return None;
        }
        let mut files = Vec::new();
        for path in paths {
            let known = |p: &Path| self.files.contains_key(p);
            let known_under = |p: &Path| {
                let mut after = self.files.range::<Path, _>((Bound::Included(p), Bound::Unbounded));
                after.next().is_some_and(|(file, _)| file.starts_with(p))
            };
            match tree::classify(&self.root, path, known, known_under) {
                tree::Touched::Manifest => files.push(path.clone()),
                tree::Touched::Ignored => {}
                tree::Touched::Rescan => return None,
            }
        }
        tree::refingerprint(seen, &files);
        let mut changed = false;
        for path in &files {
            changed |= self.refresh(path);
        }
        if !changed {
            // Nothing to send (the watch sends only changes): skip the merge.
            return Some(Pass { update: SourceUpdate::default(), changed });
        }
        Some(self.finish(changed))
    }

    /// Merges the files into the update; logs duplicates that are new.
    fn finish(&mut self, changed: bool) -> Pass {
        let started = Instant::now();
        let (mut snapshot, duplicates) = merge(&self.files);
        add_ingress_routes(&mut snapshot);
        add_gateway_routes(&mut snapshot, &self.gateway_class);
        let merge_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(files = self.files.len(), routes = snapshot.routes.len(), merge_ms, "manifests merged");
        for dup in duplicates.difference(&self.duplicates) {
            let (first, winner) = (dup.first.display(), dup.winner.display());
            tracing::warn!(
                kind = dup.kind, object = %dup.key, %first, %winner,
                "object defined in two manifest files; the later file wins"
            );
        }
        self.duplicates = duplicates;
        let errors = self.listing_errors.iter().chain(self.files.values().flat_map(|file| &file.errors));
        Pass { update: SourceUpdate { snapshot, errors: errors.cloned().collect() }, changed }
    }

    /// Reads one file and re-parses it if its bytes changed. Returns whether its state changed.
    fn refresh(&mut self, path: &Path) -> bool {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == ErrorKind::NotFound => return self.files.remove(path).is_some(),
            Err(err) => {
                let state = self.files.entry(path.to_path_buf()).or_default();
                return state.read_failed(ManifestError::new(path, None, err.to_string()));
            }
        };
        let mut hasher = DefaultHasher::new();
        bytes.hash(&mut hasher);
        let digest = Some((hasher.finish(), bytes.len()));
        let state = self.files.entry(path.to_path_buf()).or_default();
        if state.digest == digest {
            return false;
        }
        state.digest = digest;
        let started = std::time::Instant::now();
        let parsed = match std::str::from_utf8(&bytes) {
            Ok(text) => parse::parse_file(path, text),
            Err(err) => {
                let line = bytes[..err.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
                let error = ManifestError::new(path, Some(line), format!("not UTF-8 text: {err}"));
                Parsed { objects: Snapshot::default(), errors: vec![error] }
            }
        };
        let took_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(path = %path.display(), errors = parsed.errors.len(), bytes = bytes.len(), took_ms, "manifest file read");
        state.apply(path, parsed);
        true
    }
}

impl FileState {
    fn apply(&mut self, path: &Path, parsed: Parsed) {
        log_new(&self.errors, &parsed.errors);
        if parsed.errors.is_empty() || !self.clean {
            self.clean = parsed.errors.is_empty();
            self.objects = parsed.objects;
        } else {
            let path = path.display();
            tracing::warn!(%path, "keeping the last good objects of this manifest file");
        }
        self.errors = parsed.errors;
    }

    /// The file exists but could not be read: keep its objects, report the error. Returns whether
    /// anything changed.
    fn read_failed(&mut self, error: ManifestError) -> bool {
        self.digest = None;
        let errors = vec![error];
        if self.errors == errors {
            return false;
        }
        log_new(&self.errors, &errors);
        self.errors = errors;
        true
    }
}

/// Logs the errors in `now` that were not in `before`.
fn log_new(before: &[ManifestError], now: &[ManifestError]) {
    now.iter().filter(|error| !before.contains(error)).for_each(ManifestError::log);
}

/// All files' objects in path order (later files override earlier ones), and the overrides that
/// happened. Ingresses are merged as objects; `finish` adds their routes after the merge.
fn merge(files: &BTreeMap<PathBuf, FileState>) -> (Snapshot, BTreeSet<Duplicate>) {
    let mut merged = Snapshot::default();
    let mut dups = BTreeSet::new();
    merge_kind(files, "Route", &mut merged.routes, |o| &o.routes, &mut dups);
    merge_kind(files, "Service", &mut merged.services, |o| &o.services, &mut dups);
    merge_kind(files, "EndpointSlice", &mut merged.endpoint_slices, |o| &o.endpoint_slices, &mut dups);
    merge_kind(files, "Endpoints", &mut merged.endpoints, |o| &o.endpoints, &mut dups);
    merge_kind(files, "Namespace", &mut merged.namespaces, |o| &o.namespaces, &mut dups);
    merge_kind(files, "Secret", &mut merged.secrets, |o| &o.secrets, &mut dups);
    merge_kind(files, "ConfigMap", &mut merged.config_maps, |o| &o.config_maps, &mut dups);
    merge_kind(files, "Ingress", &mut merged.ingresses, |o| &o.ingresses, &mut dups);
    merge_kind(files, "Gateway", &mut merged.gateways, |o| &o.gateways, &mut dups);
    merge_kind(files, "HTTPRoute", &mut merged.http_routes, |o| &o.http_routes, &mut dups);
    merge_kind(files, "TLSRoute", &mut merged.tls_routes, |o| &o.tls_routes, &mut dups);
    (merged, dups)
}

/// One kind's merge. The largest file's objects are taken whole (shared: `Objects` clones by reference, so a
/// change beside one big manifest file costs the change, not the big file); files after it in path order then
/// override it and each other, files before it fill in only what is still missing, latest first. Any key seen
/// twice is looked up in every file, to record each override as (previous holder, next holder) in path order.
fn merge_kind<K: Ord + Clone + Display, T>(
    files: &BTreeMap<PathBuf, FileState>,
    kind: &'static str,
    dst: &mut Objects<K, T>,
    select: impl Fn(&Snapshot) -> &Objects<K, T>,
    dups: &mut BTreeSet<Duplicate>,
) {
    let Some((largest, _)) = files.iter().max_by_key(|(_, file)| select(&file.objects).len()) else { return };
    let mut collided = Vec::new();
    if let Some(file) = files.get(largest) {
        dst.clone_from(select(&file.objects));
    }
    for (_, file) in files.range::<Path, _>((Bound::Excluded(largest.as_path()), Bound::Unbounded)) {
        for (key, object) in select(&file.objects) {
            if dst.insert(key.clone(), object.clone()).is_some() {
                collided.push(key);
            }
        }
    }
    for (_, file) in files.range::<Path, _>((Bound::Unbounded, Bound::Excluded(largest.as_path()))).rev() {
        for (key, object) in select(&file.objects) {
            if dst.contains_key(key) {
                collided.push(key);
            } else {
                dst.insert(key.clone(), object.clone());
            }
        }
    }
    for key in collided {
        let holders: Vec<&PathBuf> =
            files.iter().filter(|(_, file)| select(&file.objects).contains_key(key)).map(|(path, _)| path).collect();
        for pair in holders.windows(2) {
            let (first, winner) = (pair[0].clone(), pair[1].clone());
            dups.insert(Duplicate { kind, key: key.to_string(), first, winner });
        }
    }
}

#[cfg(test)]
mod tests;
