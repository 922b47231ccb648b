//! `cargo xtask fuzz` and the fuzz step of `cargo xtask test`: the cargo-fuzz targets in `fuzz/`, built once
//! (nightly, libFuzzer) and each run for a fixed time on its seeds in `fuzz/corpus/<target>/`.
//!
//! The build goes to `/var/cache/router-dev/fuzz-target` (`ROUTER_FUZZ_TARGET_DIR` moves it), outside the
//! repository like the apiserver, so that a fresh clone on the machine rebuilds only the router's own crates.
//!
//! The seeds are read, never written: libFuzzer adds the inputs it finds to the first corpus directory it is
//! given, so that one is elsewhere (a temporary directory for the test step, `<target dir>/fuzz-corpus/<target>/`
//! for long runs, which the next long run starts from). A failing input is written to
//! `fuzz/artifacts/<target>/` and fails the command with its path. Each target's libFuzzer output is in
//! `<target dir>/fuzz-logs/<target>.log`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Instant;

use anyhow::{bail, Context as _};

use crate::cargo::workspace_root;
use crate::dev_cache::cache_dir;
use crate::setup;

/// Seconds each target runs in `cargo xtask test` (two at a time there: see `docs/fuzzing.md` for the budget).
const TEST_SECONDS: u64 = 20;
const TEST_JOBS: usize = 2;
/// An input that takes longer than this is a finding (a hang), not a slow input.
const INPUT_TIMEOUT_SECONDS: u64 = 10;
/// Where cargo-fuzz puts the targets under the target dir (its default host triple, the dev profile).
const BIN_SUBDIR: &str = "x86_64-unknown-linux-gnu/debug";
/// The build's flags. `--dev`: the profile `fuzz/Cargo.toml` tunes (optimised, quick to rebuild), with debug
/// assertions and overflow checks. No sanitizer: the parsers are safe Rust, whose memory errors are panics
/// already, and AddressSanitizer would slow both the build and every execution.
const BUILD_FLAGS: [&str; 3] = ["--dev", "--sanitizer", "none"];

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

/// How a run treats the corpus it grows.
#[derive(Clone, Copy)]
enum Grown {
    /// Into a temporary directory, removed afterwards (the test step).
    Discarded,
    /// Into `fuzz/target/corpus/<target>/`, where the next long run starts from it.
    Kept,
}

/// `cargo xtask fuzz`.
pub fn run(args: &FuzzArgs) -> anyhow::Result<()> {
    let cargo_fuzz = setup::ensure_fuzz()?;
    let all = list_targets(&cargo_fuzz)?;
    let targets = if args.targets.is_empty() { all } else { chosen(&args.targets, &all)? };
    build(&cargo_fuzz)?;
    run_targets(&targets, args.seconds, args.jobs.max(1), Grown::Kept)
}

