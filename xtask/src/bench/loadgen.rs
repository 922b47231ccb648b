//! The load generators: wrk (peak requests/s, latency distribution, connection-per-request, bulk) and h2load
//! (latency at a fixed request rate), their exact command lines, and parsing of what they print.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context as _};

use std::io::Read as _;

use super::process::{die_with_parent, output_within, signal_child, wait_until};
use super::stats::quantile;

/// CPU of the load generator and the backends.
pub const CLIENT_CPU: u32 = 0;

/// How much longer than its duration a load generator may run before it is killed.
pub const RUN_SLACK: Duration = Duration::from_secs(30);

/// A random path per request, so HAProxy's map cache (keyed by host+path) never hits (docs/benchmarking.md §3).
pub const RANDOM_PATH_SCRIPT: &str = "-- random path per request (cargo xtask bench)
math.randomseed(os.time())
request = function()
  return wrk.format(nil, \"/p/\" .. math.random(1, 2000000000))
end
";

/// One wrk invocation.
#[derive(Clone, Debug)]
pub struct Wrk {
    pub url: String,
    pub host: Option<String>,
    pub connections: u32,
    pub duration: Duration,
    /// Lua script (random path).
    pub script: Option<PathBuf>,
    /// `Connection: close` on every request: one connection per request.
    pub close: bool,
    /// `--timeout` (wrk's default is 2 s: too short for a 64 MiB body on a shared core).
    pub timeout: Option<Duration>,
    /// Environment of the run (`OPENSSL_CONF` for TLS).
    pub env: Vec<(String, String)>,
    /// Run inside this network namespace (`nsenter --net=PATH`), e.g. `/run/netns/NAME`.
    pub netns: Option<PathBuf>,
}

impl Wrk {
    /// A keep-alive run with no script and wrk's defaults.
    pub fn new(url: String, host: Option<String>, connections: u32, duration: Duration) -> Wrk {
        Wrk {
            url,
            host,
            connections,
            duration,
            script: None,
            close: false,
            timeout: None,
            env: Vec::new(),
            netns: None,
        }
    }

    pub fn args(&self) -> Vec<String> {
        let mut args = vec!["-c".into(), CLIENT_CPU.to_string()];
        if let Some(netns) = &self.netns {
            args.extend(["nsenter".into(), format!("--net={}", netns.display()), "--".into()]);
        }
        args.extend([
            "wrk".into(),
            "-t1".into(),
            format!("-c{}", self.connections),
            format!("-d{}s", self.duration.as_secs()),
            "--latency".into(),
        ]);
        if let Some(timeout) = self.timeout {
            args.push(format!("--timeout={}s", timeout.as_secs()));
        }
        if let Some(script) = &self.script {
            args.extend(["-s".into(), script.display().to_string()]);
        }
        if let Some(host) = &self.host {
            args.extend(["-H".into(), format!("Host: {host}")]);
        }
        if self.close {
            args.extend(["-H".into(), "Connection: close".into()]);
        }
        args.push(self.url.clone());
        args
    }

    /// The command as a shell line (for the results).
    pub fn command_line(&self) -> String {
        env_prefix(&self.env) + &shell_line("taskset", &self.args())
    }

    pub fn run(&self) -> anyhow::Result<WrkOutput> {
        let limit = self.duration + self.timeout.unwrap_or_default() + RUN_SLACK;
        let mut command = Command::new("taskset");
        command.args(self.args()).envs(self.env.iter().map(|(k, v)| (k, v)));
        let out = output_within(&mut command, limit).context("running wrk")?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            bail!("wrk failed ({}): {}{}", out.status, text, String::from_utf8_lossy(&out.stderr));
        }
        parse_wrk(&text)
    }

    /// Starts wrk in the background (stopped early with SIGINT, after which it prints its summary).
    pub fn spawn(&self) -> anyhow::Result<std::process::Child> {
        let mut command = Command::new("taskset");
        command.args(self.args());
        die_with_parent(&mut command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting wrk")
    }
}

/// What one wrk run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WrkOutput {
    pub requests: u64,
    pub seconds: f64,
    pub requests_per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub non_2xx_3xx: u64,
    pub socket_errors: u64,
    pub bytes_per_second: f64,
}

