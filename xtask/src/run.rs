//! `cargo xtask run`: the embedded default. Starts demo pods (test-backend on 127.0.0.1:18081-18083) and the
//! router on `deploy/examples/`, prints curl lines to try, and serves until Ctrl-C.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::cargo::{build_binaries, debug_dir, workspace_root};
use crate::setup;

const HTTP_PORT: &str = "8080";
const HTTPS_PORT: &str = "8443";
const STATS_PORT: &str = "1936";
const PODS: [&str; 3] = ["hello-1=127.0.0.1:18081", "hello-2=127.0.0.1:18082", "api-1=127.0.0.1:18083"];

/// Kills a child we started, by PID, when dropped.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn run() -> anyhow::Result<()> {
    setup::ensure_build()?;
    build_binaries()?;
    let bin = debug_dir();
    let _pods = Owned(Command::new(bin.join("test-backend")).args(PODS).spawn().context("starting test-backend")?);

    let mut router = Command::new(bin.join("router"));
    router.arg("--manifests").arg(workspace_root().join("deploy/examples")).arg("--allow-loopback-endpoints");
    // Flags only where the environment does not already choose, so ROUTER_* variables still work here.
    default_flag(&mut router, "ROUTER_BIND_IP", "--listen-addr", "127.0.0.1");
    default_flag(&mut router, "ROUTER_SERVICE_HTTP_PORT", "--http-port", HTTP_PORT);
    default_flag(&mut router, "ROUTER_SERVICE_HTTPS_PORT", "--https-port", HTTPS_PORT);
    default_flag(&mut router, "STATS_PORT", "--stats-port", STATS_PORT);
    let mut router = Owned(router.spawn().context("starting the router")?);

    wait_ready(&mut router.0)?;
    let http = std::env::var("ROUTER_SERVICE_HTTP_PORT").unwrap_or_else(|_| HTTP_PORT.into());
    let https = std::env::var("ROUTER_SERVICE_HTTPS_PORT").unwrap_or_else(|_| HTTPS_PORT.into());
    let stats = std::env::var("STATS_PORT").unwrap_or_else(|_| STATS_PORT.into());
    println!(
        "\nThe router serves deploy/examples/ on 127.0.0.1:{http} and :{https} (admin on :{stats}). Try:\n\n  \
         curl -i -H 'Host: hello.apps.example.com' http://127.0.0.1:{http}/\n  \
         curl -ik --resolve secure.apps.example.com:{https}:127.0.0.1 https://secure.apps.example.com:{https}/\n  \
         curl -i -H 'Host: secure.apps.example.com' http://127.0.0.1:{http}/   (302 to https)\n  \
         curl -i -H 'Host: hello.apps.example.com' http://127.0.0.1:{http}/api/users\n  \
         curl -i -H 'Host: unknown.example.com' http://127.0.0.1:{http}/\n  \
         curl -s http://127.0.0.1:{stats}/metrics | grep router_http_requests\n\n\
         Edit the files in deploy/examples/ and the router applies them live. Ctrl-C stops everything.\n"
    );
    let status = router.0.wait().context("waiting for the router")?;
    println!("router exited: {status}");
    Ok(())
}

fn default_flag(command: &mut Command, env: &str, flag: &str, value: &str) {
    if std::env::var_os(env).is_none() {
        command.arg(flag).arg(value);
    }
}

/// Polls /healthz/ready on the admin port until it answers 200 (or the router exits).
fn wait_ready(router: &mut Child) -> anyhow::Result<()> {
    let port = std::env::var("STATS_PORT").unwrap_or_else(|_| STATS_PORT.into());
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some(status) = router.try_wait()? {
            bail!("the router exited before becoming ready: {status}");
        }
        if ready_status(&port).is_some_and(|line| line.contains(" 200 ")) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("the router did not become ready within 30 s")
}

fn ready_status(port: &str) -> Option<String> {
    let mut stream = TcpStream::connect(format!("127.0.0.1:{port}")).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(b"GET /healthz/ready HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.lines().next().map(str::to_string)
}
