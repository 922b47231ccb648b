//! Scale figures for the Kubernetes source (a benchmark, not a test: `#[ignore]`, run by `bench/kube-scale.sh`):
//! 10,000 routes, 10,000 services and 30,000 endpoints (one v1beta1 EndpointSlice of three per service).
//!
//! 1. In process: `table::build` on that snapshot (no apiserver).
//! 2. Against a real kube-apiserver: the objects are created through the API, then a router starts on them;
//!    printed are the time to its first table (initial list + snapshot + build), the table build time the
//!    router measured, and the time from one more Route create to its first 200 at that scale.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::{Api, Client};
use router::model::{Route, Snapshot};
use router::source::kube::EndpointSliceV1beta1;
use router::table::{build, BuildOptions};
use router_tests::apiserver::objects::{endpoint_slices, namespace, route, service};
use router_tests::apiserver::{apply_json, ControlPlane, Identity};
use router_tests::backend::TestBackend;
use router_tests::client::get;
use router_tests::{eventually, start_router_with};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

const ROUTES: usize = 10_000;
const ENDPOINTS_PER_SERVICE: usize = 3;
const NAMESPACES: usize = 10;
/// Concurrent create calls.
const IN_FLIGHT: usize = 32;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run bench/kube-scale.sh"]
async fn scale_figures() {
    let objects: Vec<(String, String, Vec<serde_json::Value>)> = (0..ROUTES).map(objects_for).collect();
    in_process_build(&objects);

    let Some(plane) = ControlPlane::start_with_routes().await else { return };
    let client = plane.client().await;
    for index in 0..NAMESPACES {
        apply_json(&client, namespace(&format!("scale-{index}"), &[])).await;
    }
    let started = Instant::now();
    create_all(&client, objects).await;
    println!("created {ROUTES} routes, services and slices through the API in {:?}", started.elapsed());

    let web = TestBackend::start("web").await;
    apply_json(&client, service("scale-0", "probe")).await;
    for slice in endpoint_slices("scale-0", "probe", "probe", &[web.addr]) {
        apply_json(&client, slice).await;
    }
    let started = Instant::now();
    let router = start_router_with(plane.router_settings(Identity::Router)).await;
    println!(
        "router start -> first table ({} routes admitted): {:?}",
        router.table.load().routes_admitted(),
        started.elapsed()
    );
    let text = router.metrics.render();
    let sum = metric(&text, "router_table_build_seconds_sum");
    let count = metric(&text, "router_table_build_seconds_count");
    println!("table builds in the router: {count} taking {:.1} ms on average", sum / count.max(1.0) * 1000.0);

    let mut latencies = Vec::new();
    for attempt in 0..5 {
        let host = format!("probe-{attempt}.example.com");
        let created = Instant::now();
        apply_json(&client, route("scale-0", &format!("probe-{attempt}"), &host, "/", "probe", &[])).await;
        let addr = router.http_addr;
        let probe = host.clone();
        eventually("the probe route", Duration::from_secs(60), move || {
            let probe = probe.clone();
            async move { (get(addr, &probe, "/").await.status == 200).then_some(()) }
        })
        .await;
        latencies.push(created.elapsed());
    }
    latencies.sort();
    println!(
        "Route create -> first 200 at {ROUTES} routes: median {:?} (min {:?}, max {:?})",
        latencies[2], latencies[0], latencies[4]
    );
    router.shutdown().await;
}

/// `(namespace, name, [service, slice, route])` of route number `index`: three endpoints on distinct loopback
/// addresses.
fn objects_for(index: usize) -> (String, String, Vec<serde_json::Value>) {
    let namespace = format!("scale-{}", index % NAMESPACES);
    let name = format!("app-{index}");
    let pods: Vec<std::net::SocketAddr> =
        (0..ENDPOINTS_PER_SERVICE).map(|n| std::net::SocketAddr::from(([127, 0, 1, 1 + n as u8], 8080))).collect();
    let mut slice = endpoint_slices(&namespace, &name, &name, &pods[..1]).remove(0);
    slice["endpoints"] = serde_json::Value::Array(
        pods.iter()
            .map(|pod| serde_json::json!({"addresses": [pod.ip().to_string()], "conditions": {"ready": true}}))
            .collect(),
    );
    let host = format!("{name}.scale.example.com");
    let objects = vec![service(&namespace, &name), slice, route(&namespace, &name, &host, "/", &name, &[])];
    (namespace, name, objects)
}

fn in_process_build(objects: &[(String, String, Vec<serde_json::Value>)]) {
    let mut snapshot = Snapshot::default();
    for (namespace, name, parts) in objects {
        let key = router::model::ObjectKey::new(namespace, name);
        let service: Service = serde_json::from_value(parts[0].clone()).expect("service");
        let slice: EndpointSliceV1beta1 = serde_json::from_value(parts[1].clone()).expect("slice");
        let mut route: Route = serde_json::from_value(parts[2].clone()).expect("route");
        route.metadata.uid = Some(format!("uid-{namespace}-{name}"));
        snapshot.services.insert(key.clone(), Arc::new(service.into()));
        snapshot.endpoint_slices.insert(key.clone(), Arc::new(slice.into_v1().into()));
        snapshot.routes.insert(key, Arc::new(route));
    }
    let options = BuildOptions { allow_loopback_endpoints: true, ..BuildOptions::default() };
    let mut times = Vec::new();
    for generation in 0..5 {
        let started = Instant::now();
        let table = build(&snapshot, &options, generation);
        times.push(started.elapsed());
        assert_eq!(table.routes_admitted(), ROUTES);
    }
    let started = Instant::now();
    let copy = snapshot.clone();
    let clone_time = started.elapsed();
    drop(copy);
    times.sort();
    println!(
        "in-process table build, {ROUTES} routes / {} endpoints: median {:?} (min {:?}, max {:?}); snapshot copy {:?}",
        ROUTES * ENDPOINTS_PER_SERVICE,
        times[2],
        times[0],
        times[4],
        clone_time
    );
}

async fn create_all(client: &Client, objects: Vec<(String, String, Vec<serde_json::Value>)>) {
    let permits = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut tasks = JoinSet::new();
    for (namespace, _, parts) in objects {
        let permit = permits.clone().acquire_owned().await.expect("semaphore");
        let client = client.clone();
        tasks.spawn(async move {
            let params = PostParams::default();
            let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
            let slice_resource = ApiResource::erase::<EndpointSliceV1beta1>(&());
            let slices: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &slice_resource);
            let routes: Api<Route> = Api::namespaced(client, &namespace);
            services
                .create(&params, &serde_json::from_value(parts[0].clone()).expect("service"))
                .await
                .expect("create service");
            slices
                .create(&params, &serde_json::from_value(parts[1].clone()).expect("slice"))
                .await
                .expect("create slice");
            routes
                .create(&params, &serde_json::from_value(parts[2].clone()).expect("route"))
                .await
                .expect("create route");
            drop(permit);
        });
        while let Some(done) = tasks.try_join_next() {
            done.expect("create task");
        }
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("create task");
    }
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines().find_map(|line| line.strip_prefix(name).and_then(|rest| rest.trim().parse().ok())).unwrap_or(0.0)
}
