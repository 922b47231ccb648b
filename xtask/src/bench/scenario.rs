//! What a bench run measures and what it found: the contenders, the loads, a scenario (load x route count x
//! contenders), one run's sample, and the whole outcome the report is written from.

use std::collections::BTreeMap;
use std::time::Duration;

use super::machine::MachineInfo;
use super::report;
use super::routes::Termination;
use super::tls::Negotiated;
use super::xdp::XdpOutcome;

/// Total rate of the fixed-rate latency runs (BENCH-METHOD: e.g. 20k requests/s).
pub const FIXED_RATE: u32 = 20_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Contender {
    Direct,
    Haproxy,
    Router,
}

impl Contender {
    pub fn label(self) -> &'static str {
        match self {
            Contender::Direct => "direct",
            Contender::Haproxy => "HAProxy",
            Contender::Router => "router",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// wrk, keep-alive, the same URL on every request.
    SameUrl,
    /// wrk, keep-alive, a random path per request.
    RandomPath,
    /// wrk, `Connection: close`: one connection per request.
    ConnectionPerRequest,
    /// wrk, keep-alive, a 1 MiB body.
    Bulk,
    /// h2load, HTTP/1.1 keep-alive at a fixed total rate.
    FixedRate,
    /// wrk over TLS to the edge route, keep-alive.
    EdgeKeepAlive,
    /// wrk over TLS to the edge route, `Connection: close`: a handshake per request, sessions resumed.
    EdgeResumed,
    /// As `EdgeResumed` with servers that do not resume sessions: a full handshake per request.
    EdgeFullHandshake,
    /// h2load, HTTP/2 over TLS (ALPN h2) to the edge route, as fast as it goes.
    EdgeHttp2,
    /// wrk over TLS to the reencrypt route, keep-alive (TLS again to the pod).
    ReencryptKeepAlive,
    /// wrk over TLS through the passthrough route (the pod terminates TLS), a 64 MiB body.
    PassthroughBulk,
    /// wrk over TLS through the passthrough route, `Connection: close`: a new connection (and a resumed
    /// handshake with the pod) per request.
    PassthroughNewConnection,
}

impl Load {
    /// Runs over TLS on the proxies' :443 (a mixed route set).
    pub fn is_tls(self) -> bool {
        self.termination() != Termination::Http
    }

    /// The kind of route the load is sent to.
    pub fn termination(self) -> Termination {
        match self {
            Load::SameUrl | Load::RandomPath | Load::ConnectionPerRequest | Load::Bulk | Load::FixedRate => {
                Termination::Http
            }
            Load::EdgeKeepAlive | Load::EdgeResumed | Load::EdgeFullHandshake | Load::EdgeHttp2 => Termination::Edge,
            Load::ReencryptKeepAlive => Termination::Reencrypt,
            Load::PassthroughBulk | Load::PassthroughNewConnection => Termination::Passthrough,
        }
    }

    /// One request per connection (`Connection: close`).
    pub fn closes(self) -> bool {
        matches!(
            self,
            Load::ConnectionPerRequest | Load::EdgeResumed | Load::EdgeFullHandshake | Load::PassthroughNewConnection
        )
    }
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub load: Load,
    pub routes: usize,
    pub contenders: Vec<Contender>,
    pub duration: Duration,
    pub connections: u32,
}

impl Scenario {
    pub fn title(&self) -> String {
        let what = match self.load {
            Load::SameUrl => "HTTP keep-alive, same URL".to_string(),
            Load::RandomPath => "HTTP keep-alive, random path".to_string(),
            Load::ConnectionPerRequest => "HTTP connection per request".to_string(),
            Load::Bulk => "HTTP keep-alive, 1 MiB body".to_string(),
            Load::FixedRate => format!("HTTP keep-alive at {}k requests/s", FIXED_RATE / 1000),
            Load::EdgeKeepAlive => "edge TLS keep-alive".to_string(),
            Load::EdgeResumed => "edge TLS new connections, resumed handshakes".to_string(),
            Load::EdgeFullHandshake => "edge TLS new connections, full handshakes".to_string(),
            Load::EdgeHttp2 => "HTTP/2 over edge TLS".to_string(),
            Load::ReencryptKeepAlive => "reencrypt TLS keep-alive".to_string(),
            Load::PassthroughBulk => "passthrough, 64 MiB body".to_string(),
            Load::PassthroughNewConnection => "passthrough new connections".to_string(),
        };
        let mixed = if self.load.is_tls() { " mixed" } else { "" };
        format!("{what}, {}{mixed} routes", report::thousands(self.routes))
    }
}

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
    /// Why the churn stopped before `CHURN_CHANGES` changes.
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
}
