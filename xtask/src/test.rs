//! `cargo xtask test`: every test tier that exists, after the set-up it needs. Unit and in-process tests run
//! as they are; the network-namespace XDP tests need root and the router binary, which is built first.

use crate::cargo::{build_binaries, cargo};
use crate::setup;

pub fn run() -> anyhow::Result<()> {
    setup::ensure()?;
    build_binaries()?;
    cargo(&["test", "--workspace", "--exclude", "router-ebpf", "--no-fail-fast"])?;
    println!("all tests passed");
    Ok(())
}
