//! Which scenarios a run does, grouped by route set (both proxies are started once per group): plain HTTP sets of
//! 10 / 1,000 / 10,000 routes, then the mixed TLS sets, then `threads2-10` (both proxies with two worker threads
//! on both CPUs, beside the load), then the XDP group (network namespaces; not in `--quick`).
//! `--only` picks groups by name. Also the run's budget (noise limit, idle waits, extra time) and the churn's size,
//! which the runner keeps to and the report states.

use std::time::Duration;

use super::pki::CertKey;
use super::scenario::{Contender, Load, Scenario};

/// A run is repeated when processes other than the contenders took more than this share of a CPU.
pub const NOISE_LIMIT: f64 = 0.05;
/// Time a whole bench may spend beyond its planned runs (waiting for idle CPUs, rerunning noisy runs): the
/// planned runs take about 18 minutes (HTTP about 12 with the route churn, TLS about 4.4, XDP about 1.6), plus
/// about 1 for the access-log group (`http-log-10`), so a full bench stays near 20.
pub const EXTRA_TIME_BUDGET: Duration = Duration::from_secs(120);
/// Longest wait for idle CPUs before one run.
pub const IDLE_WAIT: Duration = Duration::from_secs(10);
/// Route changes in the churn scenario.
pub const CHURN_CHANGES: usize = 50;
/// Route changes in the churn of the 100,000-route group (issue targets: p50 and max over 200 changes).
pub const SCALE_CHURN_CHANGES: usize = 200;
/// The plain HTTP route set of the scale group, run only when named (`--only http-100000`): HAProxy needs
/// about 18 s and 4 GB to start on it, and its reloads during the churn as long each.
pub const SCALE_ROUTES: usize = 100_000;
/// The mixed set of the scale groups (`--only tls-40000`): 10,000 routes of each kind, every TLS one with a
/// certificate of its own.
pub const SCALE_MIXED_ROUTES: usize = 40_000;

/// Routes of each kind in a mixed TLS group (HTTP, edge, reencrypt, passthrough: the "1k http + 1k edge
/// + 1k passthrough" set of docs/benchmarking.md §11, plus 1k reencrypt; §3).
pub const MIXED_PER_KIND: usize = 1000;

/// Scenarios grouped by route set (both proxies are started once per group).
pub struct Group {
    /// Routes in the set.
    pub routes: usize,
    /// A mixed TLS set (`routes / 4` of each kind) instead of plain HTTP routes.
    pub tls: Option<TlsGroup>,
    pub scenarios: Vec<Scenario>,
    /// Route additions under load after the scenarios (0: none).
    pub churn_changes: usize,
    pub lifecycle: bool,
    /// Both proxies log every request to a local syslog listener (OpenShift's access log, httplog lines at info).
    pub access_log: bool,
    /// Worker threads of both proxies (1: each on the proxy CPU; more: both on every CPU).
    pub threads: u32,
    /// Left out of a run unless `--only` names it in full (too long or too large for every bench).
    pub on_request: bool,
}

impl Group {
    /// The name `--only` selects it by: `http-10`, `http-log-10`, `http-1000`, `http-10000`, `tls-4000`, `tls-full-40`,
    /// `tls-full-ecdsa-40`, `threads2-10`.
    pub fn name(&self) -> String {
        if self.threads > 1 {
            return format!("threads{}-{}", self.threads, self.routes);
        }
        match self.tls {
            None if self.access_log => format!("http-log-{}", self.routes),
            None => format!("http-{}", self.routes),
            Some(tls) if tls.resumption => format!("tls-{}", self.routes),
            Some(tls) if tls.key == CertKey::EcdsaP256 => format!("tls-full-ecdsa-{}", self.routes),
            Some(_) => format!("tls-full-{}", self.routes),
        }
    }
}

/// The XDP group's name for `--only`.
pub const XDP_GROUP: &str = "xdp";

/// What a run does: the route-set groups, then the XDP group.
pub struct Plan {
    pub groups: Vec<Group>,
    pub xdp: Option<XdpPlan>,
}

