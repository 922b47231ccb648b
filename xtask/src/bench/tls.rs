//! The TLS side of the clients: one OpenSSL client configuration for every TLS client the bench runs (wrk, h2load,
//! curl, openssl s_client: TLS 1.3 with AES-256-GCM only, docs/benchmarking.md §4), the wrk script that sends a
//! route's host name as SNI while connecting to a loopback address, and probes: does an endpoint serve a route over
//! TLS (curl), and what does a client negotiate there, and does a second connection resume the session (s_client).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context as _};

use super::process::{output_within, output_within_from};
use super::results::Negotiated;

/// The one TLS 1.3 cipher suite every client offers.
pub const CIPHERSUITE: &str = "TLS_AES_256_GCM_SHA384";

/// The OpenSSL configuration of the clients (`OPENSSL_CONF`): TLS 1.3 only, AES-256-GCM only.
pub fn write_client_config(dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join("openssl-client.cnf");
    let text = format!(
        "# cargo xtask bench: every TLS client offers TLS 1.3 with {CIPHERSUITE} only (docs/benchmarking.md, section 4)
openssl_conf = openssl_init
[openssl_init]
ssl_conf = ssl_sect
[ssl_sect]
system_default = system_default_sect
[system_default_sect]
MinProtocol = TLSv1.3
Ciphersuites = {CIPHERSUITE}
"
    );
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// A wrk script that connects to `ip` (the URL's port) whatever the URL's host resolves to: wrk sends the URL's
/// host as SNI, so the URL names the route and the script names the address. Written once per address.
pub fn write_connect_script(dir: &Path, ip: IpAddr) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("connect-{ip}.lua"));
    let text = format!(
        "-- connect to {ip} whatever the URL's host is (cargo xtask bench): SNI and Host name the route
function wrk.resolve(host, service)
  wrk.addrs = wrk.lookup(\"{ip}\", service)
end
"
    );
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// `GET /` for `host` over TLS at `addr` with curl (verified against `ca`): the status and HTTP version.
pub fn https_get(
    addr: SocketAddr,
    host: &str,
    http2: bool,
    ca: &Path,
    client_config: &Path,
) -> anyhow::Result<(u16, String)> {
    let url = format!("https://{host}:{}/", addr.port());
    let resolve = format!("{host}:{}:{}", addr.port(), addr.ip());
    let mut command = Command::new("curl");
    command
        .args(["-sS", "--max-time", "5", "--cacert"])
        .arg(ca)
        .args(["--resolve", &resolve, if http2 { "--http2" } else { "--http1.1" }])
        .args(["-o", "/dev/null", "-w", "%{http_code} %{http_version}", &url])
        .env("OPENSSL_CONF", client_config);
    let out = output_within(&mut command, Duration::from_secs(10)).context("running curl")?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let (status, version) = text.split_once(' ').unwrap_or((&text, ""));
    Ok((status.parse().with_context(|| format!("curl printed {text:?}"))?, version.to_string()))
}

/// Two `openssl s_client` connections for `host` at `addr`, each sending one HTTP/1.1 request and reading the
/// answer (so TLS 1.3 session tickets arrive): the first's parameters, and whether the second resumed.
pub fn negotiate(addr: SocketAddr, host: &str, work: &Path, client_config: &Path) -> anyhow::Result<Negotiated> {
    let request = work.join("s_client-request.txt");
    std::fs::write(&request, format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"))
        .context("writing the probe request")?;
    let session = work.join(format!("s_client-{}-{}.session", addr.ip(), addr.port()));
    let _ = std::fs::remove_file(&session);
    let first = s_client(addr, host, &request, ("-sess_out", &session), client_config)?;
    let mut negotiated = parse_s_client(&first);
    anyhow::ensure!(!negotiated.protocol.is_empty(), "no TLS handshake: {}", last_lines(&first, 4));
    let second = s_client(addr, host, &request, ("-sess_in", &session), client_config)?;
    negotiated.resumed = parse_s_client(&second).resumed;
    Ok(negotiated)
}

fn s_client(
    addr: SocketAddr,
    host: &str,
    request: &Path,
    session: (&str, &Path),
    client_config: &Path,
) -> anyhow::Result<String> {
    let stdin = std::fs::File::open(request).context("opening the probe request")?;
    let mut command = Command::new("openssl");
    command
        .args(["s_client", "-connect", &addr.to_string(), "-servername", host, "-ign_eof", session.0])
        .arg(session.1)
        .env("OPENSSL_CONF", client_config);
    let out =
        output_within_from(&mut command, Stdio::from(stdin), Duration::from_secs(10)).context("openssl s_client")?;
    Ok(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// `New, TLSv1.3, Cipher is TLS_AES_256_GCM_SHA384` / `Reused, ...` and `Server Temp Key: X25519, 253 bits`.
fn parse_s_client(text: &str) -> Negotiated {
    let mut out = Negotiated::default();
    for line in text.lines().map(str::trim) {
        let summary = line.strip_prefix("New, ").map(|rest| (false, rest));
        if let Some((resumed, rest)) = summary.or_else(|| line.strip_prefix("Reused, ").map(|rest| (true, rest))) {
            if let Some((protocol, cipher)) = rest.split_once(", Cipher is ") {
                out.protocol = protocol.to_string();
                out.cipher = cipher.to_string();
                out.resumed = resumed;
            }
        } else if let Some(rest) = line.strip_prefix("Server Temp Key: ") {
            out.group = rest.split(',').next().unwrap_or("").to_string();
        }
    }
    out
}

fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s_client_summaries_give_the_parameters_and_resumption() {
        let new = "CONNECTED(00000003)\n---\nServer Temp Key: X25519, 253 bits\n---\nNew, TLSv1.3, Cipher is \
                   TLS_AES_256_GCM_SHA384\nServer public key is 2048 bit\n";
        let parsed = parse_s_client(new);
        assert_eq!(parsed.protocol, "TLSv1.3");
        assert_eq!(parsed.cipher, "TLS_AES_256_GCM_SHA384");
        assert_eq!(parsed.group, "X25519");
        assert!(!parsed.resumed);
        assert!(parse_s_client("Reused, TLSv1.3, Cipher is TLS_AES_256_GCM_SHA384\n").resumed);
    }
}
