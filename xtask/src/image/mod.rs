//! `cargo xtask image`: the router's minimal root filesystem, assembled without a container engine: the
//! release binary, the shared objects `ldd` names for it, and the few /etc files it reads (`rootfs`). The
//! Containerfile builds the same tree in its build stage and copies it onto `scratch`, so what the test runs
//! from this tree (`tests`) is what the image holds. No OCI layout is written: no maintained crate makes one
//! without adding tar, gzip and digest dependencies to xtask; `podman build -f Containerfile .` makes the image.

mod rootfs;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::cargo::{cargo, workspace_root};

pub use rootfs::{assemble, BINARY_PATH};

#[derive(Args, Debug)]
pub struct ImageArgs {
    /// Where to assemble the root filesystem (replaced if it exists).
    #[arg(long, default_value = "target/image/rootfs")]
    pub out: PathBuf,
    /// Use this router binary instead of building the release one.
    #[arg(long)]
    pub binary: Option<PathBuf>,
}

pub fn run(args: &ImageArgs) -> anyhow::Result<()> {
    let binary = match &args.binary {
        Some(binary) => binary.clone(),
        None => {
            cargo(&["build", "--release", "--package", "router-user", "--bin", "router"])?;
            release_dir().join("router")
        }
    };
    let out = if args.out.is_absolute() { args.out.clone() } else { workspace_root().join(&args.out) };
    let files = assemble(&binary, &out).with_context(|| format!("assembling {}", out.display()))?;
    println!("image: {} files in {}; entrypoint {BINARY_PATH}", files.len(), out.display());
    for file in files {
        println!("  {}", file.display());
    }
    Ok(())
}

fn release_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
        .join("release")
}