impl Plan {
    /// Keeps the groups `only` names (a name or a prefix of one before `-`: `http` is every HTTP group); all when
    /// `only` is empty. A group run on request only is kept when named in full. Fails on a name that selects nothing.
    pub fn select(mut self, only: &[String]) -> anyhow::Result<Plan> {
        if only.is_empty() {
            self.groups.retain(|group| !group.on_request);
            return Ok(self);
        }
        let picks = |name: &str| only.iter().any(|want| picks_one(name, want));
        let mut names: Vec<String> = self.groups.iter().map(Group::name).collect();
        if self.xdp.is_some() {
            names.push(XDP_GROUP.into());
        }
        if let Some(unknown) = only.iter().find(|want| !names.iter().any(|name| picks_one(name, want))) {
            anyhow::bail!("--only {unknown}: no such group in this run (groups: {})", names.join(", "));
        }
        self.groups.retain(|group| match group.on_request {
            true => only.iter().any(|want| *want == group.name()),
            false => picks(&group.name()),
        });
        if !picks(XDP_GROUP) {
            self.xdp = None;
        }
        Ok(self)
    }
}

/// `want` names `name`, or its start before a `-`.
fn picks_one(name: &str, want: &str) -> bool {
    name == want || name.strip_prefix(want).is_some_and(|rest| rest.starts_with('-'))
}

/// How the router attaches its XDP front in the XDP group (`--xdp-mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum XdpMode {
    /// Generic XDP: runs after the kernel made the skb; on veth the faster of the two on this machine.
    #[default]
    Skb,
    /// Native XDP in the veth driver (it moves the receive path to NAPI).
    Driver,
}

impl XdpMode {
    pub fn as_str(self) -> &'static str {
        match self {
            XdpMode::Skb => "skb",
            XdpMode::Driver => "driver",
        }
    }
}

/// The XDP group's parameters: short runs (about 1.6 minutes for the group without waits and reruns) so the whole
/// bench stays under 20.
#[derive(Clone, Debug)]
pub struct XdpPlan {
    pub mode: XdpMode,
    /// Each nodePort run (wrk -d).
    pub duration: Duration,
    /// wrk -c of the nodePort runs.
    pub connections: u32,
    /// hping3 -i u<this>: one SYN per interval at most (the rate hping3 really reaches is reported).
    pub flood_interval_us: u32,
    /// The flood runs this long before wrk starts.
    pub flood_warmup: Duration,
    /// Each passthrough download run.
    pub passthrough_duration: Duration,
    /// wrk -c of the passthrough runs.
    pub passthrough_connections: u32,
}

