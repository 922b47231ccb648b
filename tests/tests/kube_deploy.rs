//! `deploy/` against a real kube-apiserver: every manifest is accepted, the Service gets its health check node
//! port, and the router runs with exactly the rights `deploy/rbac.yaml` grants (and is refused clearly without
//! them).

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Api;
use router::server::StartError;
use router::source::kube::KubeError;
use router_tests::apiserver::objects::{
    admitted, apply_all, endpoint_slices, namespace, route, service, wait_admitted, wait_crd_established,
};
use router_tests::apiserver::{apply_json, apply_yaml, ControlPlane, Identity};
use router_tests::backend::TestBackend;
use router_tests::client::get;
use router_tests::start_router_with;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_manifests_are_accepted_and_grant_the_router_just_enough() {
    let Some(plane) = ControlPlane::start().await else { return };
    let client = plane.client().await;

    // Without any rights the router refuses to start and names what it may not do.
    let refused = router::server::start(plane.router_settings(Identity::Nobody)).await;
    match refused {
        Err(StartError::Kube(KubeError::Forbidden { resource, .. })) => {
            assert!(resource.contains("route"), "{resource}")
        }
        Err(other) => panic!("expected an RBAC refusal, got {other}"),
        Ok(_) => panic!("the router started without any rights"),
    }

    let mut applied = apply_yaml(&client, include_str!("../../deploy/crd.yaml")).await;
    wait_crd_established(&client).await;
    for manifest in [
        include_str!("../../deploy/rbac.yaml"),
        include_str!("../../deploy/service.yaml"),
        include_str!("../../deploy/daemonset.yaml"),
    ] {
        applied.extend(apply_yaml(&client, manifest).await);
    }
    println!("applied: {}", applied.join(", "));

    let services: Api<Service> = Api::namespaced(client.clone(), "openshift-ingress");
    let lb = services.get("router-default").await.expect("the router Service exists");
    let spec = lb.spec.expect("service spec");
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Local"));
    assert!(spec.health_check_node_port.is_some_and(|port| port > 0), "a healthCheckNodePort is allocated");
    let daemonsets: Api<DaemonSet> = Api::namespaced(client.clone(), "openshift-ingress");
    let ds = daemonsets.get("router-default").await.expect("the DaemonSet exists");
    let pod = ds.spec.expect("daemonset spec").template.spec.expect("pod spec");
    assert_eq!(pod.host_network, Some(true));
    assert_eq!(pod.service_account_name.as_deref(), Some("router"));

    // The router's service account: can list routes, cannot read pods.
    let as_router = router::source::kube::connect(Some(&plane.kubeconfig(Identity::Router))).await.expect("client");
    let pods: Api<Pod> = Api::all(as_router);
    assert!(pods.list(&Default::default()).await.is_err(), "the router must not be able to list pods");

    let web = TestBackend::start("web").await;
    apply_all(&client, [namespace("app", &[]), service("app", "web")]).await;
    apply_all(&client, endpoint_slices("app", "web", "web", &[web.addr])).await;
    apply_json(&client, route("app", "web", "web.example.com", "/", "web", &[])).await;
    // ROUTER_UPDATE_STATUS=false: serves, writes nothing.
    let mut silent_settings = plane.router_settings(Identity::Router);
    silent_settings.router_name = "silent".into();
    silent_settings.update_status = false;
    let silent = start_router_with(silent_settings).await;
    assert_eq!(get(silent.http_addr, "web.example.com", "/").await.backend(), "web");

    let router = start_router_with(plane.router_settings(Identity::Router)).await;
    assert_eq!(get(router.http_addr, "web.example.com", "/").await.backend(), "web");
    wait_admitted(&client, "app", "web", "default", "True", "").await;
    assert_eq!(admitted(&client, "app", "web", "silent").await, None, "ROUTER_UPDATE_STATUS=false writes no status");
    silent.shutdown().await;
    router.shutdown().await;
}