pub fn parse_wrk(text: &str) -> anyhow::Result<WrkOutput> {
    let mut out = WrkOutput::default();
    let mut seen_rps = false;
    for line in text.lines() {
        let line = line.trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        if line.contains(" requests in ") {
            out.requests = words.first().and_then(|n| n.parse().ok()).context("request count")?;
            out.seconds = words.get(3).map(|d| d.trim_end_matches(',')).and_then(duration_seconds).unwrap_or(0.0);
        } else if let Some(rest) = line.strip_prefix("Requests/sec:") {
            out.requests_per_second = rest.trim().parse().context("Requests/sec")?;
            seen_rps = true;
        } else if let Some(rest) = line.strip_prefix("Transfer/sec:") {
            out.bytes_per_second = bytes(rest.trim()).context("Transfer/sec")?;
        } else if let Some(rest) = line.strip_prefix("Non-2xx or 3xx responses:") {
            out.non_2xx_3xx = rest.trim().parse().context("Non-2xx")?;
        } else if let Some(rest) = line.strip_prefix("Socket errors:") {
            out.socket_errors = rest
                .split(',')
                .filter_map(|part| part.split_whitespace().nth(1))
                .filter_map(|n| n.parse::<u64>().ok())
                .sum();
        } else if words.len() == 2 && words[0] == "50%" {
            out.p50_ms = duration_seconds(words[1]).context("p50")? * 1e3;
        } else if words.len() == 2 && words[0] == "99%" {
            out.p99_ms = duration_seconds(words[1]).context("p99")? * 1e3;
        }
    }
    if !seen_rps {
        bail!("no Requests/sec in wrk output: {text}");
    }
    Ok(out)
}

/// wrk's durations: `812.00us`, `1.20ms`, `2.00s`, `1.00m`.
fn duration_seconds(text: &str) -> Option<f64> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    Some(number * scale)
}

/// wrk's sizes: `70.00MB` (binary units).
fn bytes(text: &str) -> Option<f64> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit {
        "B" => 1.0,
        "KB" => 1024.0,
        "MB" => 1024.0 * 1024.0,
        "GB" => 1024.0 * 1024.0 * 1024.0,
        "TB" => 1024.0f64.powi(4),
        _ => return None,
    };
    Some(number * scale)
}

/// One h2load run: HTTP/1.1 keep-alive at a fixed total request rate, or HTTP/2 over TLS at peak.
#[derive(Clone, Debug)]
pub struct H2load {
    pub url: String,
    pub host: Option<String>,
    pub clients: u32,
    /// Requests per second in total (spread over the clients); none: as fast as it goes.
    pub rate: Option<u32>,
    /// HTTP/1.1 (`--h1`); else HTTP/2 (over TLS: by ALPN).
    pub http1: bool,
    /// Concurrent streams per HTTP/2 connection (`-m`).
    pub streams: u32,
    pub duration: Duration,
    pub log: PathBuf,
    /// Connect here whatever the URL's host is (the URL's host is the SNI).
    pub connect_to: Option<SocketAddr>,
    /// `OPENSSL_CONF` and the one TLS 1.3 cipher suite (h2load sets its own list, so it is passed too).
    pub client_config: Option<PathBuf>,
}

impl H2load {
    /// HTTP/1.1 keep-alive at `rate` requests/s in total.
    pub fn fixed_rate(
        url: String,
        host: Option<String>,
        clients: u32,
        rate: u32,
        duration: Duration,
        log: PathBuf,
    ) -> H2load {
        H2load {
            url,
            host,
            clients,
            rate: Some(rate),
            http1: true,
            streams: 1,
            duration,
            log,
            connect_to: None,
            client_config: None,
        }
    }

    pub fn args(&self) -> Vec<String> {
        let mut args = vec!["-c".into(), CLIENT_CPU.to_string(), "h2load".into()];
        if self.http1 {
            args.push("--h1".into());
        }
        args.extend(["-t1".into(), format!("-c{}", self.clients)]);
        if self.streams > 1 {
            args.push(format!("-m{}", self.streams));
        }
        if let Some(rate) = self.rate {
            args.push(format!("--rps={}", f64::from(rate) / f64::from(self.clients.max(1))));
        }
        args.extend([
            format!("-D{}", self.duration.as_secs()),
            "--warm-up-time=1".into(),
            format!("--log-file={}", self.log.display()),
        ]);
        if self.client_config.is_some() {
            args.push(format!("--tls13-ciphers={}", super::tls::CIPHERSUITE));
        }
        if let Some(addr) = self.connect_to {
            args.push(format!("--connect-to={addr}"));
        }
        if let Some(host) = &self.host {
            // h2load builds Host from :authority; a `host:` header would be sent as a second Host (400).
            args.extend(["-H".into(), format!(":authority: {host}")]);
        }
        args.push(self.url.clone());
        args
    }

