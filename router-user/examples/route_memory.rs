//! Heap bytes per route and per endpoint, counted by dhat (its heap profiler as this process's allocator): the
//! objects the manifest source holds after reading a file of `--routes` plain HTTP routes (each with its Service
//! and an EndpointSlice of `--pods` pods, as the bench writes them), then the compiled route table built from
//! them, as the binary holds both. It measures once with one pod per route and once with `--pods`, so the cost
//! of a route and the cost of each further endpoint come apart.
//!
//! ```text
//! cargo run --release -p router-user --example route_memory -- --routes 10000 --pods 4
//! cargo run --release -p router-user --example route_memory -- --routes 2000 --profile   # writes dhat-heap.json
//! ```
//!
//! With `--profile` the allocation sites of the second measurement (by bytes live at exit, where it is kept) are
//! in `dhat-heap.json`, for dhat's viewer
//! (dh_view.html). Figures are the allocator's bytes requested, without its own overhead; the process's RSS at
//! the same size is higher by that overhead and by freed memory the allocator keeps.

use std::time::Duration;

use manifest_gen::{loopback_pods, RouteSet};
use router::source::manifest::ManifestSource;
use router::table::{build, BuildOptions, TlsBuild};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

struct Args {
    routes: usize,
    pods: usize,
    profile: bool,
}

fn args() -> Args {
    let mut args = Args { routes: 10_000, pods: 4, profile: false };
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        let mut number = || words.next().and_then(|n| n.parse().ok()).expect("a number after the flag");
        match word.as_str() {
            "--routes" => args.routes = number(),
            "--pods" => args.pods = number(),
            "--profile" => args.profile = true,
            other => panic!("unknown argument {other}: --routes N --pods N --profile"),
        }
    }
    assert!(args.pods >= 2, "--pods must be at least 2 to tell a route from an endpoint");
    args
}

fn live_bytes() -> u64 {
    dhat::HeapStats::get().curr_bytes as u64
}

/// Live bytes the source's objects take, then the table built from them, for `routes` routes of `pods` pods.
/// `keep` leaves both alive to the end, for the profile's sites of bytes live at exit.
fn measure(routes: usize, pods: usize, keep: bool) -> (u64, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = RouteSet::http(routes, &loopback_pods(pods, 8080)).to_yaml();
    std::fs::write(dir.path().join("routes.yaml"), yaml).expect("write");
    let options = BuildOptions {
        allow_loopback_endpoints: true,
        tls: TlsBuild::new(None, None, Duration::from_secs(5)),
        ..BuildOptions::default()
    };
    let before = live_bytes();
    let mut source = ManifestSource::new(dir.path());
    let update = source.reload();
    assert!(update.errors.is_empty(), "the generated file reads: {:?}", update.errors);
    let objects = live_bytes() - before;
    let table = build(&update.snapshot, &options, 1);
    assert_eq!(table.routes_admitted(), routes, "every generated route is admitted");
    let compiled = live_bytes() - before - objects;
    if keep {
        std::mem::forget((source, update, table));
    }
    (objects, compiled)
}

fn main() {
    let args = args();
    let _profiler = if args.profile { dhat::Profiler::new_heap() } else { dhat::Profiler::builder().testing().build() };
    let (one_objects, one_table) = measure(args.routes, 1, false);
    let (many_objects, many_table) = measure(args.routes, args.pods, args.profile);
    let routes = args.routes as f64;
    let further = (args.routes * (args.pods - 1)) as f64;
    println!("{} routes; bytes live per route (1 pod each), then per further endpoint:", args.routes);
    println!(
        "  source objects  {:8.0} per route   {:6.0} per endpoint",
        one_objects as f64 / routes,
        (many_objects - one_objects) as f64 / further
    );
    println!(
        "  compiled table  {:8.0} per route   {:6.0} per endpoint",
        one_table as f64 / routes,
        (many_table - one_table) as f64 / further
    );
    let total = (many_objects + many_table) as f64;
    println!(
        "  at {} pods: {:.0} bytes per route in all, {:.0} MB for the {} routes",
        args.pods,
        total / routes,
        total / 1e6,
        args.routes
    );
}
