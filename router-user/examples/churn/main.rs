//! Route change-to-traffic at scale, in process, through the path the binary uses: `spawn_watch` over a manifest
//! directory feeding the `Publisher`, as `server::start` wires them. It writes `--routes` routes (each with its
//! Service and an EndpointSlice of `--pods` pods, as the bench writes them) into one file, waits for the first
//! table, then adds `--changes` one-route files (written by rename, like the bench's churn scenario) and times
//! each until the published table serves the new route.
//!
//! ```text
//! cargo build --release -p router-user --example churn
//! taskset -c 1 target/release/examples/churn --hog      # one CPU shared with a busy thread, as under load
//! target/release/examples/churn --check-interval 3600   # `cpu` without the health checks' connects
//! ```
//!
//! Per change it prints: `source` (write -> the watch's update is out: event, re-read, parse, merge), `table`
//! (update -> the new table is live: build and publish), `total`; and at the end `cpu`, the process's CPU time
//! spent on a change including what it does off the critical path (frees, health-check targets), which under
//! load delays the next change; and the resident memory before the first change and after the last (`--changes
//! 1000`: what a thousand changes leave beyond the routes they add). No request is sent; the bench's poll adds
//! the time of one HTTP request on top.
//! `RUST_LOG=router::table=debug,router::publish=info` shows the router's own timings (each build's phases).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use manifest_gen::{loopback_pods, RouteSet};
use router::admin::Readiness;
use router::metrics::Metrics;
use router::model::Snapshot;
use router::policy::RouterDefaults;
use router::publish::Publisher;
use router::source::manifest::{spawn_watch, ManifestSource};
use router::table::{BuildOptions, RouteTable, TableHandle, TlsBuild};
use tokio::sync::{mpsc, watch};

#[path = "../common/mixed_set.rs"]
mod mixed_set;

/// Time given to each change (it and what it leaves to do off the critical path), and the quiet window measured.
const WINDOW: Duration = Duration::from_millis(500);

struct Args {
    routes: usize,
    pods: usize,
    changes: usize,
    /// A thread that spins for the whole run: pinned to one CPU with the router, it takes half of it.
    hog: bool,
    /// `ROUTER_BACKEND_CHECK_INTERVAL`: the pods do not exist here, so checks (5 s, as in the bench, by default)
    /// cost refused connects; a long interval keeps them out of the `cpu` figure.
    check_interval: Duration,
    /// The `tls-40000` bench group's shape: `--routes` split into HTTP, edge, reencrypt and passthrough routes,
    /// every edge and reencrypt route with a certificate of its own.
    mixed: bool,
    /// Only write the set's manifest file into this directory and exit (to run the `router` binary on it).
    write_to: Option<std::path::PathBuf>,
}

fn args() -> Args {
    let mut args = Args {
        routes: 10_000,
        pods: 4,
        changes: 20,
        hog: false,
        check_interval: Duration::from_secs(5),
        mixed: false,
        write_to: None,
    };
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        let mut number = || words.next().and_then(|n| n.parse().ok()).expect("a number after the flag");
        match word.as_str() {
            "--routes" => args.routes = number(),
            "--pods" => args.pods = number(),
            "--changes" => args.changes = number(),
            "--hog" => args.hog = true,
            "--mixed" => args.mixed = true,
            "--write-to" => args.write_to = words.next().map(Into::into),
            "--check-interval" => args.check_interval = Duration::from_secs(number() as u64),
            other => {
                panic!("unknown argument {other}: --routes N --pods N --changes N --check-interval SECS --hog --mixed --write-to DIR")
            }
        }
    }
    args
}

/// Through a hidden temp file and a rename, as the bench writes.
fn write_atomically(file: &Path, contents: &str) {
    let name = file.file_name().and_then(|n| n.to_str()).expect("file name");
    let staging = file.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&staging, contents).expect("write");
    std::fs::rename(&staging, file).expect("rename");
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// CPU time this process's live threads have used, from /proc/self/task/*/schedstat (nanoseconds; tokio's
/// blocking threads live 10 s after their last task, longer than a change's window).
fn cpu_time() -> Duration {
    let tasks = std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten();
    let ns = tasks
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next().and_then(|ns| ns.parse::<u64>().ok()));
    Duration::from_nanos(ns.sum())
}

/// The process's resident memory in MB (VmRSS).
fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status.lines().find_map(|line| line.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next());
    kb.and_then(|kb| kb.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
}

fn summary(label: &str, mut values: Vec<f64>) {
    if values.is_empty() {
        return;
    }
    values.sort_by(f64::total_cmp);
    let (median, max) = (values[values.len() / 2], values[values.len() - 1]);
    println!("{label:<8} median {median:6.1} ms   max {max:6.1} ms");
}

