//! aioquic, the second, independent HTTP/3 client of `tests/tests/http3.rs` (Python, from PyPI: Debian's curl
//! has no HTTP/3): installed once into a virtual environment in the dev cache
//! (`/var/cache/router-dev/aioquic-<version>/`), outside the repository, with `python3 -m venv` and that
//! environment's pip. The tests find its interpreter through `ROUTER_TEST_AIOQUIC_PYTHON` (set by `cargo xtask
//! test`, which also makes its absence a failure) or at that path.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _};

use crate::dev_cache::cache_dir;

const VERSION: &str = "1.7.2";

/// The venv's interpreter, the venv made first when it is missing or holds another aioquic.
pub fn ensure() -> anyhow::Result<PathBuf> {
    let root = cache_dir().join(format!("aioquic-{VERSION}"));
    let python = root.join("bin/python3");
    if imports_version(&python) {
        println!("setup: ok: aioquic {VERSION} ({})", python.display());
        return Ok(python);
    }
    println!("setup: installing aioquic {VERSION} into {}", root.display());
    // A half-made venv from an interrupted run is made again.
    if root.exists() {
        std::fs::remove_dir_all(&root).with_context(|| format!("removing {}", root.display()))?;
    }
    let status =
        Command::new("python3").arg("-m").arg("venv").arg(&root).status().context("running python3 -m venv")?;
    if !status.success() {
        bail!("python3 -m venv {} failed ({status}); Debian's python3-venv provides it", root.display());
    }
    let status = Command::new(root.join("bin/pip"))
        .args(["install", "--disable-pip-version-check", "--quiet", &format!("aioquic=={VERSION}")])
        .status()
        .context("running the venv's pip")?;
    if !status.success() {
        bail!("pip install aioquic=={VERSION} failed ({status})");
    }
    if !imports_version(&python) {
        bail!("aioquic was installed but {} does not import version {VERSION}", python.display());
    }
    Ok(python)
}

/// Tells the tests where the interpreter is, and that the aioquic test must run, not skip.
pub fn export_for_tests(python: &Path) {
    std::env::set_var("ROUTER_TEST_AIOQUIC_PYTHON", python);
    std::env::set_var("ROUTER_TEST_REQUIRE_AIOQUIC", "1");
}

fn imports_version(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import aioquic; print(aioquic.__version__)"])
        .output()
        .is_ok_and(|out| out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == VERSION)
}
