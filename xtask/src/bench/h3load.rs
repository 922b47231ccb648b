//! One h3load run (the workspace's own HTTP/3 load generator, `h3load/`): HTTP/3 to the edge route at peak with
//! HTTP/2's connections and streams, its log read with h2load's parser (same format).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::loadgen::{run_logged, shell_line, LatencyOutput, CLIENT_CPU, RUN_SLACK};

#[derive(Clone, Debug)]
pub struct H3load {
    pub binary: PathBuf,
    /// `https://<route host>/`: the host is the SNI and `:authority`.
    pub url: String,
    pub connect_to: SocketAddr,
    /// The CA the route's certificate chains to.
    pub ca: PathBuf,
    pub clients: u32,
    pub streams: u32,
    pub duration: Duration,
    pub log: PathBuf,
    /// At most this many requests (the availability probe); none: as many as the duration allows.
    pub requests: Option<u32>,
}

impl H3load {
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![
            "-c".into(),
            CLIENT_CPU.to_string(),
            self.binary.display().to_string(),
            format!("-c{}", self.clients),
            format!("-m{}", self.streams),
            format!("-D{}", self.duration.as_secs()),
        ];
        match self.requests {
            Some(count) => args.push(format!("-n{count}")),
            None => args.push("--warm-up-time=1".into()),
        }
        args.extend([
            format!("--connect-to={}", self.connect_to),
            format!("--ca={}", self.ca.display()),
            format!("--log-file={}", self.log.display()),
            self.url.clone(),
        ]);
        args
    }

    pub fn command_line(&self) -> String {
        shell_line("taskset", &self.args())
    }

    pub fn run(&self) -> anyhow::Result<LatencyOutput> {
        let _ = std::fs::remove_file(&self.log);
        let limit = self.duration + RUN_SLACK;
        run_logged("h3load", Command::new("taskset").args(self.args()), limit, &self.log, self.duration)
    }
}