    fn env(&self) -> Vec<(String, String)> {
        self.client_config.iter().map(|c| ("OPENSSL_CONF".to_string(), c.display().to_string())).collect()
    }

    pub fn command_line(&self) -> String {
        env_prefix(&self.env()) + &shell_line("taskset", &self.args())
    }

    pub fn run(&self) -> anyhow::Result<LatencyOutput> {
        let _ = std::fs::remove_file(&self.log);
        let limit = self.duration + RUN_SLACK;
        let mut command = Command::new("taskset");
        command.args(self.args()).envs(self.env());
        run_logged("h2load", &mut command, limit, &self.log, self.duration)
    }
}

/// Latency at a fixed rate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyOutput {
    pub requests: u64,
    pub seconds: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub failed: u64,
}

/// h2load's `--log-file`: `start_us<TAB>status<TAB>duration_us` per request; status `-1` for a stream that
/// ended in error. Status `0` is a stream that started in the warm-up (`--warm-up-time`) and got its response
/// head there but finished after it: h2load counts it as succeeded without recording its status, so it is
/// neither a failure nor a measured latency.
pub fn parse_h2load_log(text: &str) -> anyhow::Result<LatencyOutput> {
    let mut latencies = Vec::new();
    let mut failed = 0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let (Some(status), Some(duration)) = (fields.get(1), fields.get(2)) else { continue };
        let status: i64 = status.trim().parse().unwrap_or(-1);
        if status == 0 {
            continue;
        }
        if !(200..400).contains(&status) {
            failed += 1;
            continue;
        }
        if let Ok(us) = duration.trim().parse::<f64>() {
            latencies.push(us / 1e3);
        }
    }
    if latencies.is_empty() {
        bail!("h2load logged no successful request");
    }
    latencies.sort_unstable_by(f64::total_cmp);
    let at = |q: f64| quantile(&latencies, q);
    Ok(LatencyOutput {
        requests: latencies.len() as u64,
        seconds: 0.0,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        p999_ms: at(0.999),
        failed,
    })
}

