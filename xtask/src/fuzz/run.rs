//! Running the built targets: each on its seeds for a fixed time, a few at a time, from a run directory
//! (`$TMPDIR/router-fuzz-<pid>/`) holding copies of the binaries (the shared target dir may be rebuilt by
//! another checkout meanwhile) and each target's libFuzzer output (`logs/<target>.log`).
//!
//! The seeds are read, never written: libFuzzer adds the inputs it finds to the first corpus directory it is
//! given, so that one is elsewhere (the run directory for the test step, `<target dir>/fuzz-corpus/<target>/`
//! for long runs, which the next long run starts from). A failing input is written to
//! `fuzz/artifacts/<target>/` and fails the run with its path. The run directory is removed when the test step
//! passes; otherwise its logs stay.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Instant;

use anyhow::{bail, Context as _};

use super::build::{bin_dir, target_dir};
use super::log::{failing_input, failure_excerpt, Stats};
use crate::cargo::workspace_root;

/// An input that takes longer than this is a finding (a hang), not a slow input.
const INPUT_TIMEOUT_SECONDS: u64 = 10;

/// How a run treats the corpus it grows.
#[derive(Clone, Copy)]
pub enum Grown {
    /// Into a temporary directory, removed afterwards (the test step).
    Discarded,
    /// Into `<target dir>/fuzz-corpus/<target>/`, where the next long run starts from it.
    Kept,
}

/// One target's run: its process and its log.
struct Running {
    target: String,
    child: Child,
    log: PathBuf,
    started: Instant,
}

pub fn run_targets(targets: &[String], seconds: u64, jobs: usize, grown: Grown) -> anyhow::Result<()> {
    let root = workspace_root();
    let run_dir = std::env::temp_dir().join(format!("router-fuzz-{}", std::process::id()));
    copy_binaries(targets, &run_dir.join("bin"))?;
    println!("fuzz: {} targets, {seconds} s each, {jobs} at a time", targets.len());
    let mut failures = Vec::new();
    for batch in targets.chunks(jobs) {
        let running: Vec<Running> =
            batch.iter().map(|target| start(&root, &run_dir, target, seconds, grown)).collect::<anyhow::Result<_>>()?;
        for run in running {
            if let Err(error) = finish(run) {
                println!("{error:#}");
                failures.push(error);
            }
        }
    }
    let _ = fs::remove_dir_all(run_dir.join("bin"));
    let _ = fs::remove_dir_all(run_dir.join("corpus"));
    if failures.is_empty() && matches!(grown, Grown::Discarded) {
        let _ = fs::remove_dir_all(&run_dir);
    } else {
        println!("fuzz: libFuzzer's output is in {}", run_dir.join("logs").display());
    }
    if !failures.is_empty() {
        let names: Vec<String> = failures.iter().map(|error| format!("{error:#}")).collect();
        bail!("fuzzing found {} failing target(s):\n{}", failures.len(), names.join("\n"));
    }
    Ok(())
}

/// Hard links (or copies) of the built targets, so that a build from another checkout in the shared target dir
/// cannot swap a binary under the run.
fn copy_binaries(targets: &[String], into: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(into).with_context(|| format!("creating {}", into.display()))?;
    for target in targets {
        let (from, to) = (bin_dir().join(target), into.join(target));
        let _ = fs::remove_file(&to);
        if fs::hard_link(&from, &to).is_err() {
            fs::copy(&from, &to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
        }
    }
    Ok(())
}

fn start(root: &Path, run_dir: &Path, target: &str, seconds: u64, grown: Grown) -> anyhow::Result<Running> {
    let seeds = root.join("fuzz/corpus").join(target);
    let artifacts = root.join("fuzz/artifacts").join(target);
    let logs = run_dir.join("logs");
    let grown_dir = match grown {
        Grown::Discarded => run_dir.join("corpus").join(target),
        Grown::Kept => target_dir().join("fuzz-corpus").join(target),
    };
    for dir in [&seeds, &artifacts, &logs, &grown_dir] {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let log = logs.join(format!("{target}.log"));
    let log_file = fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let mut cmd = Command::new(run_dir.join("bin").join(target));
    cmd.arg(format!("-max_total_time={seconds}"))
        .arg(format!("-timeout={INPUT_TIMEOUT_SECONDS}"))
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        // The grown corpus first: libFuzzer writes new inputs into the first directory only.
        .arg(&grown_dir)
        .arg(&seeds)
        .stdout(log_file.try_clone().context("log file")?)
        .stderr(log_file);
    let child = cmd.spawn().with_context(|| format!("starting fuzz target {target}"))?;
    Ok(Running { target: target.to_owned(), child, log, started: Instant::now() })
}

/// Waits for a target and prints its executions; an error names the failing input.
fn finish(mut run: Running) -> anyhow::Result<()> {
    let status = run.child.wait().with_context(|| format!("waiting for fuzz target {}", run.target))?;
    let log = fs::read_to_string(&run.log).unwrap_or_default();
    let stats = Stats::read(&log);
    // Measured here: a run that fails ends without libFuzzer's closing "Done ... in N second(s)".
    let seconds = run.started.elapsed().as_secs_f64();
    let rate = (stats.executions as f64 / seconds.max(1.0)) as u64;
    println!(
        "fuzz: {}: {} executions in {} s ({rate}/s), {} new inputs, corpus {} inputs",
        run.target,
        stats.executions,
        seconds.round(),
        stats.new_inputs,
        stats.corpus.map_or("?".into(), |n| n.to_string())
    );
    if status.success() {
        return Ok(());
    }
    println!("fuzz: {} failed ({status}); from {}:\n{}", run.target, run.log.display(), failure_excerpt(&log));
    match failing_input(&log) {
        Some(input) => {
            let binary = bin_dir().join(&run.target);
            bail!("{}: failing input {} (reproduce: {} {})", run.target, input, binary.display(), input)
        }
        None => {
            bail!("{}: libFuzzer exited with {status} without writing an input; see {}", run.target, run.log.display())
        }
    }
}