#[tokio::main]
async fn main() {
    let args = args();
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).init();
    }
    let hog = Arc::new(AtomicBool::new(args.hog));
    let spinning = hog.clone();
    let hog_thread = std::thread::spawn(move || {
        while spinning.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });

    let dir = tempfile::tempdir().expect("tempdir");
    let pods = loopback_pods(args.pods, 8080);
    let set = match args.mixed {
        true => mixed_set::mixed_set(args.routes / 4, &pods, &pods, mixed_set::LeafKeys::SharedP256),
        false => RouteSet::http(args.routes, &pods),
    };
    let routes = set.routes.len();
    if let Some(dir) = &args.write_to {
        write_atomically(&dir.join("routes.yaml"), &set.to_yaml());
        return;
    }
    write_atomically(&dir.path().join("routes.yaml"), &set.to_yaml());
    drop(set);

    let default_certificate = router::tls::default_certificate(None, None).expect("generated certificate");
    let defaults = RouterDefaults { health_check_interval: args.check_interval, ..RouterDefaults::default() };
    let options = BuildOptions {
        allow_loopback_endpoints: true,
        defaults,
        tls: TlsBuild::new(Some(default_certificate), None, Duration::from_secs(5)),
        ..BuildOptions::default()
    };
    let table: TableHandle = Arc::new(ArcSwap::from_pointee(RouteTable::default()));
    let (published_tx, mut published) = watch::channel(table.load_full());
    let (snapshots_tx, _snapshots) = watch::channel(Arc::new(Snapshot::default()));
    let publisher = Publisher {
        table,
        options,
        metrics: Arc::new(Metrics::default()),
        readiness: Arc::new(Readiness::default()),
        published: Some(published_tx),
        snapshots: Some(snapshots_tx),
    };
    // The watch's updates pass through here on their way to the publisher, to time the source alone.
    let (source_tx, mut source_rx) = mpsc::channel(16);
    let (updates_tx, updates_rx) = mpsc::channel(16);
    let forwarded: Arc<Mutex<Option<Instant>>> = Arc::default();
    let stamp = forwarded.clone();
    tokio::spawn(async move {
        while let Some(update) = source_rx.recv().await {
            *stamp.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
            if updates_tx.send(update).await.is_err() {
                return;
            }
        }
    });
    let started = Instant::now();
    let _watch = spawn_watch(ManifestSource::new(dir.path()), source_tx);
    tokio::spawn(publisher.run(updates_rx));
    published.wait_for(|table| table.routes_admitted() == routes).await.expect("publisher runs");
    println!(
        "{} routes, {} endpoints: first table after {:.0} ms{}",
        routes,
        routes * args.pods,
        ms(started.elapsed()),
        if args.hog { " (with a spinning thread)" } else { "" }
    );

    // CPU while nothing changes (health checks, the hog), to subtract from each change's window; after the first
    // round of checks.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let quiet_from = cpu_time();
    tokio::time::sleep(WINDOW).await;
    let quiet = cpu_time() - quiet_from;
    let rss_before = rss_mb();
    let (mut sources, mut tables, mut totals, mut cpu) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut window_from = cpu_time();
    for change in 0..args.changes {
        // Let the previous change's frees (off the critical path) finish, then count the whole window's CPU.
        tokio::time::sleep(WINDOW).await;
        if change > 0 {
            cpu.push(ms((cpu_time() - window_from).saturating_sub(quiet)));
        }
        window_from = cpu_time();
        let name = format!("c{change:03}");
        let host = format!("{name}.bench.example.com");
        let begin = Instant::now();
        write_atomically(
            &dir.path().join(format!("churn-{change:03}.yaml")),
            &RouteSet::named([name.as_str()], &pods).to_yaml(),
        );
        let served = published.wait_for(|table| table.lookup(&host, "/").is_some());
        tokio::time::timeout(Duration::from_secs(10), served).await.expect("served in 10 s").expect("publisher runs");
        let total = begin.elapsed();
        let source = forwarded.lock().unwrap_or_else(PoisonError::into_inner).take().map_or(total, |at| at - begin);
        println!(
            "change {change:3}: source {:6.1} ms   table {:6.1} ms   total {:6.1} ms",
            ms(source),
            ms(total - source),
            ms(total)
        );
        sources.push(ms(source));
        tables.push(ms(total - source));
        totals.push(ms(total));
    }
    tokio::time::sleep(WINDOW).await;
    cpu.push(ms((cpu_time() - window_from).saturating_sub(quiet)));
    println!("rss      {rss_before:6.0} MB before the first change, {:6.0} MB after the last", rss_mb());
    summary("source", sources);
    summary("table", tables);
    summary("total", totals);
    summary("cpu", cpu);
    println!(
        "(cpu: process CPU time in the {} ms after each change, less that of a quiet window: {:.0} ms)",
        WINDOW.as_millis(),
        ms(quiet)
    );
    hog.store(false, Ordering::Relaxed);
    hog_thread.join().expect("hog thread");
}
