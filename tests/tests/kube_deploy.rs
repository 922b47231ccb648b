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

/// `deploy/daemonset.yaml` as written.
const DAEMONSET: &str = include_str!("../../deploy/daemonset.yaml");

/// The DaemonSet's rolling update: (maxSurge, maxUnavailable), read from the file: the test apiserver (1.20)
/// predates DaemonSet surge (alpha in 1.21, GA in 1.25) and refuses both the field and `maxUnavailable: 0`.
fn rolling_update_as_written() -> (Option<String>, Option<String>) {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let ds: DaemonSet = serde_saphyr::from_str(DAEMONSET).expect("deploy/daemonset.yaml parses as a DaemonSet");
    let rolling = ds.spec.and_then(|s| s.update_strategy).and_then(|u| u.rolling_update).expect("rolling update");
    let text = |v: Option<IntOrString>| {
        v.map(|v| match v {
            IntOrString::Int(n) => n.to_string(),
            IntOrString::String(s) => s,
        })
    };
    (text(rolling.max_surge), text(rolling.max_unavailable))
}

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
        // Applied in the form the 1.20 test apiserver knows (no surge, so at least one unavailable); the surge
        // itself is checked in the file below.
        &DAEMONSET.replace("      maxSurge: 1\n      maxUnavailable: 0\n", "      maxUnavailable: 1\n"),
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
    // Upgrades: the new pod starts beside the old one (nothing unavailable), which needs no host port declared
    // (the apiserver makes a host-network pod's declared ports host ports), and takes its listeners over a
    // socket on the node.
    assert_eq!(
        rolling_update_as_written(),
        (Some("1".to_owned()), Some("0".to_owned())),
        "maxSurge 1, maxUnavailable 0"
    );
    let container = &pod.containers[0];
    assert!(container.ports.as_ref().is_none_or(Vec::is_empty), "no declared ports: {:?}", container.ports);
    let env = container.env.as_ref().expect("env");
    let socket = env.iter().find(|e| e.name == "ROUTER_HANDOVER_SOCKET").and_then(|e| e.value.clone());
    let socket = socket.expect("ROUTER_HANDOVER_SOCKET set");
    let mounts = container.volume_mounts.as_ref().expect("mounts");
    let mount = mounts.iter().find(|m| socket.starts_with(&format!("{}/", m.mount_path))).expect("a mount holds it");
    let volumes = pod.volumes.as_ref().expect("volumes");
    let volume = volumes.iter().find(|v| v.name == mount.name).expect("the mounted volume");
    assert!(volume.host_path.is_some(), "the socket's directory is on the node, shared by old and new pod");

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
