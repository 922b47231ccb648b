//! The root filesystem the router needs and nothing else: the binary at `/usr/local/bin/router`, every shared
//! object `ldd` lists for it (at the same paths, the dynamic loader included), and the /etc files glibc and
//! the router read: `passwd`/`group` (the non-root user 65532 the image runs as), `nsswitch.conf` and `hosts`
//! (name lookups: files, then DNS), an empty `resolv.conf` for the runtime to replace, and `/tmp`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// Where the binary lives in the image (the Containerfile's ENTRYPOINT).
pub const BINARY_PATH: &str = "/usr/local/bin/router";

/// The /etc files, with their contents.
const ETC_FILES: &[(&str, &str)] = &[
    ("etc/passwd", "root:x:0:0:root:/root:/sbin/nologin\nrouter:x:65532:65532:router:/nonexistent:/sbin/nologin\n"),
    ("etc/group", "root:x:0:\nrouter:x:65532:\n"),
    ("etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n"),
    ("etc/hosts", "127.0.0.1 localhost\n::1 localhost\n"),
    ("etc/resolv.conf", ""),
];

/// Builds the tree under `out` (emptied first) from `binary`; returns the paths written, relative to `out`.
pub fn assemble(binary: &Path, out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if out.exists() {
        fs::remove_dir_all(out).with_context(|| format!("removing the old {}", out.display()))?;
    }
    let mut written = Vec::new();
    let target = out.join(BINARY_PATH.trim_start_matches('/'));
    copy(binary, &target)?;
    written.push(PathBuf::from(BINARY_PATH));
    for library in shared_objects(binary)? {
        let relative = library.strip_prefix("/").unwrap_or(&library).to_path_buf();
        // Follow symlinks: the image holds the file under the name the loader asks for.
        copy(&library, &out.join(&relative))?;
        written.push(library);
    }
    for (path, contents) in ETC_FILES {
        let file = out.join(path);
        create_parent(&file)?;
        fs::write(&file, contents).with_context(|| format!("writing {}", file.display()))?;
        written.push(PathBuf::from("/").join(path));
    }
    let tmp = out.join("tmp");
    fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    set_mode(&tmp, 0o1777)?;
    Ok(written)
}

/// The absolute paths `ldd` prints for `binary` (`name => /path (addr)` and the loader's `/path (addr)`).
pub fn shared_objects(binary: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let output = Command::new("ldd").arg(binary).output().context("running ldd")?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        // A static binary: ldd says so and fails; nothing to copy.
        if text.contains("not a dynamic executable")
            || String::from_utf8_lossy(&output.stderr).contains("not a dynamic")
        {
            return Ok(Vec::new());
        }
        bail!("ldd {} failed: {}", binary.display(), String::from_utf8_lossy(&output.stderr));
    }
    let mut objects = Vec::new();
    for line in text.lines() {
        if line.contains("not found") {
            bail!("ldd: a library of {} is missing: {}", binary.display(), line.trim());
        }
        let path = match line.split_once("=>") {
            Some((_, right)) => right.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(path) = path.filter(|path| path.starts_with('/')) {
            objects.push(PathBuf::from(path));
        }
    }
    Ok(objects)
}

fn copy(from: &Path, to: &Path) -> anyhow::Result<()> {
    create_parent(to)?;
    fs::copy(from, to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

fn create_parent(path: &Path) -> anyhow::Result<()> {
    let parent = path.parent().context("a file path has a parent")?;
    fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))
}

fn set_mode(path: &Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).with_context(|| format!("chmod {}", path.display()))
}
