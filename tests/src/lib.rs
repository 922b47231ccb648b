//! Harness for the router's integration tests: reporting backends, a recording raw pod, manifest files, an
//! in-process router on free loopback ports, a keep-alive client, and polling helpers.

pub mod aioquic;
pub mod apiserver;
pub mod backend_report;
pub mod binaries;
pub mod cli;
pub mod client;
pub mod h3_client;
pub mod handshakes;
pub mod load;
pub mod manifests;
pub mod metrics_text;
pub mod netns;
pub mod ocsp_responder;
pub mod pki;
pub mod proxy_header;
pub mod recording_pod;
pub mod tls_client;

/// The reporting backends live in their own crate (the demo runs them without this harness).
pub use test_backend as backend;

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use router::config::Settings;
use router::server::RunningRouter;

/// Polls `check` until it returns `Some`, or panics with `what` after `limit`.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out after {limit:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts a router on loopback for `manifests` and waits for its first table.
pub async fn start_router(manifests: &Path) -> RunningRouter {
    start_router_with(Settings::for_loopback(manifests)).await
}

pub async fn start_router_with(settings: Settings) -> RunningRouter {
    let router = router::server::start(settings).await.expect("router starts");
    let readiness = router.readiness.clone();
    eventually("the first route table", Duration::from_secs(10), || {
        let ready = readiness.not_ready_reason().is_none();
        async move { ready.then_some(()) }
    })
    .await;
    router
}

/// Starts a router like `start_router_with` and returns it with the address of its :443 listener.
pub async fn start_tls_router(settings: Settings) -> (RunningRouter, SocketAddr) {
    let router = start_router_with(settings).await;
    let https_addr = router.https_addr;
    (router, https_addr)
}

/// Reads from `stream` until the peer closes it (EOF or reset) or `limit` passes. Returns what arrived and
/// whether the connection was closed.
pub async fn read_until_closed<S>(stream: &mut S, limit: Duration) -> (Vec<u8>, bool)
where
    S: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    let deadline = tokio::time::Instant::now() + limit;
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
            Err(_) => return (received, false),
            Ok(Ok(0)) | Ok(Err(_)) => return (received, true),
            Ok(Ok(n)) => received.extend_from_slice(&buffer[..n]),
        }
    }
}

/// Waits until the live table's generation exceeds `after` (a manifest change was applied).
pub async fn next_generation(router: &RunningRouter, after: u64) -> u64 {
    let table = router.table.clone();
    eventually("a new route table", Duration::from_secs(10), || {
        let generation = table.load().generation;
        async move { (generation > after).then_some(generation) }
    })
    .await
}

/// The `/debug/routes` entry of route `namespace/name`, or `Value::Null` when the router does not list it
/// (not in its shard).
pub async fn route_outcome(router: &RunningRouter, namespace: &str, name: &str) -> serde_json::Value {
    let reply = client::get(router.stats_addr, "admin", "/debug/routes").await;
    let body: serde_json::Value = serde_json::from_str(&reply.body).expect("debug/routes is JSON");
    body["routes"]
        .as_array()
        .and_then(|routes| routes.iter().find(|r| r["namespace"] == namespace && r["name"] == name))
        .cloned()
        .unwrap_or(serde_json::Value::Null)
}
