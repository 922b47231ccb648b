//! The bounded SYN flood beside the flood scenario's load: hping3 in the client namespace sending SYNs to the
//! nodePort (incrementing source ports), at most `count` of them, started before the measured run and stopped at
//! its end in any case. hping3 runs on the load's CPU; how many SYNs it really sent per second is reported (it
//! cannot always keep its interval on a shared core).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::bail;

use super::super::beside::Beside;
use super::super::loadgen::{shell_line, CLIENT_CPU};
use super::super::netns::NetNs;
use super::super::process::{log_tail, Proc};
use super::super::results::xdp::FloodSent;

/// A running flood.
pub struct Flood {
    proc: Proc,
    log: PathBuf,
    started: Instant,
}

/// hping3's arguments: `count` SYNs to `target`, one per `interval_us`, quiet.
pub fn args(target: SocketAddr, interval_us: u32, count: u64) -> Vec<String> {
    vec![
        "-q".into(),
        "-S".into(),
        "-p".into(),
        target.port().to_string(),
        "-i".into(),
        format!("u{interval_us}"),
        "-c".into(),
        count.to_string(),
        target.ip().to_string(),
    ]
}

/// The flood's command line, for the results.
pub fn command_line(target: SocketAddr, interval_us: u32, count: u64) -> String {
    format!(
        "taskset -c {CLIENT_CPU} nsenter --net=<client> -- {}",
        shell_line("hping3", &args(target, interval_us, count))
    )
}

impl Flood {
    /// Starts the flood from `client` and lets it run `warmup` (so the measured run starts under flood).
    pub fn start(
        client: &NetNs,
        target: SocketAddr,
        interval_us: u32,
        count: u64,
        warmup: Duration,
        log: &Path,
    ) -> anyhow::Result<Flood> {
        let started = Instant::now();
        let mut proc =
            client.spawn("hping3", CLIENT_CPU, Path::new("hping3"), &args(target, interval_us, count), log, &[])?;
        std::thread::sleep(warmup);
        if !proc.running() {
            bail!("hping3 exited at once; {}", log_tail(log, 5));
        }
        Ok(Flood { proc, log: log.to_path_buf(), started })
    }

    /// Stops it (hping3 prints its statistics on SIGTERM) and reads how many SYNs it sent.
    pub fn finish(mut self) -> FloodSent {
        self.proc.stop();
        let seconds = self.started.elapsed().as_secs_f64();
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        FloodSent { packets: transmitted(&text).unwrap_or(0), seconds }
    }
}

impl Beside for Flood {
    fn pids(&self) -> Vec<u32> {
        vec![self.proc.pid()]
    }
}

/// `12345 packets transmitted, 0 packets received, 100% packet loss` -> 12345.
fn transmitted(text: &str) -> Option<u64> {
    text.lines().find(|line| line.contains("packets transmitted"))?.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_line_gives_the_packets_sent() {
        let text = "HPING 10.211.0.2 (xb-c 10.211.0.2): S set, 40 headers + 0 data bytes\n\n\
                    --- 10.211.0.2 hping statistic ---\n\
                    48211 packets transmitted, 20 packets received, 100% packet loss\n";
        assert_eq!(transmitted(text), Some(48_211));
        assert_eq!(transmitted("hping3: unknown host"), None);
    }
}
