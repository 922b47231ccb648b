//! `cargo xtask fuzz` and the fuzz step of `cargo xtask test`: the cargo-fuzz targets in `fuzz/`, built once
//! (nightly, libFuzzer; `build`) and each run for a fixed time on its seeds in `fuzz/corpus/<target>/`
//! (`run`), with libFuzzer's output read back for executions and failing inputs (`log`).

mod build;
mod log;
mod prune;
mod run;

use std::time::Instant;

use anyhow::bail;

use crate::setup;
use build::{build, list_targets};
use run::{run_targets, Grown};

/// Seconds each target runs in `cargo xtask test`, two at a time (both cores are free by then): with the
/// build after a change to the router, the step stays within about four minutes (`docs/fuzzing.md`).
const TEST_SECONDS: u64 = 20;
const TEST_JOBS: usize = 2;

#[derive(clap::Args)]
pub struct FuzzArgs {
    /// Seconds each target runs.
    #[arg(long, default_value_t = 600)]
    pub seconds: u64,
    /// Run only this target (repeat for several); default: every target.
    #[arg(long = "target", value_name = "NAME")]
    pub targets: Vec<String>,
    /// Targets run at once.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
}

/// `cargo xtask fuzz`.
pub fn run(args: &FuzzArgs) -> anyhow::Result<()> {
    let cargo_fuzz = setup::ensure_fuzz()?;
    let all = list_targets(&cargo_fuzz)?;
    let targets = if args.targets.is_empty() { all.clone() } else { chosen(&args.targets, &all)? };
    build(&cargo_fuzz, &all)?;
    run_targets(&targets, args.seconds, args.jobs.max(1), Grown::Kept)
}

/// The fuzz step of `cargo xtask test`: every target, briefly.
pub fn test_step() -> anyhow::Result<()> {
    let started = Instant::now();
    let cargo_fuzz = setup::ensure_fuzz()?;
    let targets = list_targets(&cargo_fuzz)?;
    build(&cargo_fuzz, &targets)?;
    run_targets(&targets, TEST_SECONDS, TEST_JOBS, Grown::Discarded)?;
    println!("fuzz: step done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn chosen(wanted: &[String], all: &[String]) -> anyhow::Result<Vec<String>> {
    for name in wanted {
        if !all.contains(name) {
            bail!("no fuzz target {name:?}; the targets are: {}", all.join(", "));
        }
    }
    Ok(wanted.to_vec())
}
