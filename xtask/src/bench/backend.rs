//! The pods: one Debian nginx (one worker, no master) listening on 4 loopback addresses, serving a ~1 KiB body
//! for every path, a 1 MiB file at /large.bin and a 64 MiB file at /huge.bin: plain HTTP on one port, TLS (with
//! HTTP/2) on another for the passthrough and reencrypt pods, and TLS without session resumption on a third (the
//! direct contender of the full-handshake scenario).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use super::loadgen::CLIENT_CPU;
use super::pki::Pki;
use super::process::{free_port, http_status, log_tail, wait_until, Proc};
use super::routes::Pod;

/// Pod addresses: 127.0.0.11 .. 127.0.0.14 (all of 127.0.0.0/8 is loopback on Linux; no alias needed).
pub const POD_IPS: [Ipv4Addr; 4] = [
    Ipv4Addr::new(127, 0, 0, 11),
    Ipv4Addr::new(127, 0, 0, 12),
    Ipv4Addr::new(127, 0, 0, 13),
    Ipv4Addr::new(127, 0, 0, 14),
];
pub const BODY_BYTES: usize = 1024;
pub const LARGE_PATH: &str = "/large.bin";
pub const LARGE_BYTES: usize = 1024 * 1024;
/// The passthrough download (docs/benchmarking.md §8: a large file from a TLS pod).
pub const HUGE_PATH: &str = "/huge.bin";
pub const HUGE_BYTES: usize = 64 * 1024 * 1024;

pub struct Backends {
    /// Plain HTTP pods.
    pub pods: Vec<Pod>,
    /// The same pods on their TLS port (session resumption on: nginx's default tickets).
    pub tls_pods: Vec<Pod>,
    /// The TLS port without session resumption (no tickets, no cache).
    pub tls_full_port: u16,
    pub proc: Proc,
    pub config: PathBuf,
}

impl Backends {
    pub fn start(dir: &Path, pki: &Pki) -> anyhow::Result<Backends> {
        let www = dir.join("www");
        std::fs::create_dir_all(dir.join("tmp")).context("nginx temp dir")?;
        std::fs::create_dir_all(&www).context("nginx root")?;
        std::fs::write(www.join("body.html"), body()).context("writing the body")?;
        std::fs::write(www.join(LARGE_PATH.trim_start_matches('/')), pattern(LARGE_BYTES))
            .context("writing the large file")?;
        std::fs::write(www.join(HUGE_PATH.trim_start_matches('/')), pattern(HUGE_BYTES))
            .context("writing the huge file")?;
        let pods_on = |port| -> Vec<Pod> {
            POD_IPS.iter().enumerate().map(|(i, ip)| Pod { name: format!("bench-pod-{i}"), ip: *ip, port }).collect()
        };
        let pods = pods_on(free_port(&POD_IPS)?);
        let tls_pods = pods_on(free_port(&POD_IPS)?);
        let tls_full_port = free_port(&POD_IPS)?;
        let config = dir.join("nginx.conf");
        std::fs::write(&config, config_text(dir, &pods, &tls_pods, tls_full_port, pki))
            .context("writing nginx.conf")?;
        let args = vec![
            "-p".into(),
            dir.display().to_string(),
            "-e".into(),
            dir.join("error.log").display().to_string(),
            "-c".into(),
            config.display().to_string(),
        ];
        let proc = Proc::spawn("nginx", CLIENT_CPU, Path::new("nginx"), &args, &dir.join("nginx.out"))?;
        let backends = Backends { pods, tls_pods, tls_full_port, proc, config };
        for pod in &backends.pods {
            let addr = SocketAddr::from((pod.ip, pod.port));
            let up = wait_until(Duration::from_secs(5), Duration::from_millis(20), || {
                http_status(addr, "pod", "/", Duration::from_secs(1)).is_ok_and(|code| code == 200)
            });
            up.with_context(|| {
                format!(
                    "nginx does not answer on {addr}; {}\n{}",
                    log_tail(&dir.join("error.log"), 10),
                    log_tail(&dir.join("nginx.out"), 10)
                )
            })?;
        }
        Ok(backends)
    }

    pub fn first(&self) -> SocketAddr {
        SocketAddr::from((self.pods[0].ip, self.pods[0].port))
    }

    /// The first pod's TLS port (with resumption, or without for `full` handshakes).
    pub fn first_tls(&self, full: bool) -> SocketAddr {
        SocketAddr::from((self.tls_pods[0].ip, if full { self.tls_full_port } else { self.tls_pods[0].port }))
    }
}

fn body() -> String {
    let mut body = String::from("<!doctype html><title>bench</title><p>");
    while body.len() < BODY_BYTES - 5 {
        body.push_str("lorem ipsum ");
    }
    body.truncate(BODY_BYTES - 5);
    body.push_str("</p>\n");
    body
}

fn pattern(bytes: usize) -> Vec<u8> {
    (0..bytes).map(|i| (i % 251) as u8).collect()
}

fn config_text(dir: &Path, pods: &[Pod], tls_pods: &[Pod], tls_full_port: u16, pki: &Pki) -> String {
    let tmp = dir.join("tmp").display().to_string();
    let listens: String =
        pods.iter().map(|pod| format!("    listen {}:{} backlog=4096;\n", pod.ip, pod.port)).collect();
    let tls_listens = |port: Option<u16>| -> String {
        let port_of = |pod: &Pod| port.unwrap_or(pod.port);
        tls_pods.iter().map(|pod| format!("    listen {}:{} ssl http2 backlog=4096;\n", pod.ip, port_of(pod))).collect()
    };
    let locations = format!(
        "    root {dir}/www;\n    location = {LARGE_PATH} {{ }}\n    location = {HUGE_PATH} {{ }}\n    \
         location / {{ try_files /body.html =404; }}\n",
        dir = dir.display()
    );
    let tls = format!(
        "    ssl_certificate {};\n    ssl_certificate_key {};\n    ssl_protocols TLSv1.2 TLSv1.3;\n",
        pki.pod_certificate.display(),
        pki.pod_key.display()
    );
    format!(
        "# Generated by `cargo xtask bench`: the pods (one worker, pinned with the load generator).
daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
events {{ worker_connections 8192; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  types {{ text/html html; application/octet-stream bin; }}
  sendfile on;
  keepalive_timeout 300s;
  keepalive_requests 1000000;
  open_file_cache max=16 inactive=600s;
  open_file_cache_valid 600s;
  server {{
{listens}{locations}  }}
  # TLS pods (passthrough, reencrypt), session tickets on (nginx's default)
  server {{
{tls_on}{tls}{locations}  }}
  # TLS without session resumption: the direct contender of the full-handshake scenario
  server {{
{tls_off}{tls}    ssl_session_tickets off;
    ssl_session_cache off;
{locations}  }}
}}
",
        dir = dir.display(),
        tls_on = tls_listens(None),
        tls_off = tls_listens(Some(tls_full_port)),
    )
}
