//! Manifest changes take effect by swapping the table: open connections live on, bad files change nothing.

use std::time::Duration;

use router_tests::backend::TestBackend;
use router_tests::client::KeepAliveClient;
use router_tests::manifests::{route, service, ManifestDir};
use router_tests::{eventually, next_generation, start_router};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifest_change_applies_while_a_keep_alive_connection_stays_open() {
    let (blue, green) = (TestBackend::start("blue").await, TestBackend::start("green").await);
    let dir = ManifestDir::new();
    dir.write("services.yaml", &[service("ns", "blue", &[blue.addr]), service("ns", "green", &[green.addr])].concat());
    dir.write("route.yaml", &route("ns", "app", "app.example.com", "/", "blue"));
    let router = start_router(dir.path()).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    assert_eq!(client.get("app.example.com", "/").await.backend(), "blue");
    let generation = router.table.load().generation;

    dir.write("route.yaml", &route("ns", "app", "app.example.com", "/", "green"));
    next_generation(&router, generation).await;
    assert!(client.is_open(), "the table swap must not close client connections");
    assert_eq!(client.get("app.example.com", "/").await.backend(), "green");

    dir.write("new.yaml", &route("ns", "new", "new.example.com", "/", "blue"));
    eventually("the new route", Duration::from_secs(10), || {
        let table = router.table.load();
        async move { table.lookup("new.example.com", "/").map(|_| ()) }
    })
    .await;
    assert_eq!(client.get("new.example.com", "/").await.backend(), "blue");
    assert!(client.is_open());
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_manifest_keeps_the_last_good_table_and_is_counted() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    dir.write("svc.yaml", &service("ns", "web", &[web.addr]));
    dir.write("route.yaml", &route("ns", "web", "keep.example.com", "/", "web"));
    let router = start_router(dir.path()).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    assert_eq!(client.get("keep.example.com", "/").await.backend(), "web");

    dir.write("route.yaml", "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: web\n  namespace: ns\nspec:\n  host: [unclosed\n");
    let metrics = router.metrics.clone();
    eventually("the manifest error metric", Duration::from_secs(10), || {
        let text = metrics.render();
        async move { text.contains("router_manifest_errors_total 1").then_some(()) }
    })
    .await;
    assert_eq!(client.get("keep.example.com", "/").await.backend(), "web", "last good route stays live");

    // Fixing the file applies the fix.
    let mut generation = router.table.load().generation;
    dir.write("route.yaml", &route("ns", "web", "fixed.example.com", "/", "web"));
    // The table published for the bad file's update may come after its error was counted: wait for tables
    // until one serves the fix (a bounded number; each wait fails after 10 s).
    for _ in 0..3 {
        if client.get("fixed.example.com", "/").await.backend() == "web" {
            break;
        }
        generation = next_generation(&router, generation).await;
    }
    assert_eq!(client.get("fixed.example.com", "/").await.backend(), "web");
    assert_eq!(client.get("keep.example.com", "/").await.status, 503);
    router.shutdown().await;
}