/// The failed requests of a run, each counted once: h2load's summary has them all (errored streams, 4xx/5xx,
/// timeouts, requests lost with a connection, which have no log line); `logged`, the log's count, stands in
/// should the summary be missing.
/// Runs a load generator that writes h2load's per-request log (h2load, h3load) and reads what it measured over
/// `duration`.
pub fn run_logged(
    name: &str,
    command: &mut Command,
    limit: Duration,
    log: &Path,
    duration: Duration,
) -> anyhow::Result<LatencyOutput> {
    let out = output_within(command, limit).with_context(|| format!("running {name}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!("{name} failed ({}): {}{}", out.status, text, String::from_utf8_lossy(&out.stderr));
    }
    let log = std::fs::read_to_string(log).with_context(|| format!("reading {}", log.display()))?;
    let mut parsed = parse_h2load_log(&log)?;
    parsed.failed = failed_requests(parsed.failed, &text);
    parsed.seconds = duration.as_secs_f64();
    Ok(parsed)
}

fn failed_requests(logged: u64, summary: &str) -> u64 {
    logged.max(parse_h2load_failures(summary))
}

/// `requests: 100 total, 100 started, 100 done, 98 succeeded, 2 failed, 2 errored, 0 timeout`: the failed ones.
/// h2load's `failed` already holds the errored (reset or lost) and the timed-out requests besides the
/// responses outside 2xx/3xx.
fn parse_h2load_failures(text: &str) -> u64 {
    let Some(line) = text.lines().find(|l| l.trim_start().starts_with("requests:")) else { return 0 };
    line.split(',')
        .find(|part| part.trim().ends_with("failed"))
        .and_then(|part| part.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// `NAME=value ` for each variable of a command's environment.
fn env_prefix(env: &[(String, String)]) -> String {
    env.iter().map(|(k, v)| format!("{k}={v} ")).collect()
}

/// `program args...` quoted for a POSIX shell where needed.
pub fn shell_line(program: &str, args: &[String]) -> String {
    let mut line = program.to_string();
    for arg in args {
        line.push(' ');
        if arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,%@".contains(c)) {
            line.push_str(arg);
        } else {
            line.push('\'');
            line.push_str(&arg.replace('\'', r"'\''"));
            line.push('\'');
        }
    }
    line
}

/// Writes the random-path script into `dir`.
pub fn write_random_path_script(dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join("random-path.lua");
    std::fs::write(&path, RANDOM_PATH_SCRIPT).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Stops a background wrk with SIGINT (it then prints its summary) and parses it.
pub fn finish_background_wrk(mut child: std::process::Child) -> anyhow::Result<WrkOutput> {
    signal_child(&child, libc::SIGINT);
    let exited =
        wait_until(Duration::from_secs(5), Duration::from_millis(10), || !matches!(child.try_wait(), Ok(None)));
    if exited.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        bail!("wrk did not stop after SIGINT");
    }
    let mut text = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut text).context("reading wrk output")?;
    }
    parse_wrk(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRK: &str = "Running 10s test @ http://127.0.0.1:8080/
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.02ms  200.00us   5.00ms   90.00%
    Req/Sec    63.00k     2.00k   66.00k    80.00%
  Latency Distribution
     50%  812.00us
     75%    1.05ms
     90%    1.20ms
     99%    1.91ms
  632000 requests in 10.00s, 700.00MB read
  Socket errors: connect 1, read 2, write 0, timeout 4
  Non-2xx or 3xx responses: 5
Requests/sec:  63200.00
Transfer/sec:     70.00MB
";

    #[test]
    fn wrk_summary_is_parsed_with_units() {
        let out = parse_wrk(WRK).expect("parse");
        assert_eq!(out.requests, 632_000);
        assert!((out.seconds - 10.0).abs() < 1e-9);
        assert!((out.requests_per_second - 63_200.0).abs() < 1e-9);
        assert!((out.p50_ms - 0.812).abs() < 1e-9);
        assert!((out.p99_ms - 1.91).abs() < 1e-9);
        assert_eq!(out.socket_errors, 7);
        assert_eq!(out.non_2xx_3xx, 5);
        assert!((out.bytes_per_second - 70.0 * 1024.0 * 1024.0).abs() < 1e-6);
        assert!(parse_wrk("unable to connect").is_err());
    }

    #[test]
    fn h2load_log_gives_percentiles_and_failures() {
        let mut log = String::new();
        for i in 1..=100 {
            log.push_str(&format!("1700000000{i:06}\t200\t{}\n", i * 10));
        }
        log.push_str("1700000000999999\t503\t5\n");
        let out = parse_h2load_log(&log).expect("parse");
        assert_eq!(out.requests, 100);
        assert_eq!(out.failed, 1);
        assert!((out.p50_ms - 0.51).abs() < 0.011, "{}", out.p50_ms);
        assert!((out.p99_ms - 0.99).abs() < 0.011, "{}", out.p99_ms);
        let summary = "requests: 100 total, 100 started, 100 done, 97 succeeded, 3 failed, 3 errored, 1 timeout";
        assert_eq!(parse_h2load_failures(summary), 3, "the timed-out request is one of the failed ones");
    }

    #[test]
    fn h2load_warm_up_streams_are_not_failures() {
        // Three streams of the warm-up finished after it (status 0), one stream was reset (-1), one 503.
        let mut log = String::new();
        for i in 0..3 {
            log.push_str(&format!("1700000000{i:06}\t0\t{}\n", 9000 + i));
        }
        for i in 10..110 {
            log.push_str(&format!("1700000001{i:06}\t200\t{}\n", i * 10));
        }
        log.push_str("1700000002000000\t-1\t70\n1700000002000001\t503\t5\n");
        let out = parse_h2load_log(&log).expect("parse");
        assert_eq!(out.failed, 2, "the reset stream and the 503, not the warm-up ones");
        assert_eq!(out.requests, 100);
        assert!(out.p999_ms < 2.0, "warm-up streams are not measured: {}", out.p999_ms);
        let summary = "requests: 102 total, 102 started, 102 done, 101 succeeded, 2 failed, 1 errored, 0 timeout";
        assert_eq!(failed_requests(out.failed, summary), 2, "each failed request once");
        let lost = "requests: 102 total, 102 started, 102 done, 90 succeeded, 12 failed, 12 errored, 0 timeout";
        assert_eq!(failed_requests(out.failed, lost), 12, "requests lost with a connection have no log line");
        assert_eq!(failed_requests(out.failed, "no summary"), 2);
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let mut wrk = Wrk::new(
            "http://127.0.0.1:80/".into(),
            Some("r00005.bench.example.com".into()),
            64,
            Duration::from_secs(10),
        );
        wrk.close = true;
        assert_eq!(
            wrk.command_line(),
            "taskset -c 0 wrk -t1 -c64 -d10s --latency -H 'Host: r00005.bench.example.com' -H 'Connection: close' \
             http://127.0.0.1:80/"
        );
    }
}
