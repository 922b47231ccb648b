//! cargo-fuzz, the libFuzzer driver the fuzz targets build with: installed once with `cargo install` into
//! the dev cache (`/var/cache/router-dev/cargo-fuzz-<version>/`), outside the repository and `CARGO_HOME`,
//! so a fresh clone or a fresh `CARGO_HOME` on the machine does not compile it again (about two minutes).
//! xtask calls the binary by its path; nothing is put on `PATH`.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context as _};

use crate::dev_cache::cache_dir;

const VERSION: &str = "0.13.2";

/// The cached binary, installed first when it is missing or does not answer with its version.
pub fn ensure() -> anyhow::Result<PathBuf> {
    let root = cache_dir().join(format!("cargo-fuzz-{VERSION}"));
    let binary = root.join("bin/cargo-fuzz");
    if answers_version(&binary) {
        println!("setup: ok: cargo-fuzz {VERSION} ({})", binary.display());
        return Ok(binary);
    }
    println!("setup: installing cargo-fuzz {VERSION} into {}", root.display());
    let mut install = Command::new("cargo");
    install
        .args(["install", "cargo-fuzz", "--locked", "--force", "--version", &format!("={VERSION}")])
        .arg("--root")
        .arg(&root)
        // Outside the workspace, and without the outer cargo's compiler overrides.
        .current_dir(std::env::temp_dir());
    crate::cargo_install::without_outer_overrides(&mut install);
    let status = install.status().context("running cargo install cargo-fuzz")?;
    if !status.success() {
        bail!("cargo install cargo-fuzz failed ({status})");
    }
    if !answers_version(&binary) {
        bail!("cargo-fuzz was installed but {} does not report version {VERSION}", binary.display());
    }
    Ok(binary)
}

/// cargo-fuzz reads its subcommand name first, as cargo passes it: `cargo-fuzz fuzz --version`.
fn answers_version(binary: &std::path::Path) -> bool {
    Command::new(binary).args(["fuzz", "--version"]).output().is_ok_and(|out| {
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains(&format!("cargo-fuzz {VERSION}"))
    })
}
