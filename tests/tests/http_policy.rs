//! Route options that change requests and responses: forwarded-header policies, header actions (route and
//! router-wide), rewrite-target, X-SSL stripping, the server timeout and custom error pages.

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::client::{get, KeepAliveClient};
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::start_router_with;

const FORWARDED: [&str; 5] =
    ["x-forwarded-for", "x-forwarded-host", "x-forwarded-port", "x-forwarded-proto", "forwarded"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_header_policies() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let with = |name: &'static str, policy: &'static str| -> String {
        let annotations: &'static [(&'static str, &'static str)] = match policy {
            "replace" => &[("haproxy.router.openshift.io/set-forwarded-headers", "replace")],
            "if-none" => &[("haproxy.router.openshift.io/set-forwarded-headers", "if-none")],
            _ => &[("haproxy.router.openshift.io/set-forwarded-headers", "never")],
        };
        RouteSpec { annotations, ..RouteSpec::new("ns", name, name, "web") }.yaml()
    };
    dir.write(
        "all.yaml",
        &[
            service("ns", "web", &[web.addr]),
            with("replace.test", "replace"),
            with("ifnone.test", "if-none"),
            with("never.test", "never"),
        ]
        .concat(),
    );
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    let sent = [("x-forwarded-for", "203.0.113.9"), ("forwarded", "for=203.0.113.9")];

    let replaced = client.get_with("replace.test", "/", &sent).await;
    assert_eq!(replaced.seen_header("x-forwarded-for"), ["127.0.0.1"]);
    assert_eq!(replaced.seen_header("forwarded"), ["for=127.0.0.1;host=replace.test;proto=http"]);

    let if_none = client.get_with("ifnone.test", "/", &sent).await;
    assert_eq!(if_none.seen_header("x-forwarded-for"), ["203.0.113.9"], "kept: the client sent one");
    assert_eq!(if_none.seen_header("x-forwarded-host"), ["ifnone.test"], "added: the client sent none");

    let never = client.get_with("never.test", "/", &sent).await;
    assert_eq!(never.seen_header("x-forwarded-for"), ["203.0.113.9"]);
    for name in &FORWARDED[1..4] {
        assert!(never.seen_header(name).is_empty(), "{name} added under never");
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_actions_rewrite_target_and_x_ssl() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let route = RouteSpec {
        path: "/api",
        annotations: &[("haproxy.router.openshift.io/rewrite-target", "/v2")],
        extra_spec: "  httpHeaders:\n    actions:\n      request:\n      - name: X-Route\n        action: {type: Set, set: {value: 'host=%[req.hdr(host),lower]'}}\n      - name: X-Remove-Me\n        action: {type: Delete}\n      response:\n      - name: X-Frame-Options\n        action: {type: Set, set: {value: SAMEORIGIN}}\n",
        ..RouteSpec::new("ns", "api", "headers.test", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), route.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.routing.http_request_headers = "X-Global:yes:Set,X-Route:global:Set".into();
    settings.routing.http_response_headers = "X-Frame-Options:DENY:Set,X-Powered-By:Delete".into();
    let router = start_router_with(settings).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    let reply = client
        .get_with(
            "Headers.Test",
            "/api/users?id=7",
            &[("x-remove-me", "1"), ("x-ssl-client-verify", "0"), ("X-SSL-Client-DN", "CN=me")],
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.report()["path"], "/v2/users?id=7", "rewrite-target replaced /api");
    assert_eq!(reply.seen_header("x-global"), ["yes"]);
    assert_eq!(reply.seen_header("x-route"), ["host=headers.test"], "the route's action runs after the global one");
    assert!(reply.seen_header("x-remove-me").is_empty());
    assert!(reply.seen_header("x-ssl-client-verify").is_empty() && reply.seen_header("x-ssl-client-dn").is_empty());
    assert_eq!(reply.headers["x-frame-options"], "SAMEORIGIN");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_header_actions_reject_the_route() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let route = RouteSpec {
        extra_spec: "  httpHeaders:\n    actions:\n      response:\n      - name: Set-Cookie\n        action: {type: Set, set: {value: x=1}}\n",
        ..RouteSpec::new("ns", "bad", "bad.test", "web")
    };
    dir.write(
        "all.yaml",
        &[service("ns", "web", &[web.addr]), route.yaml(), RouteSpec::new("ns", "good", "good.test", "web").yaml()]
            .concat(),
    );
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    let outcome = router_tests::route_outcome(&router, "ns", "bad").await;
    assert_eq!(outcome["admitted"], false, "{outcome}");
    assert_eq!(get(router.http_addr, "bad.test", "/").await.status, 503);
    assert_eq!(get(router.http_addr, "good.test", "/").await.status, 200, "other routes keep serving");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_annotation_gives_504_and_errorfile_replaces_503() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let route = RouteSpec {
        annotations: &[("haproxy.router.openshift.io/timeout", "300ms")],
        ..RouteSpec::new("ns", "web", "slow.test", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), route.yaml()].concat());
    let page = dir.path().join(".errorfile-503.http");
    std::fs::write(&page, "HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\nmaintenance window\n")
        .expect("write errorfile");
    let mut settings = Settings::for_loopback(dir.path());
    settings.routing.errorfile_503 = Some(page);
    let router = start_router_with(settings).await;
    assert_eq!(get(router.http_addr, "slow.test", "/slow/100").await.status, 200);
    assert_eq!(get(router.http_addr, "slow.test", "/slow/1000").await.status, 504);
    let missing = get(router.http_addr, "nothing.test", "/").await;
    assert_eq!(missing.status, 503);
    assert_eq!(missing.body, "maintenance window\n");
    router.shutdown().await;
}

