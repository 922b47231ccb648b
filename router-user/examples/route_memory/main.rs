//! Heap bytes per route and per endpoint, counted by dhat (its heap profiler as this process's allocator): the
//! objects the manifest source holds after reading a file of `--routes` plain HTTP routes (each with its Service
//! and an EndpointSlice of `--pods` pods, as the bench writes them), then the compiled route table built from
//! them, as the binary holds both. It measures once with one pod per route and once with `--pods`, so the cost
//! of a route and the cost of each further endpoint come apart.
//!
//! With `--mixed N` the set is the bench's mixed one instead: N routes of each kind (HTTP, edge, reencrypt,
//! passthrough), every edge and reencrypt route with a certificate of its own, signed by one CA that is also the
//! reencrypt routes' destination CA; the leaves share one RSA-2048 key as the bench's do, or with `--own-keys`
//! each has a P-256 key of its own. Per-route figures are then per route of the whole set.
//!
//! ```text
//! cargo run --release -p router-user --example route_memory -- --routes 10000 --pods 4
//! cargo run --release -p router-user --example route_memory -- --routes 2000 --profile   # writes dhat-heap.json
//! cargo run --release -p router-user --example route_memory -- --mixed 2500 --own-keys
//! ```
//!
//! With `--profile` the allocation sites of the second measurement (by bytes live at exit, where it is kept) are
//! in `dhat-heap.json`, for dhat's viewer
//! (dh_view.html). Figures are the allocator's bytes requested, without its own overhead; the process's RSS at
//! the same size is higher by that overhead and by freed memory the allocator keeps.

#[path = "../common/mixed_set.rs"]
mod mixed_set;

use std::time::Duration;

use manifest_gen::{loopback_pods, RouteSet};
use mixed_set::{mixed_set, LeafKeys};
use router::source::manifest::ManifestSource;
use router::table::{build, BuildOptions, TlsBuild};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

struct Args {
    routes: usize,
    pods: usize,
    profile: bool,
    /// Routes of each kind of a mixed set (0: plain HTTP routes).
    mixed: usize,
    own_keys: bool,
}

fn args() -> Args {
    let mut args = Args { routes: 10_000, pods: 4, profile: false, mixed: 0, own_keys: false };
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        let mut number = || words.next().and_then(|n| n.parse().ok()).expect("a number after the flag");
        match word.as_str() {
            "--routes" => args.routes = number(),
            "--pods" => args.pods = number(),
            "--profile" => args.profile = true,
            "--mixed" => args.mixed = number(),
            "--own-keys" => args.own_keys = true,
            other => panic!("unknown argument {other}: --routes N --pods N --profile --mixed N --own-keys"),
        }
    }
    if args.mixed > 0 {
        args.routes = 4 * args.mixed;
    }
    assert!(args.pods >= 2, "--pods must be at least 2 to tell a route from an endpoint");
    args
}

fn live_bytes() -> u64 {
    dhat::HeapStats::get().curr_bytes as u64
}

/// The route set of `args` over `pods` pods (TLS pods listen on 8443).
fn route_set(args: &Args, pods: usize) -> RouteSet {
    if args.mixed == 0 {
        return RouteSet::http(args.routes, &loopback_pods(pods, 8080));
    }
    let keys = if args.own_keys { LeafKeys::OwnP256 } else { LeafKeys::SharedRsa };
    mixed_set(args.mixed, &loopback_pods(pods, 8080), &loopback_pods(pods, 8443), keys)
}

/// Live bytes the source's objects take, then the table built from them, for `set` (`routes` routes).
/// `keep` leaves both alive to the end, for the profile's sites of bytes live at exit.
fn measure(set: &RouteSet, routes: usize, keep: bool) -> (u64, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("routes.yaml"), set.to_yaml()).expect("write");
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
    let rejected = table.outcomes().find_map(|outcome| outcome.result.as_ref().err().map(|e| (&outcome.key, e)));
    assert_eq!(table.routes_admitted(), routes, "every generated route is admitted; one rejected: {rejected:?}");
    let compiled = live_bytes() - before - objects;
    if keep {
        std::mem::forget((source, update, table));
    }
    (objects, compiled)
}

fn main() {
    let args = args();
    let _profiler = if args.profile { dhat::Profiler::new_heap() } else { dhat::Profiler::builder().testing().build() };
    let one = route_set(&args, 1);
    let (one_objects, one_table) = measure(&one, args.routes, false);
    drop(one);
    // Texts the first measurement interned would otherwise be counted only once.
    router::model::PemText::forget_unheld();
    let many = route_set(&args, args.pods);
    let (many_objects, many_table) = measure(&many, args.routes, args.profile);
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
