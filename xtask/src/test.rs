//! `cargo xtask test`: every test tier that exists, after the set-up it needs. Unit and in-process tests run
//! as they are; the network-namespace XDP tests need root and the router binary, which is built first; the
//! apiserver tests get etcd and a kube-apiserver (built once, cached) and must run, not skip. Then the
//! benchmark's smoke run (`cargo xtask bench --quick`), and last the fuzz targets, each for a short fixed time
//! (`fuzz::test_step`).
//!
//! The tests run under cargo-nextest where it is installed (it is on the project's machines): each test in its
//! own process, tests of different binaries side by side, with the groups of `.config/nextest.toml` keeping the
//! apiserver and XDP tests to one at a time. Without it, `cargo test` runs them one binary after another.

use std::process::Command;

use crate::cargo::{build_binaries, cargo};
use crate::{aioquic, apiserver, bench, fuzz, setup};

pub fn run() -> anyhow::Result<()> {
    setup::ensure()?;
    aioquic::export_for_tests(&aioquic::ensure()?);
    // The apiserver's first build (minutes of Go, on a fresh machine) runs beside the Rust build, which leaves a
    // core idle for long stretches (one large crate at a time, the eBPF build, links).
    let control_plane = std::thread::spawn(apiserver::ensure);
    let built = build_binaries().and_then(|()| build_tests());
    // Joined even when the Rust build failed, so that no build of ours outlives this command.
    let control_plane = control_plane.join().map_err(|_| anyhow::anyhow!("the apiserver set-up panicked"))?;
    built?;
    control_plane?.export_for_tests();
    run_tests()?;
    // The benchmark's smoke run (one scenario, 2 s per contender, the debug router built above): keeps
    // `cargo xtask bench` from rotting.
    bench::run(&bench::BenchArgs {
        quick: true,
        runs: 1,
        generate: None,
        routes: 10,
        only: Vec::new(),
        xdp_mode: bench::XdpMode::Skb,
    })?;
    // Every fuzz target for a short fixed time on its seeds (a finding fails the tests with its input's path).
    fuzz::test_step()?;
    println!("all tests passed");
    Ok(())
}

const WORKSPACE: [&str; 3] = ["--workspace", "--exclude", "router-ebpf"];

/// Builds every test binary (what `run_tests` runs, with the same profile and features).
fn build_tests() -> anyhow::Result<()> {
    cargo(&[&["test"][..], &WORKSPACE, &["--no-run"]].concat())
}

fn run_tests() -> anyhow::Result<()> {
    if !nextest_installed() {
        println!("test: cargo-nextest is not installed; running the test binaries one after another with cargo test");
        return cargo(&[&["test"][..], &WORKSPACE, &["--no-fail-fast"]].concat());
    }
    cargo(&[&["nextest", "run"][..], &WORKSPACE].concat())?;
    // nextest does not run documentation tests.
    cargo(&[&["test", "--doc"][..], &WORKSPACE].concat())
}

fn nextest_installed() -> bool {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    Command::new(cargo).args(["nextest", "--version"]).output().is_ok_and(|out| out.status.success())
}
