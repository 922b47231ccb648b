//! `cargo xtask test`: every test tier that exists, after the set-up it needs. Unit and in-process tests run
//! as they are; the network-namespace XDP tests need root and the router binary, which is built first; the
//! apiserver tests get etcd and a kube-apiserver (built once, cached) and must run, not skip. Last, the
//! benchmark's smoke run (`cargo xtask bench --quick`).

use crate::cargo::{build_binaries, cargo};
use crate::{apiserver, bench, setup};

pub fn run() -> anyhow::Result<()> {
    setup::ensure()?;
    apiserver::ensure()?.export_for_tests();
    build_binaries()?;
    cargo(&["test", "--workspace", "--exclude", "router-ebpf", "--no-fail-fast"])?;
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
    println!("all tests passed");
    Ok(())
}
