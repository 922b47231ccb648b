//! Real command-line clients: `curl` (HTTP/1.1 and HTTP/2 over TLS, certificate checks) and
//! `openssl s_client` (which certificate the server presents for an SNI, or without one). Every run is bounded
//! (`--max-time`, a timeout that kills the child) and goes to loopback only (`--resolve`, `--noproxy '*'`).

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

/// What curl reported.
#[derive(Debug, Clone)]
pub struct CurlReply {
    /// curl's exit code (0: transfer done; 35/60: TLS handshake or certificate problem; 52/56: connection
    /// closed or reset...).
    pub exit_code: i32,
    /// HTTP status, 0 when there was no response.
    pub status: u16,
    /// `%{http_version}`: "1.1", "2", or "0" when there was no response.
    pub http_version: String,
    /// Response headers as received (all header blocks, lowercase names are not enforced).
    pub headers: String,
    pub body: String,
    pub stderr: String,
}

impl CurlReply {
    /// The value of the first response header `name` (case-insensitive) in the last header block.
    pub fn header(&self, name: &str) -> Option<String> {
        let last_block = self.headers.split("\r\n\r\n").filter(|b| !b.trim().is_empty()).last().unwrap_or("");
        last_block.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_string())
        })
    }

    /// The test backend's JSON report in the body.
    pub fn report(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("backend report is not JSON ({e}): {} / {}", self.body, self.stderr))
    }

    /// Every value the backend saw for request header `name` (lowercase).
    pub fn seen_header(&self, name: &str) -> Vec<String> {
        crate::backend_report::seen_header(&self.report(), name)
    }
}

/// `curl https://<host>:<port><path>` with `host` resolved to the router's `addr`, plus `extra` arguments
/// (`--cacert FILE`, `-k`, `--http2`, `--http1.1`, `--cert FILE --key FILE`, `-H ...`).
pub async fn curl_https(addr: SocketAddr, host: &str, path: &str, extra: &[&str]) -> CurlReply {
    curl_url(addr, host, &format!("https://{host}:{}{path}", addr.port()), extra).await
}

/// `curl http://<host>:<port><path>` with `host` resolved to `addr`.
pub async fn curl_http(addr: SocketAddr, host: &str, path: &str, extra: &[&str]) -> CurlReply {
    curl_url(addr, host, &format!("http://{host}:{}{path}", addr.port()), extra).await
}

async fn curl_url(addr: SocketAddr, host: &str, url: &str, extra: &[&str]) -> CurlReply {
    let files = tempfile::tempdir().expect("curl temp dir");
    let body_file = files.path().join("body");
    let header_file = files.path().join("headers");
    let resolve = format!("{host}:{}:{}", addr.port(), addr.ip());
    let mut command = Command::new("curl");
    command
        .args(["-sS", "--noproxy", "*", "--max-time", "20", "--resolve", &resolve])
        .arg("-o")
        .arg(&body_file)
        .arg("-D")
        .arg(&header_file)
        .args(["-w", "%{http_code} %{http_version}"])
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .expect("curl ends within 30 s")
        .expect("run curl");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut fields = stdout.split_whitespace();
    let status = fields.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    let http_version = fields.next().unwrap_or("0").to_string();
    CurlReply {
        exit_code: output.status.code().unwrap_or(-1),
        status,
        http_version,
        headers: std::fs::read_to_string(&header_file).unwrap_or_default(),
        body: std::fs::read(&body_file).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// What `openssl s_client` printed.
#[derive(Debug, Clone)]
pub struct SClient {
    pub stdout: String,
    pub stderr: String,
}

impl SClient {
    /// The `subject=` line of the server certificate (e.g. `subject=O = router-tests, CN = www.example.com`).
    pub fn subject(&self) -> Option<&str> {
        self.stdout.lines().find_map(|l| l.trim().strip_prefix("subject="))
    }

    /// The negotiated ALPN protocol, if any.
    pub fn alpn(&self) -> Option<&str> {
        self.stdout.lines().find_map(|l| l.trim().strip_prefix("ALPN protocol:").map(str::trim))
    }
}

/// `openssl s_client -connect <addr>` with `-servername <sni>`, or `-noservername` for `None`; stdin is empty,
/// so it ends after the handshake. `extra` goes on the command line (e.g. `-alpn h2,http/1.1`).
pub async fn s_client(addr: SocketAddr, sni: Option<&str>, extra: &[&str]) -> SClient {
    let mut command = Command::new("openssl");
    command.args(["s_client", "-connect", &addr.to_string()]);
    match sni {
        Some(name) => command.args(["-servername", name]),
        None => command.arg("-noservername"),
    };
    command.args(extra).stdin(Stdio::null()).kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .expect("openssl s_client ends within 30 s")
        .expect("run openssl s_client");
    SClient {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}