/// The fuzz step of `cargo xtask test`: every target, briefly, two at a time.
pub fn test_step() -> anyhow::Result<()> {
    let started = Instant::now();
    let cargo_fuzz = setup::ensure_fuzz()?;
    let targets = list_targets(&cargo_fuzz)?;
    build(&cargo_fuzz)?;
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

/// `ROUTER_FUZZ_TARGET_DIR`, else `fuzz-target` in the dev cache.
fn target_dir() -> PathBuf {
    std::env::var_os("ROUTER_FUZZ_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| cache_dir().join("fuzz-target"))
}

fn bin_dir() -> PathBuf {
    target_dir().join(BIN_SUBDIR)
}

/// cargo-fuzz run with the nightly toolchain, from the workspace root, without what cargo set for xtask.
fn cargo_fuzz_command(cargo_fuzz: &Path) -> Command {
    let mut cmd = Command::new(cargo_fuzz);
    cmd.arg("fuzz").current_dir(workspace_root()).env("RUSTUP_TOOLCHAIN", "nightly");
    // `cargo xtask` gives this process CARGO, CARGO_MANIFEST_DIR, CARGO_PKG_*, ...: cargo-fuzz would run that
    // (stable) cargo, and build scripts watching such variables would rerun whenever they differ from a build
    // by hand. The compiler overrides would replace cargo-fuzz's own flags.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_by_cargo = name.starts_with("CARGO") && name != "CARGO_HOME";
        let overrides = ["RUSTC", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTDOC", "RUSTFLAGS"].contains(&&*name);
        if set_by_cargo || overrides {
            cmd.env_remove(name.as_ref());
        }
    }
    cmd
}

/// The targets cargo-fuzz finds in `fuzz/Cargo.toml`.
fn list_targets(cargo_fuzz: &Path) -> anyhow::Result<Vec<String>> {
    let out =
        cargo_fuzz_command(cargo_fuzz).args(["list", "--fuzz-dir", "fuzz"]).output().context("cargo fuzz list")?;
    if !out.status.success() {
        bail!("cargo fuzz list failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    let targets: Vec<String> = String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_owned).collect();
    if targets.is_empty() {
        bail!("cargo fuzz list found no target in fuzz/Cargo.toml");
    }
    Ok(targets)
}

/// Builds every target once. The router's eBPF objects are left out (`AYA_BUILD_SKIP`, see
/// `router-user/build.rs`): no target loads them.
fn build(cargo_fuzz: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut cmd = cargo_fuzz_command(cargo_fuzz);
    let target_dir = target_dir();
    cmd.arg("build").args(BUILD_FLAGS).args(["--fuzz-dir", "fuzz", "--target-dir"]).arg(&target_dir);
    cmd.env("AYA_BUILD_SKIP", "1");
    println!(
        "+ cargo +nightly fuzz build {} --fuzz-dir fuzz --target-dir {} (AYA_BUILD_SKIP=1)",
        BUILD_FLAGS.join(" "),
        target_dir.display()
    );
    let status = cmd.status().context("running cargo fuzz build")?;
    if !status.success() {
        bail!("cargo fuzz build failed ({status})");
    }
    println!("fuzz: targets built in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// One target's run: its process, its log, and where it grows its corpus.
struct Running {
    target: String,
    child: Child,
    log: PathBuf,
    grown: PathBuf,
    discard: bool,
}

fn run_targets(targets: &[String], seconds: u64, jobs: usize, grown: Grown) -> anyhow::Result<()> {
    let root = workspace_root();
    println!("fuzz: {} targets, {seconds} s each, {jobs} at a time", targets.len());
    let mut failures = Vec::new();
    for batch in targets.chunks(jobs) {
        let running: Vec<Running> =
            batch.iter().map(|target| start(&root, target, seconds, grown)).collect::<anyhow::Result<_>>()?;
        for run in running {
            if let Err(error) = finish(run) {
                println!("{error:#}");
                failures.push(error);
            }
        }
    }
    if !failures.is_empty() {
        let names: Vec<String> = failures.iter().map(|error| format!("{error:#}")).collect();
        bail!("fuzzing found {} failing target(s):\n{}", failures.len(), names.join("\n"));
    }
    Ok(())
}

fn start(root: &Path, target: &str, seconds: u64, grown: Grown) -> anyhow::Result<Running> {
    let seeds = root.join("fuzz/corpus").join(target);
    let artifacts = root.join("fuzz/artifacts").join(target);
    let logs = target_dir().join("fuzz-logs");
    let (grown_dir, discard) = match grown {
        Grown::Discarded => {
            (std::env::temp_dir().join(format!("router-fuzz-{}", std::process::id())).join(target), true)
        }
        Grown::Kept => (target_dir().join("fuzz-corpus").join(target), false),
    };
    for dir in [&seeds, &artifacts, &logs, &grown_dir] {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let log = logs.join(format!("{target}.log"));
    let log_file = fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let mut cmd = Command::new(bin_dir().join(target));
    cmd.arg(format!("-max_total_time={seconds}"))
        .arg(format!("-timeout={INPUT_TIMEOUT_SECONDS}"))
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        // The grown corpus first: libFuzzer writes new inputs into the first directory only.
        .arg(&grown_dir)
        .arg(&seeds)
        .stdout(log_file.try_clone().context("log file")?)
        .stderr(log_file);
    let child = cmd.spawn().with_context(|| format!("starting fuzz target {target} from {}", bin_dir().display()))?;
    Ok(Running { target: target.to_owned(), child, log, grown: grown_dir, discard })
}

/// Waits for a target and prints its executions; an error names the failing input.
fn finish(mut run: Running) -> anyhow::Result<()> {
    let status = run.child.wait().with_context(|| format!("waiting for fuzz target {}", run.target))?;
    let log = fs::read_to_string(&run.log).unwrap_or_default();
    if run.discard {
        let _ = fs::remove_dir_all(&run.grown);
        if let Some(parent) = run.grown.parent() {
            // Removed once empty, by the last target to finish.
            let _ = fs::remove_dir(parent);
        }
    }
    let stats = Stats::read(&log);
    let rate = stats.seconds.filter(|&s| s > 0).map_or(0, |seconds| stats.executions / seconds);
    println!(
        "fuzz: {}: {} executions in {} s ({rate}/s), {} new inputs, corpus {} inputs",
        run.target,
        stats.executions,
        stats.seconds.unwrap_or(0),
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

/// The panic (or libFuzzer's own error) without the backtrace's frames, at most 20 lines.
fn failure_excerpt(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines
        .iter()
        .position(|line| line.contains(" panicked at ") || line.contains("ERROR: libFuzzer"))
        .unwrap_or(lines.len().saturating_sub(20));
    let is_frame = |line: &&&str| {
        let line = line.trim_start();
        line.starts_with("at ") || line.split_once(": ").is_some_and(|(n, _)| n.parse::<u32>().is_ok())
    };
    lines[start..].iter().filter(|line| !is_frame(line)).take(20).copied().collect::<Vec<_>>().join("\n")
}

/// The path libFuzzer names after "Test unit written to ".
fn failing_input(log: &str) -> Option<String> {
    log.lines().find_map(|line| line.split_once("Test unit written to ").map(|(_, path)| path.trim().to_owned()))
}

/// What libFuzzer reports at the end (`-print_final_stats=1`) and in its last status line.
#[derive(Debug, Default, PartialEq, Eq)]
struct Stats {
    executions: u64,
    seconds: Option<u64>,
    new_inputs: u64,
    corpus: Option<u64>,
}

impl Stats {
    fn read(log: &str) -> Stats {
        let stat = |name: &str| {
            log.lines().find_map(|line| line.strip_prefix(name)?.trim().strip_prefix(':')?.trim().parse::<u64>().ok())
        };
        // `#12345  DONE   cov: 812 ft: 2301 corp: 96/3104b ...`: the corpus size when the run ended.
        let corpus = log.lines().rev().find_map(|line| {
            let after = line.split_once(" corp: ")?.1;
            after.split('/').next()?.trim().parse().ok()
        });
        Stats {
            executions: stat("stat::number_of_executed_units").unwrap_or(0),
            seconds: done_seconds(log),
            new_inputs: stat("stat::new_units_added").unwrap_or(0),
            corpus,
        }
    }
}

/// `Done 1234567 runs in 600 second(s)`.
fn done_seconds(log: &str) -> Option<u64> {
    log.lines().find_map(|line| {
        let rest = line.strip_prefix("Done ")?;
        rest.split_once(" runs in ")?.1.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
INFO: Seed: 1234
#2\tINITED cov: 812 ft: 2301 corp: 14/3104b exec/s: 0 rss: 40Mb
#91234\tNEW    cov: 830 ft: 2400 corp: 15/3200b lim: 4096 exec/s: 9123 rss: 60Mb L: 96/1024 MS: 2 ChangeBit-
#182468\tDONE   cov: 840 ft: 2450 corp: 21/3500b lim: 4096 exec/s: 9123 rss: 61Mb
Done 182468 runs in 20 second(s)
stat::number_of_executed_units: 182468
stat::average_exec_per_sec:     9123
stat::new_units_added:          7
stat::slowest_unit_time_sec:    0
stat::peak_rss_mb:              61
";

    #[test]
    fn final_stats_give_executions_time_and_corpus() {
        let stats = Stats::read(LOG);
        assert_eq!(stats, Stats { executions: 182468, seconds: Some(20), new_inputs: 7, corpus: Some(21) });
    }

    #[test]
    fn a_crash_log_names_the_failing_input() {
        let log = "thread '<unnamed>' panicked at router-user/src/x.rs:1:1\n==1== ERROR: libFuzzer: deadly signal\n\
                   artifact_prefix='/r/fuzz/artifacts/x/'; Test unit written to /r/fuzz/artifacts/x/crash-0a1b\n";
        assert_eq!(failing_input(log).as_deref(), Some("/r/fuzz/artifacts/x/crash-0a1b"));
        assert_eq!(failing_input(LOG), None);
        let excerpt = failure_excerpt(
            "INFO: Seed: 1\nthread '<unnamed>' panicked at src/a.rs:3:9:\nattempt to subtract with overflow\n\
             stack backtrace:\n   0: __rustc::rust_begin_unwind\n             at /rustc/x/panicking.rs:689:5\n\
             ==7== ERROR: libFuzzer: deadly signal\n",
        );
        assert_eq!(
            excerpt,
            "thread '<unnamed>' panicked at src/a.rs:3:9:\nattempt to subtract with overflow\nstack backtrace:\n\
             ==7== ERROR: libFuzzer: deadly signal"
        );
    }
}
