//! A timing breakdown of one route change at 10,000 routes (the bench's churn scenario in process): run with
//! `cargo test --release -p router-user --lib churn_breakdown -- --ignored --nocapture`. It prints where the
//! time goes and asserts only that the new route is served; there are no timed assertions. The whole path (the
//! watch and the publisher, optionally on one CPU shared with a busy thread) is timed by `examples/churn.rs`.

use std::time::{Duration, Instant};

use manifest_gen::{loopback_pods, RouteSet};

use super::store::ManifestSource;
use super::tree;
use crate::admission::admit;
use crate::table::{build, build_from, BuildOptions};

const ROUTES: usize = 10_000;

/// The bench's Service + EndpointSlice (4 pods on 127.0.0.11-14:8080) + Route per name.
fn manifests(names: impl Iterator<Item = String>) -> String {
    RouteSet::named(names, &loopback_pods(4, 8080)).to_yaml()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn timed<T>(label: &str, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    println!("  {label:<44} {}", ms(started.elapsed()));
    out
}

/// One layout: `per_file` routes per file (`ROUTES` = one big file, 1 = a file per route).
fn breakdown(per_file: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let names: Vec<String> = (0..ROUTES).map(|i| format!("r{i:05}")).collect();
    for (n, chunk) in names.chunks(per_file).enumerate() {
        std::fs::write(dir.path().join(format!("routes-{n:05}.yaml")), manifests(chunk.iter().cloned()))
            .expect("write");
    }
    let options = BuildOptions { allow_loopback_endpoints: true, ..BuildOptions::default() };
    let mut source = ManifestSource::new(dir.path());
    println!("{ROUTES} routes, {per_file} per file:");
    let first = timed("initial load (read + parse + merge)", || source.pass());
    let mut previous = timed("initial build", || build(&first.update.snapshot, &options, 1));
    let mut previous_snapshot = first.update.snapshot;
    let mut seen = tree::fingerprint(dir.path());

    let changes = std::env::var("CHURN_CHANGES").ok().and_then(|n| n.parse().ok()).unwrap_or(3);
    for change in 0..changes {
        println!(" change {change}: one new route file");
        let name = format!("c{change:03}");
        std::fs::write(dir.path().join(format!("churn-{change:03}.yaml")), manifests(std::iter::once(name.clone())))
            .expect("write");
        let paths = std::iter::once(dir.path().join(format!("churn-{change:03}.yaml"))).collect();
        let pass = timed("pass over the event's path (read + parse + merge)", || source.pass_paths(&paths, &mut seen));
        let snapshot = pass.expect("no rescan").update.snapshot;
        if std::env::var_os("CHURN_CHANGES").is_none() {
            timed("  full pass, for comparison", || source.pass());
            timed("  admission alone", || admit(&snapshot, &options.admission).admitted.len());
            timed("  full build, for comparison", || build(&snapshot, &options, 2 + change));
        }
        let table = timed("build_from the previous table", || {
            build_from(&snapshot, &options, 2 + change, Some((&previous_snapshot, &previous)))
        });
        assert!(table.lookup(&format!("{name}.bench.example.com"), "/").is_some(), "the new route is served");
        timed("drop the previous snapshot (off the critical path)", || drop(previous_snapshot));
        timed("drop the previous table (off the critical path)", || drop(previous));
        previous_snapshot = snapshot;
        previous = table;
    }
}

#[test]
#[ignore = "a timing breakdown to read, not a check: run in release with --ignored --nocapture"]
fn churn_breakdown() {
    breakdown(ROUTES);
    if std::env::var_os("CHURN_CHANGES").is_none() {
        breakdown(1);
    }
}
