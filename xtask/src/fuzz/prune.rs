//! Keeping the shared target dir from growing with every clone. Cargo keys a path crate's artifacts by its
//! path, so each checkout (each CI clone) builds its own copy of the workspace's crates and the fuzz targets
//! beside the others' (about 1.5 GB with the incremental state). After a build, only the newest copy of each is
//! kept: that build's. A checkout whose copy was removed rebuilds it next time, as a fresh clone would.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

/// The directories of a target dir where cargo keeps per-crate artifacts, for the host (build scripts) and
/// the fuzz targets' triple.
const ARTIFACT_DIRS: [&str; 8] = [
    "debug/deps",
    "debug/build",
    "debug/.fingerprint",
    "debug/incremental",
    "x86_64-unknown-linux-gnu/debug/deps",
    "x86_64-unknown-linux-gnu/debug/build",
    "x86_64-unknown-linux-gnu/debug/.fingerprint",
    "x86_64-unknown-linux-gnu/debug/incremental",
];

/// Removes every copy but the newest of the workspace's crates (names starting with `router`, with or without
/// `lib`) and of the fuzz targets.
pub fn keep_newest_workspace_copies(target_dir: &Path, targets: &[String]) {
    let ours = |stem: &str| {
        let stem = stem.strip_prefix("lib").unwrap_or(stem);
        stem.starts_with("router") || targets.iter().any(|target| target == stem)
    };
    for dir in ARTIFACT_DIRS {
        let dir = target_dir.join(dir);
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        // (stem, hash) -> newest modification among its entries.
        let mut copies: HashMap<(String, String), SystemTime> = HashMap::new();
        let mut entries_of: Vec<(String, String, std::path::PathBuf)> = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some((stem, hash)) = stem_and_hash(&name) else { continue };
            if !ours(stem) {
                continue;
            }
            let modified = entry.metadata().and_then(|meta| meta.modified()).unwrap_or(SystemTime::UNIX_EPOCH);
            let newest = copies.entry((stem.to_owned(), hash.to_owned())).or_insert(modified);
            *newest = (*newest).max(modified);
            entries_of.push((stem.to_owned(), hash.to_owned(), entry.path()));
        }
        let mut newest_hash: HashMap<&str, (&str, SystemTime)> = HashMap::new();
        for ((stem, hash), modified) in &copies {
            let best = newest_hash.entry(stem).or_insert((hash, *modified));
            if *modified > best.1 {
                *best = (hash, *modified);
            }
        }
        for (stem, hash, path) in &entries_of {
            if newest_hash.get(stem.as_str()).is_some_and(|(newest, _)| newest != hash) {
                let _ = if path.is_dir() { fs::remove_dir_all(path) } else { fs::remove_file(path) };
            }
        }
    }
}

/// `librouter-436865033b36ffa0.rlib` -> (`librouter`, `436865033b36ffa0`); `router-0ripd8f0ardnk` (incremental)
/// -> (`router`, `0ripd8f0ardnk`). Names without a `-hash` part give `None`.
fn stem_and_hash(name: &str) -> Option<(&str, &str)> {
    let base = name.split('.').next()?;
    let (stem, hash) = base.rsplit_once('-')?;
    let hashlike = hash.len() >= 12 && hash.bytes().all(|b| b.is_ascii_alphanumeric() && !b.is_ascii_uppercase());
    hashlike.then_some((stem, hash))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn artifact_names_split_into_stem_and_hash() {
        assert_eq!(stem_and_hash("librouter-436865033b36ffa0.rlib"), Some(("librouter", "436865033b36ffa0")));
        assert_eq!(stem_and_hash("router-user-fb44be6b334a14d0"), Some(("router-user", "fb44be6b334a14d0")));
        assert_eq!(stem_and_hash("router-0ripd8f0ardnk"), Some(("router", "0ripd8f0ardnk")));
        assert_eq!(stem_and_hash("manifest.d"), None);
        assert_eq!(stem_and_hash("router-user"), None);
    }

    #[test]
    fn only_the_newest_copy_of_a_workspace_crate_stays() {
        let root = std::env::temp_dir().join(format!("xtask-fuzz-prune-{}", std::process::id()));
        let deps = root.join("x86_64-unknown-linux-gnu/debug/deps");
        fs::create_dir_all(&deps).expect("dirs");
        let old = SystemTime::now() - Duration::from_secs(3600);
        for name in ["librouter-aaaaaaaaaaaaaaaa.rlib", "manifest-aaaaaaaaaaaaaaaa", "libserde-aaaaaaaaaaaaaaaa.rlib"] {
            let file = fs::File::create(deps.join(name)).expect("file");
            file.set_modified(old).expect("mtime");
        }
        for name in ["librouter-bbbbbbbbbbbbbbbb.rlib", "librouter-bbbbbbbbbbbbbbbb.rmeta", "manifest-bbbbbbbbbbbbbbbb"]
        {
            fs::write(deps.join(name), b"").expect("file");
        }
        fs::write(deps.join("libserde-cccccccccccccccc.rlib"), b"").expect("file");
        keep_newest_workspace_copies(&root, &["manifest".to_owned()]);
        let mut left: Vec<String> = fs::read_dir(&deps)
            .expect("deps")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "librouter-bbbbbbbbbbbbbbbb.rlib",
                "librouter-bbbbbbbbbbbbbbbb.rmeta",
                "libserde-aaaaaaaaaaaaaaaa.rlib",
                "libserde-cccccccccccccccc.rlib",
                "manifest-bbbbbbbbbbbbbbbb"
            ]
        );
        fs::remove_dir_all(&root).expect("clean up");
    }
}
