//! The exporter's output for a small topology, line by line as Prometheus reads it.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::text::encode;

use super::*;

fn render(proxies: &ProxyRegistry, topology: &Topology) -> String {
    let mut out = String::new();
    encode(&mut out, &scrape(proxies, topology)).expect("encode");
    out
}

fn topology() -> Topology {
    Topology {
        backends: vec![
            BackendView {
                name: "be_edge_http:shop:web".into(),
                http: true,
                servers: vec![
                    ServerView { id: "pod:web-1:web:http:10.1.0.5:8080".into(), up: true, in_flight: 2 },
                    ServerView { id: "pod:web-2:web:http:10.1.0.6:8080".into(), up: false, in_flight: 0 },
                ],
            },
            BackendView {
                name: "be_tcp:shop:db".into(),
                http: false,
                servers: vec![ServerView { id: "ept:db:5432:10.1.0.7:5432".into(), up: true, in_flight: 1 }],
            },
            BackendView { name: "openshift_default".into(), http: true, servers: vec![] },
        ],
    }
}

#[test]
fn publishes_openshifts_families_as_gauges_with_its_labels() {
    let proxies = ProxyRegistry::default();
    let web: Arc<str> = "be_edge_http:shop:web".into();
    let backend = proxies.backend_named(&web);
    let server = proxies.server_named(&web, "pod:web-1:web:http:10.1.0.5:8080");
    for code in [200, 200, 404, 503] {
        backend.count_response(code);
        backend.count_session();
        server.count_response(code);
        server.count_session();
    }
    server.observe_response_time(Duration::from_millis(40));
    backend.connection_errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let _open = proxies.frontend(Frontend::Public).open_session();
    proxies.frontend(Frontend::Public).count_response(200);

    let text = render(&proxies, &topology());
    for expected in [
        "# TYPE haproxy_up gauge",
        "haproxy_up 1",
        "# TYPE haproxy_frontend_http_responses_total gauge",
        r#"haproxy_frontend_http_responses_total{frontend="public",code="2xx"} 1"#,
        r#"haproxy_frontend_current_sessions{frontend="public"} 1"#,
        r#"haproxy_frontend_connections_total{frontend="public"} 1"#,
        "# TYPE haproxy_backend_http_responses_total gauge",
        r#"haproxy_backend_http_responses_total{backend="https-edge",namespace="shop",route="web",code="2xx"} 2"#,
        r#"haproxy_backend_http_responses_total{backend="https-edge",namespace="shop",route="web",code="4xx"} 1"#,
        r#"haproxy_backend_connection_errors_total{backend="https-edge",namespace="shop",route="web"} 1"#,
        r#"haproxy_backend_up{backend="https-edge",namespace="shop",route="web"} 1"#,
        r#"haproxy_backend_current_sessions{backend="https-edge",namespace="shop",route="web"} 2"#,
        r#"haproxy_backend_connections_total{backend="https-edge",namespace="shop",route="web"} 4"#,
        r#"haproxy_backend_up{backend="tcp",namespace="shop",route="db"} 1"#,
        r#"haproxy_backend_up{backend="other/openshift_default",namespace="",route=""} 0"#,
        r#"haproxy_server_up{server="10.1.0.5:8080",namespace="shop",route="web",pod="web-1",service="web"} 1"#,
        r#"haproxy_server_up{server="10.1.0.6:8080",namespace="shop",route="web",pod="web-2",service="web"} 0"#,
        r#"haproxy_server_http_responses_total{server="10.1.0.5:8080",namespace="shop",route="web",pod="web-1",service="web",code="5xx"} 1"#,
        r#"haproxy_server_http_average_response_latency_milliseconds{server="10.1.0.5:8080",namespace="shop",route="web",pod="web-1",service="web"} 40"#,
        r#"haproxy_server_current_sessions{server="10.1.0.7:5432",namespace="shop",route="db",pod="",service="db"} 1"#,
        r#"haproxy_exporter_server_threshold{type="current"} 3"#,
        r#"haproxy_exporter_server_threshold{type="limit"} 500"#,
    ] {
        assert!(text.contains(expected), "missing {expected}:\n{text}");
    }
    assert!(!text.contains("# TYPE haproxy_backend_http_responses_total counter"), "{text}");
    assert!(!text.contains(r#"route="db",code="#), "a tcp backend has no HTTP columns:\n{text}");
}

#[test]
fn the_connection_limit_is_published_once_set() {
    let proxies = ProxyRegistry::default();
    assert!(!render(&proxies, &Topology::default()).contains("haproxy_max_connections"));
    proxies.set_max_connections(50000);
    let text = render(&proxies, &Topology::default());
    assert!(text.contains("# TYPE haproxy_max_connections gauge\nhaproxy_max_connections 50000\n"), "{text}");
}

#[test]
fn a_backend_that_left_the_table_loses_its_rows_and_counters() {
    let proxies = ProxyRegistry::default();
    let web: Arc<str> = "be_edge_http:shop:web".into();
    proxies.backend_named(&web).count_response(200);
    let text = render(&proxies, &Topology::default());
    assert!(!text.contains("be_edge_http") && !text.contains(r#"route="web""#), "{text}");
    assert!(proxies.existing_backend(&web).is_none());
}

#[test]
fn server_rows_stop_past_the_threshold() {
    let servers = (0..=DEFAULT_SERVER_THRESHOLD)
        .map(|i| ServerView { id: format!("pod:p{i}:s:http:10.2.0.1:{i}"), up: true, in_flight: 0 })
        .collect();
    let topology = Topology { backends: vec![BackendView { name: "be_http:ns:big".into(), http: true, servers }] };
    let text = render(&ProxyRegistry::default(), &topology);
    assert!(!text.contains("haproxy_server_up"), "server rows past the threshold");
    assert!(text.contains(r#"haproxy_backend_up{backend="http",namespace="ns",route="big"} 1"#), "{text}");

    let raised = ProxyRegistry::default();
    raised.set_server_threshold(DEFAULT_SERVER_THRESHOLD + 1);
    let text = render(&raised, &topology);
    assert!(text.contains("haproxy_server_up{"), "ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD raised");
    assert!(text.contains(r#"haproxy_exporter_server_threshold{type="limit"} 501"#), "{text}");
}
