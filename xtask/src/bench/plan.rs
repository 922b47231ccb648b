//! Which scenarios a run does, grouped by route set (both proxies are started once per group): plain HTTP sets of
//! 10 / 1,000 / 10,000 routes, then the mixed TLS sets.

use std::time::Duration;

use super::scenario::{Contender, Load, Scenario};

/// Routes of each kind in a mixed TLS group (HTTP, edge, reencrypt, passthrough: BENCH-METHOD's "1k http + 1k edge
/// + 1k passthrough", plus 1k reencrypt).
pub const MIXED_PER_KIND: usize = 1000;

/// Scenarios grouped by route set (both proxies are started once per group).
pub struct Group {
    /// Routes in the set.
    pub routes: usize,
    /// A mixed TLS set (`routes / 4` of each kind) instead of plain HTTP routes.
    pub tls: Option<TlsGroup>,
    pub scenarios: Vec<Scenario>,
    pub churn: bool,
    pub lifecycle: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct TlsGroup {
    /// Session resumption on every server (HAProxy, the router, the direct pod). Off for the full-handshake
    /// scenario; whether a second connection resumed is still probed and reported.
    pub resumption: bool,
}

pub fn plan(quick: bool, h2load: bool) -> Vec<Group> {
    use Contender::{Direct, Haproxy as H, Router as R};
    let secs = Duration::from_secs;
    let scenario = |load, routes, contenders: &[Contender], duration, connections| Scenario {
        load,
        routes,
        contenders: contenders.to_vec(),
        duration,
        connections,
    };
    if quick {
        return vec![Group {
            routes: 10,
            tls: None,
            scenarios: vec![scenario(Load::SameUrl, 10, &[Direct, H, R], secs(2), 64)],
            churn: false,
            lifecycle: false,
        }];
    }
    let all = [Direct, H, R];
    let proxies = [H, R];
    let mut ten =
        vec![scenario(Load::SameUrl, 10, &all, secs(10), 64), scenario(Load::RandomPath, 10, &all, secs(10), 64)];
    if h2load {
        ten.push(scenario(Load::FixedRate, 10, &all, secs(6), 50));
    }
    ten.push(scenario(Load::ConnectionPerRequest, 10, &all, secs(4), 64));
    ten.push(scenario(Load::Bulk, 10, &all, secs(4), 8));
    // 8 s at 1,000 and 10,000 routes (10 s at 10) keeps the whole bench under 20 minutes with the TLS groups.
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
    let mut tls = vec![
        scenario(Load::EdgeKeepAlive, mixed, &all, secs(5), 64),
        scenario(Load::EdgeResumed, mixed, &all, secs(3), 64),
    ];
    if h2load {
        tls.push(scenario(Load::EdgeHttp2, mixed, &all, secs(4), 16));
    }
    tls.extend([
        scenario(Load::ReencryptKeepAlive, mixed, &proxies, secs(4), 64),
        scenario(Load::PassthroughNewConnection, mixed, &all, secs(3), 64),
        scenario(Load::PassthroughBulk, mixed, &all, secs(4), 4),
    ]);
    // Full handshakes on a small mixed set: HAProxy and the direct pod without session resumption.
    let full = vec![scenario(Load::EdgeFullHandshake, 40, &all, secs(3), 64)];
    let http = |routes, scenarios, churn| Group { routes, tls: None, scenarios, churn, lifecycle: true };
    vec![
        http(10, ten, false),
        http(1000, thousand, false),
        http(10_000, ten_thousand, true),
        Group {
            routes: mixed,
            tls: Some(TlsGroup { resumption: true }),
            scenarios: tls,
            churn: false,
            lifecycle: true,
        },
        Group {
            routes: 40,
            tls: Some(TlsGroup { resumption: false }),
            scenarios: full,
            churn: false,
            lifecycle: false,
        },
    ]
}
