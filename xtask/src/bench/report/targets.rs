//! The targets, checked against this run.

use std::fmt::Write as _;

use super::super::numbers::thousands;
use super::super::results::{Outcome, Sample, ScenarioResult};
use super::super::scenario::{Contender, Load};
use super::super::stats::quantile;
use super::format::{ratio, si, summary};

/// The targets, checked against this run.
pub fn targets(outcome: &Outcome) -> String {
    let mut out = String::new();
    let find = |load: Load, routes: usize| {
        outcome.results.iter().find(|r| r.scenario.load == load && r.scenario.routes == routes)
    };
    let mark = |ok: bool| if ok { "met" } else { "NOT met" };
    if let Some(r) = find(Load::SameUrl, 10) {
        if let (Some(rps), Some(p99)) = (ratio(r, |s| Some(s.requests_per_second)), ratio(r, |s| Some(s.p99_ms))) {
            let _ = writeln!(
                out,
                "- HTTP keep-alive requests/s >= 1.2 x HAProxy with p99 no worse (10 routes, same URL): \
                 {:.2} x, p99 {:.2} x: {}",
                rps.median,
                p99.median,
                mark(rps.median >= 1.2 && p99.median <= 1.0)
            );
        }
    }
    for (load, name) in [(Load::SameUrl, "same URL"), (Load::RandomPath, "random path")] {
        let median =
            |routes| find(load, routes).and_then(|r| summary(r, Contender::Router, |s| Some(s.requests_per_second)));
        if let (Some(a), Some(b)) = (median(10), median(10_000)) {
            // A drop beyond the spread of the runs counts as a drop.
            let ok = b.max >= a.min;
            let _ = writeln!(
                out,
                "- no drop in router requests/s from 10 to 10,000 routes ({name}): {} -> {} ({:.2} x): {}",
                si(a.median),
                si(b.median),
                b.median / a.median,
                mark(ok)
            );
        }
    }
    if let Some(churn) = outcome.churn.iter().find(|c| c.contender == Contender::Router) {
        let failed = churn.non_2xx + churn.socket_errors;
        let _ = writeln!(out, "- zero failed requests during route churn: {failed} failed: {}", mark(failed == 0));
        let mut sorted = churn.latencies_ms.clone();
        sorted.sort_unstable_by(f64::total_cmp);
        let p50 = quantile(&sorted, 0.5);
        let _ = writeln!(
            out,
            "- route-change-to-traffic under 100 ms at {} routes: median {:.0} ms, max {:.0} ms: {}",
            thousands(churn.routes),
            p50,
            sorted.last().copied().unwrap_or(f64::NAN),
            mark(sorted.last().is_some_and(|max| *max < 100.0) && churn.timeouts == 0)
        );
    }
    if let (Some(quiet), Some(hostile)) = (find(Load::FixedRate, 10), find(Load::FixedRateHostile, 10)) {
        for contender in [Contender::Haproxy, Contender::Router] {
            let p99 = |r| summary(r, contender, |s| Some(s.p99_ms)).map(|s| s.median);
            let (Some(before), Some(beside)) = (p99(quiet), p99(hostile)) else { continue };
            let failed = summary(hostile, contender, |s| Some(s.errors as f64)).map_or(0.0, |s| s.max);
            let _ = writeln!(
                out,
                "- {}: p99 at {}k requests/s beside hostile clients within 2 x of without them, no failed request: \
                 {before:.2} -> {beside:.2} ms ({:.2} x), {failed:.0} failed: {}",
                contender.label(),
                super::super::scenario::FIXED_RATE / 1000,
                beside / before,
                mark(beside <= 2.0 * before && failed == 0.0)
            );
        }
    }
    let rss = |c| outcome.lifecycle.iter().find(|l| l.contender == c && l.routes == 10_000).map(|l| l.rss_loaded_kib);
    if let (Some(h), Some(r)) = (rss(Contender::Haproxy), rss(Contender::Router)) {
        let _ = writeln!(
            out,
            "- memory at 10,000 routes <= HAProxy's: {:.0} MB vs {:.0} MB ({:.2} x): {}",
            r as f64 / 1024.0,
            h as f64 / 1024.0,
            r as f64 / h.max(1) as f64,
            mark(r <= h)
        );
    }
    for (load, what, pick) in [
        (Load::EdgeFullHandshake, "edge TLS full handshakes/s", requests_per_second as fn(&Sample) -> Option<f64>),
        (Load::EdgeResumed, "edge TLS resumed handshakes/s", requests_per_second),
        (Load::PassthroughBulk, "passthrough throughput", |s: &Sample| Some(s.bytes_per_second)),
    ] {
        let Some(result) = outcome.results.iter().find(|r| r.scenario.load == load) else { continue };
        if load == Load::EdgeFullHandshake && router_resumed(result) {
            let _ = writeln!(
                out,
                "- {what} >= 1.0 x HAProxy: not comparable: the router resumed sessions where HAProxy made full \
                 handshakes (was ROUTER_TLS_SESSION_RESUMPTION=false honoured?)"
            );
            continue;
        }
        match (ratio(result, pick), result.unavailable.get(&Contender::Router)) {
            (Some(r), _) => {
                let _ = writeln!(out, "- {what} >= 1.0 x HAProxy: {:.2} x: {}", r.median, mark(r.median >= 1.0));
            }
            (None, Some(reason)) => {
                let _ = writeln!(out, "- {what} >= 1.0 x HAProxy: not measured, router not available ({reason})");
            }
            (None, None) => {
                let _ = writeln!(out, "- {what} >= 1.0 x HAProxy: not measured (no paired runs)");
            }
        }
    }
    out
}

/// The router resumed the probe's session (so its "full handshake" runs were resumed ones).
pub fn router_resumed(result: &ScenarioResult) -> bool {
    result.negotiated.get(&Contender::Router).is_some_and(|n| n.resumed)
}

fn requests_per_second(sample: &Sample) -> Option<f64> {
    Some(sample.requests_per_second)
}
