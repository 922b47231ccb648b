//! What a bench run found, as plain values: one run's sample, a scenario's runs per contender, start time and
//! memory, route churn, the TLS parameters negotiated, and the whole outcome the report is written from. The
//! runner fills these in; the report only reads them.

pub mod xdp;

use std::collections::BTreeMap;
use std::time::Duration;

use super::machine::MachineInfo;
use super::scenario::{Contender, Scenario};
use xdp::XdpOutcome;

/// One run of one contender.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub rep: u32,
    pub requests_per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: Option<f64>,
    /// Proxy CPU (utime + stime) per request, microseconds.
    pub us_per_request: Option<f64>,
    /// Proxy CPU over the run, percent of one CPU.
    pub cpu_percent: Option<f64>,
    /// The whole machine's busy CPU over the run (every process, interrupt and softirq context included), percent
    /// of one CPU (up to 200 on two).
    pub machine_cpu_percent: Option<f64>,
    pub errors: u64,
    pub bytes_per_second: f64,
    /// Other processes took noticeable CPU and the rerun budget was spent.
    pub noisy: bool,
}

impl Sample {
    /// The whole machine's CPU (interrupt context included) per request, microseconds.
    pub fn machine_us_per_request(&self) -> Option<f64> {
        let cpu = self.machine_cpu_percent? / 100.0;
        (self.requests_per_second > 0.0).then(|| cpu * 1e6 / self.requests_per_second)
    }
}

/// What the bench's TLS client negotiates at an endpoint.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Negotiated {
    pub protocol: String,
    pub cipher: String,
    /// Key exchange group (`Server Temp Key`).
    pub group: String,
    /// Whether a second connection resumed the first one's session.
    pub resumed: bool,
}

pub struct ScenarioResult {
    pub scenario: Scenario,
    pub samples: BTreeMap<Contender, Vec<Sample>>,
    pub commands: BTreeMap<Contender, String>,
    /// Contenders that could not run the scenario, and why (the router before it serves TLS).
    pub unavailable: BTreeMap<Contender, String>,
    /// TLS scenarios: what the client negotiated with each contender (probed once before the runs).
    pub negotiated: BTreeMap<Contender, Negotiated>,
}

impl ScenarioResult {
    pub fn new(scenario: &Scenario) -> ScenarioResult {
        ScenarioResult {
            scenario: scenario.clone(),
            samples: BTreeMap::new(),
            commands: BTreeMap::new(),
            unavailable: BTreeMap::new(),
            negotiated: BTreeMap::new(),
        }
    }
}

/// Start time and memory of a proxy at a route count.
pub struct Lifecycle {
    pub contender: Contender,
    pub routes: usize,
    /// The mixed set of the TLS scenarios (HTTP, edge, reencrypt and passthrough routes with certificates).
    pub mixed: bool,
    pub config_bytes: u64,
    pub start: Duration,
    pub rss_idle_kib: u64,
    pub rss_loaded_kib: u64,
}

/// Route changes under load.
pub struct Churn {
    pub contender: Contender,
    pub routes: usize,
    /// Changes the plan asked for.
    pub planned: usize,
    pub changes: usize,
    /// From the start of writing the change until the new route answered 200, per change.
    pub latencies_ms: Vec<f64>,
    /// Changes whose route did not answer within the limit.
    pub timeouts: usize,
    pub requests: u64,
    pub non_2xx: u64,
    pub socket_errors: u64,
    pub seconds: f64,
    /// Most HAProxy processes alive at once (old ones finishing their connections).
    pub max_processes: usize,
    /// Why the churn stopped before `planned` changes.
    pub stopped: Option<String>,
    pub command: String,
}

pub struct Outcome {
    pub info: MachineInfo,
    pub quick: bool,
    pub runs: u32,
    pub results: Vec<ScenarioResult>,
    pub lifecycle: Vec<Lifecycle>,
    pub churn: Vec<Churn>,
    pub setup_commands: Vec<String>,
    pub reruns: u32,
    pub idle_timeouts: u32,
    pub h2load: bool,
    pub wall: Duration,
    pub haproxy_sample: String,
    pub failed_runs: Vec<String>,
    /// Whether both proxies inserted the sticky cookie (the router's behaviour, mirrored on HAProxy).
    pub cookies: Option<bool>,
    /// The XDP group (none: not in this run).
    pub xdp: Option<XdpOutcome>,
    /// `--only` (empty: every group).
    pub only: Vec<String>,
    /// The wrk script of the random-path runs (`-s random-path.lua`), shown with the commands.
    pub random_path_script: String,
}
