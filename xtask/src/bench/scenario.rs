//! What a bench run measures: the contenders, the loads, and a scenario (load x route count x contenders). Plain
//! values: the plan is made of them, the runner runs them, the results and the report name them.

use std::time::Duration;

use super::numbers::thousands;
use super::routes::Termination;

/// Total rate of the fixed-rate latency runs (docs/benchmarking.md §2: 20k requests/s).
pub const FIXED_RATE: u32 = 20_000;
/// Hostile connections of each kind beside `Load::FixedRateHostile` (the issue asks 10,000 of each; a proxy holds
/// a client and a pod connection per non-reader, and this machine's hard limit of open files, 20,000 per process,
/// bounds all of them).
pub const SLOWLORIS: usize = 3_000;
pub const NON_READERS: usize = 3_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Contender {
    Direct,
    Haproxy,
    Router,
    /// The same router binary with ROUTER_TLS_PROVIDER=aws-lc-rs (TLS groups only), to choose the crypto provider
    /// by measurement.
    RouterAwsLc,
}

impl Contender {
    pub fn label(self) -> &'static str {
        match self {
            Contender::Direct => "direct",
            Contender::Haproxy => "HAProxy",
            Contender::Router => "router",
            Contender::RouterAwsLc => "router aws-lc-rs",
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
    /// `FixedRate` with slowloris and non-reading clients connected beside it (`hostile.rs`).
    FixedRateHostile,
    /// wrk over TLS to the edge route, keep-alive.
    EdgeKeepAlive,
    /// wrk over TLS to the edge route, `Connection: close`: a handshake per request, sessions resumed.
    EdgeResumed,
    /// As `EdgeResumed` with servers that do not resume sessions: a full handshake per request.
    EdgeFullHandshake,
    /// As `EdgeFullHandshake` with an ECDSA P-256 route certificate instead of RSA-2048.
    EdgeFullHandshakeEcdsa,
    /// h2load, HTTP/2 over TLS (ALPN h2) to the edge route, as fast as it goes.
    EdgeHttp2,
    /// h3load, HTTP/3 over QUIC to the edge route (the router only: Debian's HAProxy and nginx have no QUIC), as
    /// fast as it goes, with HTTP/2's connections and streams.
    EdgeHttp3,
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
            Load::SameUrl
            | Load::RandomPath
            | Load::ConnectionPerRequest
            | Load::Bulk
            | Load::FixedRate
            | Load::FixedRateHostile => Termination::Http,
            Load::EdgeKeepAlive
            | Load::EdgeResumed
            | Load::EdgeFullHandshake
            | Load::EdgeFullHandshakeEcdsa
            | Load::EdgeHttp2
            | Load::EdgeHttp3 => Termination::Edge,
            Load::ReencryptKeepAlive => Termination::Reencrypt,
            Load::PassthroughBulk | Load::PassthroughNewConnection => Termination::Passthrough,
        }
    }

    /// One request per connection (`Connection: close`).
    pub fn closes(self) -> bool {
        matches!(
            self,
            Load::ConnectionPerRequest
                | Load::EdgeResumed
                | Load::EdgeFullHandshake
                | Load::EdgeFullHandshakeEcdsa
                | Load::PassthroughNewConnection
        )
    }

    /// New connections to servers without session resumption: every handshake full.
    pub fn is_full_handshake(self) -> bool {
        matches!(self, Load::EdgeFullHandshake | Load::EdgeFullHandshakeEcdsa)
    }
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub load: Load,
    pub routes: usize,
    pub contenders: Vec<Contender>,
    pub duration: Duration,
    pub connections: u32,
    /// Both proxies send an access-log line per request to a local syslog listener.
    pub access_log: bool,
    /// Worker threads of both proxies (ROUTER_THREADS, `nbthread`); above 1, both proxies may run on every CPU
    /// (`proxies::ALL_CPUS`), where the load and the pods run too.
    pub threads: u32,
}

impl Scenario {
    pub fn title(&self) -> String {
        let what = match self.load {
            Load::SameUrl => "HTTP keep-alive, same URL".to_string(),
            Load::RandomPath => "HTTP keep-alive, random path".to_string(),
            Load::ConnectionPerRequest => "HTTP connection per request".to_string(),
            Load::Bulk => "HTTP keep-alive, 1 MiB body".to_string(),
            Load::FixedRate => format!("HTTP keep-alive at {}k requests/s", FIXED_RATE / 1000),
            Load::FixedRateHostile => format!(
                "HTTP keep-alive at {}k requests/s beside {} slowloris and {} non-reading clients",
                FIXED_RATE / 1000,
                thousands(SLOWLORIS),
                thousands(NON_READERS)
            ),
            Load::EdgeKeepAlive => "edge TLS keep-alive".to_string(),
            Load::EdgeResumed => "edge TLS new connections, resumed handshakes".to_string(),
            Load::EdgeFullHandshake => "edge TLS new connections, full handshakes".to_string(),
            Load::EdgeFullHandshakeEcdsa => "edge TLS new connections, full handshakes, ECDSA P-256".to_string(),
            Load::EdgeHttp2 => "HTTP/2 over edge TLS".to_string(),
            Load::EdgeHttp3 => "HTTP/3 over edge TLS (QUIC)".to_string(),
            Load::ReencryptKeepAlive => "reencrypt TLS keep-alive".to_string(),
            Load::PassthroughBulk => "passthrough, 64 MiB body".to_string(),
            Load::PassthroughNewConnection => "passthrough new connections".to_string(),
        };
        let mixed = if self.load.is_tls() { " mixed" } else { "" };
        let logged = if self.access_log { ", access log on" } else { "" };
        let threads = match self.threads {
            0 | 1 => String::new(),
            n => format!(", {n} proxy threads on CPUs {} (load and pods on CPU 0)", super::proxies::ALL_CPUS),
        };
        format!("{what}, {}{mixed} routes{logged}{threads}", thousands(self.routes))
    }
}
