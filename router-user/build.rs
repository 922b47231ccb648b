//! Builds the eBPF object (`router-ebpf`, target `bpfel-unknown-none`) with `aya-build` and leaves
//! it at `$OUT_DIR/router-ebpf`, where `src/xdp/object.rs` embeds it.
//!
//! Needs the nightly toolchain with `rust-src` (`-Z build-std=core`) and `bpf-linker` on `PATH`;
//! `cargo xtask setup` installs all three. When one is missing this fails with a message saying so
//! instead of a linker error deep in the nested cargo output.
//!
//! `AYA_BUILD_SKIP=1` (aya-build's own switch) builds no eBPF object and embeds empty ones: the XDP front
//! and the sockmap relay then refuse to load, saying so. The fuzz targets (`fuzz/`) build the library this
//! way, as they never load a program and a fresh fuzz build would otherwise spend a minute on the eBPF build.

use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context as _};

const EBPF_PACKAGE: &str = "router-ebpf";
const TOOLCHAIN: &str = "nightly";
const SETUP_HINT: &str = "run `cargo xtask setup` to install it";
/// The objects aya-build leaves in `OUT_DIR` (the `[[bin]]`s of router-ebpf), which `src/` embeds.
const OBJECTS: [&str; 2] = ["router-ebpf", "router-sockmap"];
const SKIP_VAR: &str = "AYA_BUILD_SKIP";

fn main() -> anyhow::Result<()> {
    println!("cargo:rerun-if-env-changed={SKIP_VAR}");
    if skip_requested() {
        return write_empty_objects();
    }
    check_prerequisites()?;

    let manifest_dir = env::var_os("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR not set")?;
    let ebpf_dir = Path::new(&manifest_dir).join("..").join(EBPF_PACKAGE);
    let ebpf_dir =
        ebpf_dir.canonicalize().with_context(|| format!("eBPF crate not found at {}", ebpf_dir.display()))?;
    let root_dir = ebpf_dir.to_str().with_context(|| format!("eBPF crate path {} is not UTF-8", ebpf_dir.display()))?;

    // The nested build reads the workspace's release profile, whose LTO settings are for the router: with fat
    // LTO the verifier walked 951,259 instructions of `xdp_front` (662,924 without), near its limit of
    // 1,000,000. These variables give the eBPF build cargo's defaults back.
    env::set_var("CARGO_PROFILE_RELEASE_LTO", "false");
    env::set_var("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16");
    aya_build::build_ebpf(
        [aya_build::Package { name: EBPF_PACKAGE, root_dir, ..Default::default() }],
        aya_build::Toolchain::Nightly,
    )
    .context("building the eBPF object (router-ebpf) failed")
}

/// aya-build's own reading of `AYA_BUILD_SKIP`.
fn skip_requested() -> bool {
    env::var(SKIP_VAR).is_ok_and(|value| value == "1" || value.eq_ignore_ascii_case("true"))
}

fn write_empty_objects() -> anyhow::Result<()> {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").context("OUT_DIR not set")?);
    for object in OBJECTS {
        let path = out_dir.join(object);
        std::fs::write(&path, b"").with_context(|| format!("writing {}", path.display()))?;
    }
    println!("cargo:warning={SKIP_VAR} is set: no eBPF object built, the XDP front and sockmap relay cannot load");
    Ok(())
}

/// Checks for what the nested eBPF build needs, so a missing piece gets a clear error.
fn check_prerequisites() -> anyhow::Result<()> {
    println!("cargo:rerun-if-env-changed=PATH");

    let sysroot = Command::new("rustup").args(["run", TOOLCHAIN, "rustc", "--print", "sysroot"]).output();
    let sysroot = match sysroot {
        Ok(output) if output.status.success() => PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()),
        Ok(_) => bail!("the `{TOOLCHAIN}` Rust toolchain is missing (it builds the eBPF object); {SETUP_HINT}"),
        Err(err) => {
            bail!("cannot run `rustup` ({err}); the eBPF object needs rustup's `{TOOLCHAIN}` toolchain; {SETUP_HINT}")
        }
    };
    let core_src = sysroot.join("lib/rustlib/src/rust/library/core");
    if !core_src.is_dir() {
        bail!(
            "the `rust-src` component of the `{TOOLCHAIN}` toolchain is missing ({} not found); {SETUP_HINT}",
            core_src.display()
        );
    }

    match Command::new("bpf-linker").arg("--version").output() {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => bail!(
            "`bpf-linker --version` failed ({}): {}; {SETUP_HINT}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ),
        Err(err) => bail!("`bpf-linker` is not runnable from PATH ({err}); {SETUP_HINT}"),
    }
}
