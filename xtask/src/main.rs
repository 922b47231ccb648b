//! `cargo xtask <setup|run|test|bench|fuzz|image>`: the project's own set-up, demo and test runner, and the
//! image's root filesystem.

mod aioquic;
mod apiserver;
mod bench;
mod cargo;
mod cargo_fuzz;
mod cargo_install;
mod dev_cache;
mod fuzz;
mod image;
mod packages;
mod run;
mod setup;
mod test;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Project tasks for the router workspace")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install what building and testing need (idempotent): apt packages, rust-src, bpf-linker.
    Setup,
    /// Run the router on the embedded default (deploy/examples/) with demo backends, until Ctrl-C.
    Run,
    /// Run every test tier (unit, in-process integration, network-namespace XDP).
    Test,
    /// Benchmark the router against HAProxy (OpenShift-style config) and a direct connection; results in bench/results/.
    Bench(bench::BenchArgs),
    /// Run the fuzz targets (fuzz/) for a while each, on their seeds; prints executions per target.
    Fuzz(fuzz::FuzzArgs),
    /// Assemble the image's minimal root filesystem (release binary, its shared objects, /etc files) without a
    /// container engine; the Containerfile copies the same tree onto scratch.
    Image(image::ImageArgs),
    /// The bench's hostile clients (slowloris and non-reading connections), started by `bench` beside a load.
    #[command(hide = true)]
    HostileClients(bench::HostileArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Setup => setup::run(),
        Command::Run => run::run(),
        Command::Test => test::run(),
        Command::Bench(args) => {
            setup::ensure()?;
            bench::run(&args)
        }
        Command::Fuzz(args) => fuzz::run(&args),
        Command::HostileClients(args) => bench::run_hostile_clients(&args),
        Command::Image(args) => image::run(&args),
    }
}
