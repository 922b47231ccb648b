//! An h2c pod (appProtocol h2c) gets the client's host as HTTP/2's `:authority` and no Host header, as HAProxy
//! sends it (nginx answers 400 to a request carrying both), whether the client spoke HTTP/1.1 or HTTP/1.0.

use router_tests::backend::TestBackend;
use router_tests::cli::curl_http;
use router_tests::manifests::{route, service_with_app_protocol, ManifestDir};
use router_tests::start_router;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2c_pod_gets_the_clients_host_as_authority_and_no_host_header() {
    let pod = TestBackend::start_h2c("h2c").await;
    let dir = ManifestDir::new();
    let yaml =
        [service_with_app_protocol("ns", "app", &[pod.addr], "h2c"), route("ns", "app", "h2c.example.com", "/", "app")];
    dir.write("app.yaml", &yaml.concat());
    let router = start_router(dir.path()).await;
    for client_version in ["--http1.1", "--http1.0"] {
        let reply = curl_http(router.http_addr, "h2c.example.com", "/p?q=1", &[client_version]).await;
        assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
        let report = reply.report();
        assert_eq!(report["version"], "HTTP/2.0", "{client_version}: {report}");
        assert_eq!(report["path"], "/p?q=1", "{client_version}: {report}");
        let client_host = format!("h2c.example.com:{}", router.http_addr.port());
        assert_eq!(report["authority"], client_host.as_str(), "{client_version}: {report}");
        assert_eq!(reply.seen_header("host"), Vec::<String>::new(), "{client_version}: {report}");
    }
    router.shutdown().await;
}
