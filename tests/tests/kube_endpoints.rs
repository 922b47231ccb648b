//! `ROUTER_WATCH_ENDPOINTS` against a real kube-apiserver (root only): the router reads core `Endpoints`
//! instead of EndpointSlices. A 1.20 apiserver refuses loopback addresses in Endpoints, so the pod is a
//! `test-backend` inside a network namespace this test creates, joined to the host by a veth pair:
//! host `rke<pid>` 10.204.<k>.1/30 <-> pod `veth-pod` 10.204.<k>.2/30.

use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use router_tests::apiserver::objects::{
    apply_all, endpoint_slices, namespace, route, service, wait_admitted, wait_crd_established,
};
use router_tests::apiserver::{apply_json, apply_yaml, ControlPlane, Identity};
use router_tests::client::get;
use router_tests::netns::NetNs;
use router_tests::{eventually, start_router_with};

const PREFIX: &str = "rtkep";
const POD_PORT: u16 = 8080;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn core_endpoints_are_used_when_asked_for() {
    // SAFETY: geteuid has no preconditions and only reads the process credentials.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED kube_endpoints: needs root (network namespaces)");
        return;
    }
    let Some(plane) = ControlPlane::start().await else { return };
    NetNs::remove_stale(PREFIX);
    let pod_ns = NetNs::new(PREFIX);
    let subnet = std::process::id() % 250;
    let (host_ip, pod_ip) = (format!("10.204.{subnet}.1"), format!("10.204.{subnet}.2"));
    let host_if = format!("rke{}", std::process::id() % 100_000);
    run(Command::new("ip").args([
        "link",
        "add",
        &host_if,
        "type",
        "veth",
        "peer",
        "name",
        "veth-pod",
        "netns",
        pod_ns.name(),
    ]));
    run(Command::new("ip").args(["addr", "add", &format!("{host_ip}/30"), "dev", &host_if]));
    run(Command::new("ip").args(["link", "set", &host_if, "up"]));
    pod_ns.ip(&["addr", "add", &format!("{pod_ip}/30"), "dev", "veth-pod"]);
    pod_ns.ip(&["link", "set", "veth-pod", "up"]);
    let pod_addr: SocketAddr = format!("{pod_ip}:{POD_PORT}").parse().expect("pod address");
    let _pod = Pod::start(&pod_ns, pod_addr);

    let client = plane.client().await;
    apply_yaml(&client, include_str!("../../deploy/crd.yaml")).await;
    apply_yaml(&client, include_str!("../../deploy/rbac.yaml")).await;
    wait_crd_established(&client).await;
    apply_all(&client, [namespace("legacy", &[]), service("legacy", "web")]).await;
    apply_json(&client, endpoints("legacy", "web", Some(&pod_ip))).await;
    // A slice to a dead loopback port: ignored when Endpoints are watched.
    apply_all(&client, endpoint_slices("legacy", "web", "web", &["127.0.0.1:1".parse().expect("addr")])).await;
    apply_json(&client, route("legacy", "web", "legacy.example.com", "/", "web", &[])).await;

    let mut settings = plane.router_settings(Identity::Router);
    settings.watch_endpoints = true;
    let router = start_router_with(settings).await;
    let reply = get(router.http_addr, "legacy.example.com", "/").await;
    assert_eq!((reply.status.as_u16(), reply.backend()), (200, "pod"), "served from the Endpoints address");
    wait_admitted(&client, "legacy", "web", "default", "True", "").await;

    apply_json(&client, endpoints("legacy", "web", None)).await;
    let addr = router.http_addr;
    eventually("the emptied Endpoints to leave no pod", Duration::from_secs(20), || async move {
        (get(addr, "legacy.example.com", "/").await.status == 503).then_some(())
    })
    .await;
    router.shutdown().await;
}

/// Core Endpoints of `service` with one ready address on port `http`, or none.
fn endpoints(namespace: &str, service: &str, ip: Option<&str>) -> serde_json::Value {
    let subsets = match ip {
        Some(ip) => serde_json::json!([{
            "addresses": [{"ip": ip}],
            "ports": [{"name": "http", "port": POD_PORT, "protocol": "TCP"}]
        }]),
        None => serde_json::json!([]),
    };
    serde_json::json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": service, "namespace": namespace},
        "subsets": subsets
    })
}

/// The `test-backend` binary serving as pod `pod` inside a namespace; killed by PID on drop.
struct Pod(Child);

impl Pod {
    fn start(ns: &NetNs, addr: SocketAddr) -> Pod {
        let child = ns
            .command(router_tests::binaries::test_backend_binary())
            .arg(format!("pod={addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start test-backend in the pod namespace");
        let pod = Pod(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < deadline, "the pod backend did not come up on {addr}");
            std::thread::sleep(Duration::from_millis(50));
        }
        pod
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(command: &mut Command) {
    let out = command.output().unwrap_or_else(|e| panic!("running {command:?}: {e}"));
    assert!(out.status.success(), "{command:?}: {}", String::from_utf8_lossy(&out.stderr));
}
