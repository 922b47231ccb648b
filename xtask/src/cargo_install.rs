//! What every `cargo install` run from xtask shares (bpf-linker, cargo-fuzz).

use std::process::Command;

/// Keeps the outer cargo's compiler overrides out of a `cargo install` run from here.
pub fn without_outer_overrides(cmd: &mut Command) {
    for var in [
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }
}
