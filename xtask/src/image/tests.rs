//! The image's root filesystem alone runs the router: the tree from `assemble` (the debug binary here, the
//! release one in the image), entered with chroot(8) as the image's non-root user (or `unshare --root` in a
//! user namespace when not root), serves a manifest route to a pod on loopback with a 200, and runs the
//! ROUTER_THREADS it was given.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use manifest_gen::{documents, BenchRoute, Pod};

use super::rootfs::{assemble, BINARY_PATH};
use crate::cargo::{cargo, debug_dir};

const POD_ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\nfrom-a-pod\n";

/// A pod answering up to 50 connections with `POD_ANSWER`, each given 5 s.
fn start_pod() -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the pod");
    let addr = listener.local_addr().expect("pod address");
    std::thread::spawn(move || {
        for stream in listener.incoming().take(50) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && head.len() < 65536 {
                match stream.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let _ = stream.write_all(POD_ANSWER);
        }
    });
    addr
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// One GET through the router; the raw answer, or None when it could not be had.
fn get(router: SocketAddr, host: &str) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&router, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let path = if host == "admin" { "/metrics" } else { "/" };
    stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes()).ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok()?;
    Some(String::from_utf8_lossy(&answer).into_owned())
}

/// The router started inside `rootfs` with nothing from the host's environment.
fn spawn_inside(rootfs: &Path, envs: &[(&str, String)]) -> Child {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut command = if root {
        let mut command = Command::new(tool("chroot"));
        command.arg("--userspec=65532:65532").arg(rootfs).arg(BINARY_PATH);
        command
    } else {
        let mut command = Command::new(tool("unshare"));
        command.args(["--user", "--map-root-user"]).arg(format!("--root={}", rootfs.display())).arg(BINARY_PATH);
        command
    };
    command.env_clear().envs(envs.iter().map(|(k, v)| (*k, v.as_str())));
    command.stdin(Stdio::null()).stdout(Stdio::inherit()).stderr(Stdio::inherit());
    command.spawn().expect("start the router inside the root filesystem")
}

/// `name` found on this process's PATH (the child's environment is cleared, PATH included).
fn tool(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file()).unwrap_or_else(|| PathBuf::from(name))
}

struct Cleanup {
    child: Child,
    rootfs: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.rootfs);
    }
}

#[test]
fn the_root_filesystem_alone_runs_the_router_and_serves_a_route() {
    cargo(&["build", "--package", "router-user", "--bin", "router"]).expect("build the router");
    let rootfs = std::env::temp_dir().join(format!("router-image-test-{}", std::process::id()));
    let files = assemble(&debug_dir().join("router"), &rootfs).expect("assemble the root filesystem");
    assert!(files.iter().any(|f| f.ends_with("libc.so.6")), "ldd's libraries are in: {files:?}");

    let pod = start_pod();
    let route =
        BenchRoute::http("image", &[Pod { name: "image-pod".into(), ip: Ipv4Addr::LOCALHOST, port: pod.port() }]);
    let manifests = documents(&[&route.service_object(), &route.endpoint_slice(), &route.route()]);
    std::fs::create_dir_all(rootfs.join("manifests")).expect("manifest dir");
    std::fs::write(rootfs.join("manifests/app.yaml"), manifests).expect("write manifests");

    let (http_port, stats_port) = (free_port(), free_port());
    let envs = [
        ("ROUTER_MANIFESTS", "/manifests".to_string()),
        ("ROUTER_BIND_IP", "127.0.0.1".to_string()),
        ("ROUTER_SERVICE_HTTP_PORT", http_port.to_string()),
        ("ROUTER_SERVICE_HTTPS_PORT", free_port().to_string()),
        ("STATS_PORT", stats_port.to_string()),
        ("ROUTER_ALLOW_LOOPBACK_ENDPOINTS", "true".to_string()),
        ("ROUTER_THREADS", "2".to_string()),
    ];
    let mut running = Cleanup { child: spawn_inside(&rootfs, &envs), rootfs: rootfs.clone() };

    let router = SocketAddr::from((Ipv4Addr::LOCALHOST, http_port));
    let deadline = Instant::now() + Duration::from_secs(30);
    let answer = loop {
        if let Some(answer) = get(router, &route.host).filter(|a| a.starts_with("HTTP/1.1 200")) {
            break answer;
        }
        if let Ok(Some(status)) = running.child.try_wait() {
            panic!("the router exited inside the root filesystem: {status}");
        }
        assert!(Instant::now() < deadline, "no 200 through the router within 30 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(answer.ends_with("from-a-pod\n"), "{answer}");
    // ROUTER_THREADS reached the binary's runtime.
    let metrics = get(SocketAddr::from((Ipv4Addr::LOCALHOST, stats_port)), "admin").expect("/metrics");
    assert!(metrics.contains("\nrouter_worker_threads 2\n"), "{metrics}");
    let _ = running.child.kill();
}
