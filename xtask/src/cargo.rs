//! Running cargo and other commands from xtask, with the workspace root as the working directory.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context};

/// The workspace root (xtask lives one level below it).
pub fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().map(PathBuf::from).unwrap_or(manifest_dir)
}

/// The directory cargo puts debug binaries in.
pub fn debug_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
        .join("debug")
}

/// `cargo <args>` in the workspace root; fails when cargo fails.
pub fn cargo(args: &[&str]) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    println!("+ cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .current_dir(workspace_root())
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Builds the router and the test backend (debug profile, shared with the tests). tests/src/binaries.rs builds
/// them with the same command: the same package set gives the same dependency features, so nothing is built twice.
pub fn build_binaries() -> anyhow::Result<()> {
    cargo(&[
        "build",
        "--package",
        "router-user",
        "--bin",
        "router",
        "--package",
        "test-backend",
        "--bin",
        "test-backend",
    ])
}