impl Default for XdpPlan {
    fn default() -> XdpPlan {
        XdpPlan {
            mode: XdpMode::Skb,
            duration: Duration::from_secs(2),
            connections: 32,
            flood_interval_us: 10,
            flood_warmup: Duration::from_millis(500),
            passthrough_duration: Duration::from_secs(2),
            passthrough_connections: 4,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct TlsGroup {
    /// Session resumption on every server (HAProxy, the router, the direct pod). Off for the full-handshake
    /// scenario; whether a second connection resumed is still probed and reported.
    pub resumption: bool,
    /// The key of the edge and reencrypt routes' certificate.
    pub key: CertKey,
    /// Every edge and reencrypt route with a certificate of its own (RSA-2048), instead of one shared by all.
    pub own_certificates: bool,
}

pub fn plan(quick: bool, h2load: bool, xdp_mode: XdpMode) -> Plan {
    use Contender::{Direct, Haproxy as H, Router as R, RouterAwsLc as RA};
    let secs = Duration::from_secs;
    let scenario = |load, routes, contenders: &[Contender], duration, connections| Scenario {
        load,
        routes,
        contenders: contenders.to_vec(),
        duration,
        connections,
        access_log: false,
        threads: 1,
    };
    if quick {
        let group = Group {
            routes: 10,
            tls: None,
            scenarios: vec![scenario(Load::SameUrl, 10, &[Direct, H, R], secs(2), 64)],
            churn_changes: 0,
            lifecycle: false,
            access_log: false,
            threads: 1,
            on_request: false,
        };
        return Plan { groups: vec![group, logged_group(secs(2))], xdp: None };
    }
    let all = [Direct, H, R];
    let proxies = [H, R];
    let mut ten =
        vec![scenario(Load::SameUrl, 10, &all, secs(8), 64), scenario(Load::RandomPath, 10, &all, secs(8), 64)];
    if h2load {
        ten.push(scenario(Load::FixedRate, 10, &all, secs(6), 50));
        // Its p99 beside hostile clients, against the row above (issue target: within 2x).
        ten.push(scenario(Load::FixedRateHostile, 10, &proxies, secs(6), 50));
    }
    ten.push(scenario(Load::ConnectionPerRequest, 10, &all, secs(4), 64));
    ten.push(scenario(Load::Bulk, 10, &all, secs(4), 8));
    // 8 s keep-alive runs (10 s at 10 routes before the XDP group came) and 4 s edge keep-alive keep the whole bench,
    // TLS and XDP groups included, under 20 minutes.
    let thousand = vec![
        scenario(Load::SameUrl, 1000, &proxies, secs(8), 64),
        scenario(Load::RandomPath, 1000, &proxies, secs(8), 64),
    ];
    let mut ten_thousand = vec![
        scenario(Load::SameUrl, 10_000, &proxies, secs(8), 64),
        scenario(Load::RandomPath, 10_000, &proxies, secs(8), 64),
    ];
    if h2load {
        ten_thousand.push(scenario(Load::FixedRate, 10_000, &proxies, secs(6), 50));
    }
    ten_thousand.push(scenario(Load::ConnectionPerRequest, 10_000, &proxies, secs(4), 64));
    let mixed = 4 * MIXED_PER_KIND;
    // Where the router terminates TLS it runs twice, with each crypto provider (ring, aws-lc-rs), to choose the
    // default by measurement; passthrough does no crypto in the router.
    let (tls_all, tls_proxies) = ([Direct, H, R, RA], [H, R, RA]);
    let mut tls = vec![
        scenario(Load::EdgeKeepAlive, mixed, &tls_all, secs(4), 64),
        scenario(Load::EdgeResumed, mixed, &tls_all, secs(3), 64),
    ];
    if h2load {
        tls.push(scenario(Load::EdgeHttp2, mixed, &tls_all, secs(4), 16));
        // Beside HTTP/2 on the same route, the router alone (no QUIC in Debian's HAProxy or nginx).
        tls.push(scenario(Load::EdgeHttp3, mixed, &[R], secs(4), 16));
    }
    tls.extend([
        scenario(Load::ReencryptKeepAlive, mixed, &tls_proxies, secs(4), 64),
        scenario(Load::PassthroughNewConnection, mixed, &all, secs(3), 64),
        scenario(Load::PassthroughBulk, mixed, &all, secs(4), 4),
    ]);
    // Full handshakes on a small mixed set: HAProxy and the direct pod without session resumption.
    let full = vec![scenario(Load::EdgeFullHandshake, 40, &tls_all, secs(3), 64)];
    // The same with an ECDSA P-256 route certificate (no direct pod: the pods serve RSA).
    let full_ecdsa = vec![scenario(Load::EdgeFullHandshakeEcdsa, 40, &tls_proxies, secs(3), 64)];
    let http = |routes, scenarios, churn_changes| Group {
        routes,
        tls: None,
        scenarios,
        churn_changes,
        lifecycle: true,
        access_log: false,
        threads: 1,
        on_request: false,
    };
    // ROUTER_THREADS=2 against nbthread 2, both proxies free to use both CPUs (the load and the pods share CPU 0).
    let two_threads = Scenario { threads: 2, ..scenario(Load::SameUrl, 10, &proxies, secs(8), 64) };
    let mut groups = vec![
        http(10, ten, 0),
        logged_group(secs(8)),
        http(1000, thousand, 0),
        http(10_000, ten_thousand, CHURN_CHANGES),
        Group {
            routes: mixed,
            tls: Some(TlsGroup { resumption: true, key: CertKey::Rsa2048, own_certificates: false }),
            scenarios: tls,
            churn_changes: 0,
            lifecycle: true,
            access_log: false,
            threads: 1,
            on_request: false,
        },
        Group {
            routes: 40,
            tls: Some(TlsGroup { resumption: false, key: CertKey::Rsa2048, own_certificates: false }),
            scenarios: full,
            churn_changes: 0,
            lifecycle: false,
            access_log: false,
            threads: 1,
            on_request: false,
        },
        Group {
            routes: 40,
            tls: Some(TlsGroup { resumption: false, key: CertKey::EcdsaP256, own_certificates: false }),
            scenarios: full_ecdsa,
            churn_changes: 0,
            lifecycle: false,
            access_log: false,
            threads: 1,
            on_request: false,
        },
        Group {
            routes: 10,
            tls: None,
            scenarios: vec![two_threads],
            churn_changes: 0,
            lifecycle: false,
            access_log: false,
            threads: 2,
            on_request: false,
        },
    ];
    // 100,000 routes: same URL and random path (HAProxy's runs as long as the others'; its map lookups are not
    // capped), start, memory and 200 route changes.
    let scale = vec![
        scenario(Load::SameUrl, SCALE_ROUTES, &proxies, secs(8), 64),
        scenario(Load::RandomPath, SCALE_ROUTES, &proxies, secs(8), 64),
    ];
    groups.push(Group { on_request: true, ..http(SCALE_ROUTES, scale, SCALE_CHURN_CHANGES) });
    // 40,000 mixed routes (10,000 of each kind), every edge and reencrypt route with its own certificate.
    let scale_mixed = vec![
        scenario(Load::SameUrl, SCALE_MIXED_ROUTES, &proxies, secs(8), 64),
        scenario(Load::RandomPath, SCALE_MIXED_ROUTES, &proxies, secs(8), 64),
        scenario(Load::EdgeKeepAlive, SCALE_MIXED_ROUTES, &proxies, secs(4), 64),
    ];
    groups.push(Group {
        routes: SCALE_MIXED_ROUTES,
        tls: Some(TlsGroup { resumption: true, key: CertKey::Rsa2048, own_certificates: true }),
        scenarios: scale_mixed,
        churn_changes: SCALE_CHURN_CHANGES,
        lifecycle: true,
        access_log: false,
        threads: 1,
        on_request: true,
    });
    Plan { groups, xdp: Some(XdpPlan { mode: xdp_mode, ..XdpPlan::default() }) }
}

/// HTTP keep-alive on 10 routes with both proxies logging each request to a local syslog listener: set beside the
/// same load without logging (the `http-10` group), it gives the access log's cost to each.
fn logged_group(duration: Duration) -> Group {
    let scenario = Scenario {
        load: Load::SameUrl,
        routes: 10,
        contenders: vec![Contender::Haproxy, Contender::Router],
        duration,
        connections: 64,
        access_log: true,
        threads: 1,
    };
    Group {
        routes: 10,
        tls: None,
        scenarios: vec![scenario],
        churn_changes: 0,
        lifecycle: false,
        access_log: true,
        threads: 1,
        on_request: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(plan: &Plan) -> Vec<String> {
        let mut names: Vec<String> = plan.groups.iter().map(Group::name).collect();
        if plan.xdp.is_some() {
            names.push(XDP_GROUP.into());
        }
        names
    }

    #[test]
    fn only_selects_groups_by_name_or_prefix() {
        let all = plan(false, true, XdpMode::Skb);
        assert_eq!(
            names(&all),
            [
                "http-10",
                "http-log-10",
                "http-1000",
                "http-10000",
                "tls-4000",
                "tls-full-40",
                "tls-full-ecdsa-40",
                "threads2-10",
                "http-100000",
                "tls-40000",
                "xdp"
            ]
        );
        let only = |list: &[&str]| {
            let only: Vec<String> = list.iter().map(|s| s.to_string()).collect();
            plan(false, true, XdpMode::Skb).select(&only).map(|p| names(&p))
        };
        assert_eq!(only(&["xdp"]).expect("xdp"), ["xdp"]);
        assert_eq!(only(&["http"]).expect("http"), ["http-10", "http-log-10", "http-1000", "http-10000"]);
        assert_eq!(only(&["http-log"]).expect("logged"), ["http-log-10"]);
        assert_eq!(
            only(&["tls", "http-10"]).expect("tls"),
            ["http-10", "tls-4000", "tls-full-40", "tls-full-ecdsa-40"]
        );
        assert_eq!(only(&["tls-full"]).expect("full"), ["tls-full-40", "tls-full-ecdsa-40"]);
        assert_eq!(only(&[]).expect("all").len(), 9);
        assert_eq!(only(&["threads2"]).expect("threads"), ["threads2-10"]);
        assert_eq!(only(&["http-100000"]).expect("scale"), ["http-100000"], "named in full");
        assert_eq!(only(&["http-10", "http-100000"]).expect("both"), ["http-10", "http-100000"]);
        assert_eq!(only(&["tls-40000"]).expect("scale mixed"), ["tls-40000"]);
        assert!(!only(&["tls"]).expect("tls").contains(&"tls-40000".to_string()), "not by its prefix");
        assert!(only(&["htt"]).is_err());
        assert!(only(&["udp"]).is_err());
        assert!(plan(true, true, XdpMode::Skb).xdp.is_none(), "--quick has no XDP group");
    }
}
