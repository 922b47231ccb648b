//! Building the fuzz targets with cargo-fuzz, into a target dir outside the repository: by default
//! `/var/cache/router-dev/fuzz-target` (`ROUTER_FUZZ_TARGET_DIR` moves it), like the apiserver, so that a fresh
//! clone on the machine (CI's) reuses the compiled dependencies and rebuilds only the workspace's crates.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context as _};

use super::prune::keep_newest_workspace_copies;
use crate::cargo::workspace_root;
use crate::dev_cache::cache_dir;

/// Where cargo-fuzz puts the targets under the target dir (its default host triple, the dev profile).
const BIN_SUBDIR: &str = "x86_64-unknown-linux-gnu/debug";
/// The build's flags. `--dev`: the profile `fuzz/Cargo.toml` tunes (optimised, quick to rebuild), with debug
/// assertions and overflow checks. No sanitizer: the parsers are safe Rust, whose memory errors are panics
/// already, and AddressSanitizer would slow both the build and every execution.
const BUILD_FLAGS: [&str; 3] = ["--dev", "--sanitizer", "none"];
/// A backstop to `prune`: past this size the shared target dir is removed and built afresh.
const TARGET_DIR_LIMIT_BYTES: u64 = 12 << 30;

/// `ROUTER_FUZZ_TARGET_DIR`, else `fuzz-target` in the dev cache.
pub fn target_dir() -> PathBuf {
    std::env::var_os("ROUTER_FUZZ_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| cache_dir().join("fuzz-target"))
}

/// Where the built targets are.
pub fn bin_dir() -> PathBuf {
    target_dir().join(BIN_SUBDIR)
}

/// cargo-fuzz run with the nightly toolchain, from the workspace root, without what cargo set for xtask.
fn cargo_fuzz_command(cargo_fuzz: &Path) -> Command {
    let mut cmd = Command::new(cargo_fuzz);
    cmd.arg("fuzz").current_dir(workspace_root()).env("RUSTUP_TOOLCHAIN", "nightly");
    // `cargo xtask` gives this process CARGO, CARGO_MANIFEST_DIR, CARGO_PKG_*, ...: cargo-fuzz would run that
    // (stable) cargo, and build scripts watching such variables would rerun whenever they differ from a build
    // by hand. The compiler overrides would replace cargo-fuzz's own flags.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_by_cargo = name.starts_with("CARGO") && name != "CARGO_HOME";
        let overrides = ["RUSTC", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTDOC", "RUSTFLAGS"].contains(&&*name);
        if set_by_cargo || overrides {
            cmd.env_remove(name.as_ref());
        }
    }
    cmd
}

/// The targets cargo-fuzz finds in `fuzz/Cargo.toml`.
pub fn list_targets(cargo_fuzz: &Path) -> anyhow::Result<Vec<String>> {
    let out =
        cargo_fuzz_command(cargo_fuzz).args(["list", "--fuzz-dir", "fuzz"]).output().context("cargo fuzz list")?;
    if !out.status.success() {
        bail!("cargo fuzz list failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    let targets: Vec<String> = String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_owned).collect();
    if targets.is_empty() {
        bail!("cargo fuzz list found no target in fuzz/Cargo.toml");
    }
    Ok(targets)
}

/// Builds every target once. The router's eBPF objects are left out (`AYA_BUILD_SKIP`, see
/// `router-user/build.rs`): no target loads them.
pub fn build(cargo_fuzz: &Path, targets: &[String]) -> anyhow::Result<()> {
    let started = Instant::now();
    let target_dir = target_dir();
    limit_size(&target_dir)?;
    let mut cmd = cargo_fuzz_command(cargo_fuzz);
    cmd.arg("build").args(BUILD_FLAGS).args(["--fuzz-dir", "fuzz", "--target-dir"]).arg(&target_dir);
    cmd.env("AYA_BUILD_SKIP", "1");
    println!(
        "+ cargo +nightly fuzz build {} --fuzz-dir fuzz --target-dir {} (AYA_BUILD_SKIP=1)",
        BUILD_FLAGS.join(" "),
        target_dir.display()
    );
    let status = cmd.status().context("running cargo fuzz build")?;
    if !status.success() {
        bail!("cargo fuzz build failed ({status})");
    }
    println!("fuzz: targets built in {:.0} s", started.elapsed().as_secs_f64());
    keep_newest_workspace_copies(&target_dir, targets);
    Ok(())
}

/// Removes the target dir when it has grown past [`TARGET_DIR_LIMIT_BYTES`].
fn limit_size(dir: &Path) -> anyhow::Result<()> {
    let size = disk_usage(dir);
    if size <= TARGET_DIR_LIMIT_BYTES {
        return Ok(());
    }
    println!("fuzz: {} holds {} MiB (earlier clones' builds): removing it, building afresh", dir.display(), size >> 20);
    fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))
}

/// Bytes of the regular files under `path` (0 when it does not exist); symlinks are not followed.
fn disk_usage(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else { return 0 };
    if !meta.is_dir() {
        return meta.len();
    }
    fs::read_dir(path).map_or(0, |entries| entries.flatten().map(|entry| disk_usage(&entry.path())).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_usage_sums_files_below_a_directory() {
        let dir = std::env::temp_dir().join(format!("xtask-fuzz-du-{}", std::process::id()));
        fs::create_dir_all(dir.join("a/b")).expect("dirs");
        fs::write(dir.join("one"), [0u8; 100]).expect("file");
        fs::write(dir.join("a/b/two"), [0u8; 23]).expect("file");
        assert_eq!(disk_usage(&dir), 123);
        assert_eq!(disk_usage(&dir.join("missing")), 0);
        fs::remove_dir_all(&dir).expect("clean up");
    }
}
