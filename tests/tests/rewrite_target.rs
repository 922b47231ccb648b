//! `haproxy.router.openshift.io/rewrite-target` through a real client: curl sends each request, the test backend
//! reports the path it received. The values are rows of OpenShift's template and sanitiser tests; what the pod
//! sees is what the OpenShift router's HAProxy sends for them, except that a `#` HAProxy would send raw arrives
//! percent-encoded (a request target cannot hold it).

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::cli::curl_http;
use router_tests::manifests::{service, ManifestDir, RouteSpec};
use router_tests::{route_outcome, start_router_with};

const REWRITE_TARGET: &str = "haproxy.router.openshift.io/rewrite-target";

enum Seen {
    /// The pod receives this path and query.
    Path(&'static str),
    /// HAProxy fails the substitution and answers with this status.
    Status(u16),
}

/// (host, spec.path, annotation value, request path and query, what happens).
const ROWS: &[(&str, &str, &str, &str, Seen)] = &[
    ("root.test", "/app", "/", "/app/x/y?q=1", Seen::Path("/x/y?q=1")),
    ("root-bare.test", "/app", "/", "/app", Seen::Path("/")),
    ("nonroot.test", "/api/v1", "/v2", "/api/v1/users?id=7", Seen::Path("/v2/users?id=7")),
    ("quote-path.test", "/foo'", "/", "/foo'/x", Seen::Path("/x")),
    ("no-path.test", "", "/app", "/foo/bar", Seen::Path("/app/foo/bar")),
    ("no-path-root.test", "", "/", "/foo", Seen::Path("/foo")),
    ("slash-path.test", "/", "/app", "/foo", Seen::Path("/appfoo")),
    ("percent.test", "/p", "/%foo", "/p/x", Seen::Path("/%foo/x")),
    ("percent-doubled.test", "/p", "/%%foo", "/p/x", Seen::Path("/%foo/x")),
    ("percent-odd.test", "/p", "/%%%foo", "/p/x", Seen::Path("/%%%foo/x")),
    ("single-quotes.test", "/p", r"/'foo'foo\'", "/p/x", Seen::Path("/foofoo'/x")),
    ("double-quotes.test", "/p", r#"/"foo"foo\""#, "/p/x", Seen::Path("/foofoo\"/x")),
    ("backslashes.test", "/p", r"/\\\foo\\\", "/p/x", Seen::Path(r"/\foo\/x")),
    ("comment.test", "/p", "/v2#frag", "/p/x?q=1", Seen::Path("/v2?q=1")),
    // HAProxy sends `/v2#frag/x` raw.
    ("escaped-comment.test", "/p", r"/v2\#frag", "/p/x", Seen::Path("/v2%23frag/x")),
    ("no-expansion.test", "/p", "/a$b%%[src]", "/p/x", Seen::Path("/a$b%[src]/x")),
    ("not-a-path.test", "/p", "v2", "/p/x", Seen::Path("/p/x")),
    ("leading-space.test", "/p", " /v2", "/p/x", Seen::Path("/p/x")),
    ("trailing-backslash.test", "/p", r"/v2\\#", "/p/x", Seen::Status(500)),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pod_sees_the_path_haproxy_would_send() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let mut manifests = service("ns", "web", &[web.addr]);
    for (index, (host, path, value, _, _)) in ROWS.iter().enumerate() {
        let name = format!("r{index}");
        let annotations = [(REWRITE_TARGET, *value)];
        let route = RouteSpec { path, annotations: &annotations, ..RouteSpec::new("ns", &name, host, "web") };
        manifests.push_str(&route.yaml());
    }
    dir.write("all.yaml", &manifests);
    let router = start_router_with(Settings::for_loopback(dir.path())).await;

    for (index, (host, path, value, request, seen)) in ROWS.iter().enumerate() {
        let outcome = route_outcome(&router, "ns", &format!("r{index}")).await;
        assert_eq!(outcome["admitted"], true, "{host}: {outcome}");
        let reply = curl_http(router.http_addr, host, request, &["--path-as-is"]).await;
        let case = format!("spec.path {path:?}, rewrite-target {value:?}, request {request:?}");
        match seen {
            Seen::Path(want) => {
                assert_eq!(reply.status, 200, "{case}: {reply:?}");
                assert_eq!(reply.report()["path"], *want, "{case}");
            }
            Seen::Status(want) => {
                assert_eq!(reply.status, *want, "{case}: {reply:?}");
                assert!(reply.header("x-backend").is_none(), "{case}: no pod answered");
            }
        }
    }
    router.shutdown().await;
}
