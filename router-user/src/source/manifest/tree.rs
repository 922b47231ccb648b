//! Lists the manifest files under `--manifests PATH` and fingerprints them for the poll fallback.
//!
//! A directory is read recursively for `*.yaml`, `*.yml` and `*.json`, sorted by path. Hidden
//! entries (`.x`, which also skips the `..data` internals of a mounted ConfigMap while following
//! its visible symlinks) and editor leftovers (`x~`, `*.swp`, `#x#`) are skipped. A path that names
//! a file is read whatever its name.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::error::ManifestError;

/// The manifest files found under a root, and the directories that could not be read.
#[derive(Debug, Default)]
pub(super) struct Listing {
    /// Sorted by path.
    pub files: Vec<PathBuf>,
    /// Directories (possibly the root) that could not be listed: what was known under them is kept.
    pub unreadable: Vec<PathBuf>,
    pub errors: Vec<ManifestError>,
}

impl Listing {
    /// Whether `path` lies under a directory that could not be listed this time.
    pub fn is_unknown(&self, path: &Path) -> bool {
        self.unreadable.iter().any(|dir| path.starts_with(dir))
    }
}

/// Lists the manifest files under `root` (or `root` itself when it is a file). Symlinks are
/// followed.
pub(super) fn list(root: &Path) -> Listing {
    let mut listing = Listing::default();
    match fs::metadata(root) {
        Ok(meta) if meta.is_dir() => {
            let mut seen = BTreeSet::new();
            walk(root, &mut seen, &mut listing);
        }
        Ok(_) => listing.files.push(root.to_path_buf()),
        Err(err) => {
            listing.unreadable.push(root.to_path_buf());
            listing.errors.push(ManifestError::new(root, None, err.to_string()));
        }
    }
    listing.files.sort();
    listing
}

fn walk(dir: &Path, seen: &mut BTreeSet<PathBuf>, listing: &mut Listing) {
    // A symlink back up the tree would recurse forever: visit each real directory once.
    if let Ok(real) = fs::canonicalize(dir) {
        if !seen.insert(real) {
            return;
        }
    }
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) => {
            listing.unreadable.push(dir.to_path_buf());
            listing.errors.push(ManifestError::new(dir, None, err.to_string()));
            return;
        }
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_skipped(name) {
            continue;
        }
        let path = entry.path();
        match fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => walk(&path, seen, listing),
            Ok(meta) if meta.is_file() && has_manifest_extension(name) => listing.files.push(path),
            // Dangling symlinks, sockets and the like; a file that vanished since read_dir.
            Ok(_) | Err(_) => {}
        }
    }
}

/// Hidden entries and editor temp/backup files.
fn is_skipped(name: &str) -> bool {
    name.starts_with('.')
        || name.starts_with('#')
        || name.ends_with('~')
        || [".swp", ".swo", ".swx"].iter().any(|ext| name.ends_with(ext))
}

fn has_manifest_extension(name: &str) -> bool {
    let Some((_, ext)) = name.rsplit_once('.') else {
        return false;
    };
    ["yaml", "yml", "json"].iter().any(|known| ext.eq_ignore_ascii_case(known))
}

/// What the poll compares between ticks: every listed file with its modification time and size.
pub(super) type Fingerprint = BTreeMap<PathBuf, (Option<SystemTime>, u64)>;

/// Fingerprints the files under `root` (cheap: a walk and a `stat` per file, no reads).
pub(super) fn fingerprint(root: &Path) -> Fingerprint {
    list(root).files.into_iter().map(|path| (stat(&path), path)).map(|(meta, path)| (path, meta)).collect()
}

/// Brings the entries of `paths` (manifest files, per `classify`) up to date: a file that is gone leaves.
pub(super) fn refingerprint(fingerprint: &mut Fingerprint, paths: &[PathBuf]) {
    for path in paths {
        if path.is_file() {
            fingerprint.insert(path.clone(), stat(path));
        } else {
            fingerprint.remove(path);
        }
    }
}

fn stat(path: &Path) -> (Option<SystemTime>, u64) {
    let meta = fs::metadata(path).ok();
    let modified = meta.as_ref().and_then(|meta| meta.modified().ok());
    (modified, meta.map_or(0, |meta| meta.len()))
}

/// What a path named by a filesystem event means for the files under a directory root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Touched {
    /// A manifest file (as `list` would see it) or a known one that is gone: re-read just this path.
    Manifest,
    /// Not something `list` reports (hidden, editor leftovers, other extensions): nothing to do.
    Ignored,
    /// A directory, the root itself, a path outside the root, or a known file's parent that went away: only
    /// a full listing tells what changed.
    Rescan,
}

/// Classifies `path` (from an event under the directory `root`); `known` tells whether the store holds the
/// file at a path, `known_under` whether it holds files under a path.
pub(super) fn classify(
    root: &Path,
    path: &Path,
    known: impl Fn(&Path) -> bool,
    known_under: impl Fn(&Path) -> bool,
) -> Touched {
    let Ok(relative) = path.strip_prefix(root) else { return Touched::Rescan };
    let meta = fs::metadata(path);
    if relative.as_os_str().is_empty() || meta.as_ref().is_ok_and(|meta| meta.is_dir()) {
        // A new or renamed directory (also the `..data` swap of a mounted ConfigMap): its files are unknown.
        return Touched::Rescan;
    }
    let listed = relative.components().all(|part| part.as_os_str().to_str().is_some_and(|part| !is_skipped(part)))
        && relative.file_name().and_then(|name| name.to_str()).is_some_and(has_manifest_extension);
    match meta {
        Ok(meta) if meta.is_file() && listed => Touched::Manifest,
        // Gone, or no longer a regular file: drop what it contributed.
        _ if known(path) => Touched::Manifest,
        Err(_) if known_under(path) => Touched::Rescan,
        _ => Touched::Ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_manifests_recursively_sorted_and_skips_junk() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for name in ["b.yaml", "a.yml", "c.JSON", "notes.txt", ".hidden.yaml", "x.yaml~", ".x.yaml.swp", "y.swp"] {
            fs::write(root.join(name), "").expect("write");
        }
        fs::create_dir_all(root.join("sub/deeper")).expect("mkdir");
        fs::create_dir_all(root.join(".git")).expect("mkdir");
        fs::write(root.join("sub/deeper/z.yaml"), "").expect("write");
        fs::write(root.join(".git/config.yaml"), "").expect("write");
        let listing = list(root);
        let names: Vec<_> = listing.files.iter().map(|p| p.strip_prefix(root).expect("under root")).collect();
        let expect = ["a.yml", "b.yaml", "c.JSON", "sub/deeper/z.yaml"];
        assert_eq!(names, expect.iter().map(Path::new).collect::<Vec<_>>());
        assert!(listing.errors.is_empty());
    }

    #[test]
    fn a_file_root_is_read_whatever_its_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("routes.txt");
        fs::write(&file, "").expect("write");
        assert_eq!(list(&file).files, vec![file]);
    }

    #[test]
    fn a_missing_root_is_an_error_and_unknown() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("nope");
        let listing = list(&missing);
        assert!(listing.files.is_empty());
        assert_eq!(listing.errors.len(), 1);
        assert_eq!(listing.errors[0].line, None);
        assert!(listing.is_unknown(&missing.join("a.yaml")));
    }

    #[test]
    fn fingerprint_changes_with_size() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("a.yaml");
        fs::write(&file, "a: 1\n").expect("write");
        let before = fingerprint(dir.path());
        fs::write(&file, "a: 12\n").expect("write");
        assert_ne!(before, fingerprint(dir.path()));
    }
}