/// `curl -si` through the router: the status line and the whole answer.
fn curl(addr: std::net::SocketAddr, host: &str, path: &str) -> (u16, String) {
    let out = std::process::Command::new("curl")
        .args(["-si", "--max-time", "5", "-H", &format!("Host: {host}"), &format!("http://{addr}{path}")])
        .output()
        .expect("run curl");
    let answer = String::from_utf8_lossy(&out.stdout).into_owned();
    let code = answer.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("{answer:?}"));
    (code, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errorfile_404_answers_what_no_route_takes_and_503_stays_for_routes_without_pods() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    dir.write(
        "all.yaml",
        &[
            service("ns", "web", &[web.addr]),
            service("ns", "empty", &[]),
            RouteSpec::new("ns", "web", "web.test", "web").yaml(),
            RouteSpec { path: "/app", ..RouteSpec::new("ns", "app", "app.test", "web") }.yaml(),
            RouteSpec::new("ns", "empty", "empty.test", "empty").yaml(),
            RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "edge", "edge.test", "web") }.yaml(),
        ]
        .concat(),
    );
    let page = dir.path().join(".errorfile-404.http");
    std::fs::write(
        &page,
        "HTTP/1.0 404 Error\r\nCache-Control: private, max-age=0, no-cache, no-store\r\nConnection: close\r\nContent-Type: text/html\r\n\r\n<h1>Application or Document Not Found</h1>\n",
    )
    .expect("write errorfile");
    let syslog = std::net::UdpSocket::bind("127.0.0.1:0").expect("syslog listener");
    syslog.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
    let mut settings = Settings::for_loopback(dir.path());
    settings.routing.errorfile_404 = Some(page);
    settings.access_log.syslog_address = Some(syslog.local_addr().expect("addr").to_string());
    settings.access_log.log_level = "info".into();
    let router = start_router_with(settings).await;

    // An unknown host, a known host's path no route has, and an edge route on :80 (insecure policy None: not
    // in OpenShift's HTTP map): OpenShift's default backend, now the 404 page, logged as HAProxy's deny.
    for (host, path) in [("nowhere.test", "/"), ("app.test", "/other"), ("edge.test", "/")] {
        let (code, answer) = curl(router.http_addr, host, path);
        assert_eq!(code, 404, "{host}{path}: {answer}");
        assert!(answer.contains("\r\ncontent-type: text/html\r\n"), "the file's headers: {answer}");
        assert!(answer.ends_with("\r\n\r\n<h1>Application or Document Not Found</h1>\n"), "{answer}");
        let mut line = vec![0u8; 4096];
        let n = syslog.recv(&mut line).expect("an access-log line");
        let line = String::from_utf8_lossy(&line[..n]);
        assert!(
            line.contains(" openshift_default/<NOSRV> ") && line.contains(" 404 ") && line.contains(" PR-- "),
            "{line}"
        );
    }
    // And on :443, for a terminated connection's request no route takes.
    let port = router.https_addr.port();
    let out = std::process::Command::new("curl")
        .args(["-sik", "--max-time", "5", "--resolve", &format!("nowhere.test:{port}:127.0.0.1")])
        .arg(format!("https://nowhere.test:{port}/"))
        .output()
        .expect("run curl");
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.starts_with("HTTP/1.1 404 "), "{answer}");
    assert!(answer.ends_with("<h1>Application or Document Not Found</h1>\n"), "{answer}");
    // A route without ready pods is still the route's 503, and a route's pods still answer.
    assert_eq!(curl(router.http_addr, "empty.test", "/").0, 503);
    assert_eq!(curl(router.http_addr, "web.test", "/").0, 200);
    assert_eq!(curl(router.http_addr, "app.test", "/app/x").0, 200);
    router.shutdown().await;

    // Without the setting, no route is a 503 as before.
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    assert_eq!(curl(router.http_addr, "nowhere.test", "/").0, 503);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_websocket_tunnel_closes_after_the_tunnel_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let web = TestBackend::start("ws").await;
    let dir = ManifestDir::new();
    let route = RouteSpec {
        annotations: &[("haproxy.router.openshift.io/timeout-tunnel", "500ms")],
        ..RouteSpec::new("ns", "ws", "ws.test", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), route.yaml()].concat());
    // Client timers shorter than the pauses below: a tunnel must only follow its own idle timer.
    let mut settings = Settings::for_loopback(dir.path());
    settings.http_request_timeout = std::time::Duration::from_millis(200);
    settings.routing.keep_alive_timeout = std::time::Duration::from_millis(250);
    let router = start_router_with(settings).await;
    let mut stream = tokio::net::TcpStream::connect(router.http_addr).await.expect("connect");
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: ws.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        .await
        .expect("upgrade");
    let mut head = vec![0u8; 1024];
    let n = stream.read(&mut head).await.expect("101");
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 101"));
    // Activity keeps it open past the timeout...
    for _ in 0..3 {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        stream.write_all(b"ping").await.expect("send");
        let mut echo = [0u8; 4];
        stream.read_exact(&mut echo).await.expect("echo while active");
    }
    // ...silence closes it.
    let mut rest = [0u8; 1];
    let closed =
        tokio::time::timeout(std::time::Duration::from_secs(3), stream.read(&mut rest)).await.expect("closed in time");
    assert_eq!(closed.expect("read"), 0);
    router.shutdown().await;
}
