//! aioquic (Python, from PyPI), the second HTTP/3 client, independent of the quinn + h3 stack the router serves
//! with: `clients/aioquic_h3.py` run by the interpreter of the venv `cargo xtask setup` makes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

/// Where `cargo xtask setup` makes the venv (xtask's `aioquic::VERSION`).
const DEFAULT_PYTHON: &str = "/var/cache/router-dev/aioquic-1.7.2/bin/python3";

/// The venv's interpreter, or `None` when the test may be skipped (it was not made and
/// `ROUTER_TEST_REQUIRE_AIOQUIC`, which `cargo xtask test` sets, is unset).
pub fn python() -> Option<PathBuf> {
    let python = std::env::var_os("ROUTER_TEST_AIOQUIC_PYTHON").map_or(PathBuf::from(DEFAULT_PYTHON), PathBuf::from);
    if python.is_file() {
        return Some(python);
    }
    if std::env::var_os("ROUTER_TEST_REQUIRE_AIOQUIC").is_some() {
        panic!("ROUTER_TEST_REQUIRE_AIOQUIC is set but {} is missing", python.display());
    }
    eprintln!(
        "SKIPPED: {} missing; `cargo xtask setup` makes the aioquic venv (set ROUTER_TEST_REQUIRE_AIOQUIC=1 to \
         make this a failure)",
        python.display()
    );
    None
}

/// One request's parameters.
pub struct AioquicRequest<'a> {
    pub addr: SocketAddr,
    pub sni: &'a str,
    pub authority: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    /// A body of this many bytes of the pattern `i % 251`.
    pub body_bytes: usize,
    /// The CA file the router's certificate is checked against.
    pub ca_file: &'a Path,
    /// Accept any server certificate instead.
    pub insecure: bool,
}

/// Runs the client; its JSON result (`status`, `headers`, `body`, or `error`).
pub async fn aioquic_request(python: &Path, request: &AioquicRequest<'_>) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/aioquic_h3.py");
    let mut command = Command::new(python);
    command
        .arg(script)
        .args(["--host", &request.addr.ip().to_string(), "--port", &request.addr.port().to_string()])
        .args(["--sni", request.sni, "--authority", request.authority, "--path", request.path])
        .args(["--method", request.method, "--body-bytes", &request.body_bytes.to_string()])
        .arg("--ca")
        .arg(request.ca_file)
        .kill_on_drop(true);
    if request.insecure {
        command.arg("--insecure");
    }
    let output = tokio::time::timeout(Duration::from_secs(40), command.output())
        .await
        .expect("aioquic client finished in time")
        .expect("aioquic client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!("aioquic output is JSON ({e}): {stdout}\n{}", String::from_utf8_lossy(&output.stderr))
    })
}

/// The body `clients/aioquic_h3.py` sends for `len` bytes.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}
