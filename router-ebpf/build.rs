//! Rebuild the eBPF object when the `bpf-linker` on `PATH` changes (the linker is an undeclared
//! build input: rustc runs it for the `bpfel-unknown-none` target). Never fails: when the linker is
//! missing, `router-user/build.rs` explains how to install it.

use std::{env, path::PathBuf};

fn main() {
    println!("cargo:rerun-if-env-changed=PATH");
    let linker = env::var_os("PATH").and_then(|path| {
        env::split_paths(&path).map(|dir| dir.join("bpf-linker")).find(|candidate: &PathBuf| candidate.is_file())
    });
    if let Some(linker) = linker {
        println!("cargo:rerun-if-changed={}", linker.display());
    }
}
