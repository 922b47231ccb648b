//! `/metrics` and `/debug/*` behind the Kubernetes API, against a real kube-apiserver: with the Kubernetes source,
//! a bearer token is checked by a TokenReview and a SubjectAccessReview for `get` on `routers/metrics` (or
//! `routers/debug`) of `route.openshift.io` named after the router, as openshift/router checks it; the router
//! runs with exactly the rights `deploy/rbac.yaml` grants. Basic credentials keep working beside tokens.

use std::time::Duration;

use router_tests::apiserver::objects::wait_crd_established;
use router_tests::apiserver::{apply_json, apply_yaml, ControlPlane, Identity};
use router_tests::client::{get, KeepAliveClient, Reply};
use router_tests::metrics_text::value_of;
use router_tests::{eventually, start_router_with};

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The bearer token in `identity`'s kubeconfig.
fn token_of(plane: &ControlPlane, identity: Identity) -> String {
    let config = std::fs::read_to_string(plane.kubeconfig(identity)).expect("read kubeconfig");
    let line = config.lines().find_map(|line| line.trim().strip_prefix("token: ")).expect("token line");
    line.trim().to_string()
}

async fn get_as(addr: std::net::SocketAddr, path: &str, authorization: &str) -> Reply {
    KeepAliveClient::connect(addr).await.get_with("admin", path, &[("authorization", authorization)]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_are_reviewed_by_the_apiserver_and_basic_auth_still_works() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(plane) = ControlPlane::start().await else { return };
    let client = plane.client().await;
    apply_yaml(&client, include_str!("../../deploy/crd.yaml")).await;
    apply_yaml(&client, include_str!("../../deploy/rbac.yaml")).await;
    wait_crd_established(&client).await;

    let mut settings = plane.router_settings(Identity::Router);
    settings.router_name = "metrics-test".into();
    settings.stats_auth.stats_username = Some("admin".into());
    settings.stats_auth.stats_password = Some("s3cret".into());
    let router = start_router_with(settings).await;
    let stats = router.stats_addr;
    let admin = format!("Bearer {}", token_of(&plane, Identity::Admin));
    let nobody = format!("Bearer {}", token_of(&plane, Identity::Nobody));

    assert_eq!(get(stats, "admin", "/healthz").await.status, 200, "health stays open");
    assert_eq!(get(stats, "admin", "/healthz/ready").await.status, 200);
    assert_eq!(get(stats, "admin", "/metrics").await.status, 401, "anonymous is refused");
    assert_eq!(get_as(stats, "/metrics", "Bearer not-a-token-the-apiserver-knows").await.status, 401);
    let forbidden = get_as(stats, "/metrics", &nobody).await;
    assert_eq!(forbidden.status, 403, "a user without the right: {}", forbidden.body);
    assert_eq!(get_as(stats, "/debug/routes", &nobody).await.status, 403);

    let page = get_as(stats, "/metrics", &admin).await;
    assert_eq!(page.status, 200, "system:masters may: {}", page.body);
    assert_eq!(value_of(&page.body, "haproxy_up"), 1.0);
    assert_eq!(get_as(stats, "/debug/routes", &admin).await.status, 200);
    // Basic credentials beside the tokens: right ones in, a wrong password out ("admin:s3cret", "admin:wrong").
    assert_eq!(get_as(stats, "/metrics", "Basic YWRtaW46czNjcmV0").await.status, 200);
    assert_eq!(get_as(stats, "/metrics", "Basic YWRtaW46d3Jvbmc=").await.status, 401);

    // What the ingress operator grants Prometheus: get on routers/metrics. It opens /metrics, not /debug/*.
    apply_json(
        &client,
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "router-monitoring"},
            "rules": [{"apiGroups": ["route.openshift.io"], "resources": ["routers/metrics"], "verbs": ["get"]}],
        }),
    )
    .await;
    apply_json(
        &client,
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "router-monitoring-nobody"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "router-monitoring"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "nobody"}],
        }),
    )
    .await;
    let token = nobody.clone();
    eventually("the granted user to read /metrics", Duration::from_secs(30), || {
        let token = token.clone();
        async move { (get_as(stats, "/metrics", &token).await.status == 200).then_some(()) }
    })
    .await;
    assert_eq!(get_as(stats, "/debug/routes", &nobody).await.status, 403, "debug needs routers/debug");
    router.shutdown().await;
}
