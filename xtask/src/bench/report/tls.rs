//! The TLS tables: edge / reencrypt / passthrough rates with proxy CPU and latency, the passthrough download, what
//! the client negotiated with each contender, and which contenders were not available (and why).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::super::results::{Outcome, Sample, ScenarioResult};
use super::super::routes::Termination;
use super::super::scenario::{Contender, Load};
use super::format::{range, ratio, ratio_between, ratio_text, si, summary};
use super::targets::router_resumed;

const NOT_AVAILABLE: &str = "not available";

fn tls_results(outcome: &Outcome, bulk: bool) -> Vec<&ScenarioResult> {
    outcome
        .results
        .iter()
        .filter(|r| r.scenario.load.is_tls() && (r.scenario.load == Load::PassthroughBulk) == bulk)
        .collect()
}

/// `format`ted summary of `pick`, or "not available" for a contender that could not run the scenario.
fn cell(
    result: &ScenarioResult,
    contender: Contender,
    pick: fn(&Sample) -> Option<f64>,
    format: fn(f64) -> String,
) -> String {
    if !result.scenario.contenders.contains(&contender) {
        return "-".into();
    }
    if result.unavailable.contains_key(&contender) {
        return NOT_AVAILABLE.into();
    }
    range(summary(result, contender, pick), format)
}

fn latency(result: &ScenarioResult, contender: Contender) -> String {
    if result.unavailable.contains_key(&contender) {
        return NOT_AVAILABLE.into();
    }
    super::format::latency_pair(result, contender)
}

/// Rates (requests/s for keep-alive and HTTP/2, connections/s for new connections), proxy CPU per request or
/// connection, latency.
pub fn tls_table(outcome: &Outcome) -> String {
    let rows = tls_results(outcome, false);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "| scenario | unit | direct /s | HAProxy /s | router /s | router/HAProxy | HAProxy µs/unit | router µs/unit \
         | router/HAProxy CPU | HAProxy p50 / p99 ms | router p50 / p99 ms |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for result in rows {
        let unit = if result.scenario.load.closes() { "connection" } else { "request" };
        // The full-handshake row is not comparable where the router resumed sessions anyway.
        let resumed = result.scenario.load.is_full_handshake() && router_resumed(result);
        let mark = |c: Contender, text: String| {
            if resumed && c == Contender::Router {
                format!("{text} (resumed)")
            } else {
                text
            }
        };
        let rps = |c| mark(c, cell(result, c, |s| Some(s.requests_per_second), si));
        let us = |c| mark(c, cell(result, c, |s| s.us_per_request, |v| format!("{v:.1}")));
        let _ = writeln!(
            out,
            "| {} | {unit} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            result.scenario.title(),
            rps(Contender::Direct),
            rps(Contender::Haproxy),
            rps(Contender::Router),
            ratio_text(ratio(result, |s| Some(s.requests_per_second))),
            us(Contender::Haproxy),
            us(Contender::Router),
            ratio_text(ratio(result, |s| s.us_per_request)),
            latency(result, Contender::Haproxy),
            latency(result, Contender::Router),
        );
    }
    out
}

/// The router with each crypto provider (ring, the default; aws-lc-rs), same binary, same runs: rates, the
/// paired ratios aws-lc-rs / ring and aws-lc-rs / HAProxy, and proxy CPU per unit. Empty when no scenario ran the
/// aws-lc-rs router.
pub fn provider_table(outcome: &Outcome) -> String {
    let rows: Vec<&ScenarioResult> =
        outcome.results.iter().filter(|r| r.scenario.contenders.contains(&Contender::RouterAwsLc)).collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "| scenario | ring /s | aws-lc-rs /s | aws-lc-rs/ring | ring/HAProxy | aws-lc-rs/HAProxy | ring µs/unit \
         | aws-lc-rs µs/unit | aws-lc-rs/ring CPU |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let (ring, aws, haproxy) = (Contender::Router, Contender::RouterAwsLc, Contender::Haproxy);
    for result in rows {
        let rps = |c| cell(result, c, |s| Some(s.requests_per_second), si);
        let us = |c| cell(result, c, |s| s.us_per_request, |v| format!("{v:.1}"));
        let rate = |a, b| ratio_text(ratio_between(result, a, b, |s| Some(s.requests_per_second)));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            result.scenario.title(),
            rps(ring),
            rps(aws),
            rate(aws, ring),
            rate(ring, haproxy),
            rate(aws, haproxy),
            us(ring),
            us(aws),
            ratio_text(ratio_between(result, aws, ring, |s| s.us_per_request)),
        );
    }
    out
}

/// Proxy CPU per GiB moved: CPU share over the run divided by the bytes per second.
fn ms_per_gib(sample: &Sample) -> Option<f64> {
    let cpu = sample.cpu_percent? / 100.0;
    (sample.bytes_per_second > 0.0).then(|| cpu * 1e3 / (sample.bytes_per_second / f64::from(1u32 << 30)))
}

pub fn passthrough_bulk_table(outcome: &Outcome) -> String {
    let rows = tls_results(outcome, true);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "| scenario | direct MiB/s | HAProxy MiB/s | router MiB/s | router/HAProxy | HAProxy CPU ms/GiB \
         | router CPU ms/GiB |\n|---|---|---|---|---|---|---|\n",
    );
    for result in rows {
        let mib = |c| cell(result, c, |s| Some(s.bytes_per_second / 1048576.0), |v| format!("{v:.0}"));
        let cpu = |c| cell(result, c, ms_per_gib, |v| format!("{v:.0}"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            result.scenario.title(),
            mib(Contender::Direct),
            mib(Contender::Haproxy),
            mib(Contender::Router),
            ratio_text(ratio(result, |s| Some(s.bytes_per_second))),
            cpu(Contender::Haproxy),
            cpu(Contender::Router),
        );
    }
    out
}

/// The router's HTTP/3 beside its HTTP/2 on the same route, same connections and streams: medians of both
/// scenarios' runs (not paired: they are separate scenarios of one group). Empty without both.
pub fn http3_line(outcome: &Outcome) -> String {
    let find = |load| outcome.results.iter().find(|r| r.scenario.load == load);
    let (Some(h3), Some(h2)) = (find(Load::EdgeHttp3), find(Load::EdgeHttp2)) else { return String::new() };
    let median = |result, pick: fn(&Sample) -> Option<f64>| summary(result, Contender::Router, pick).map(|s| s.median);
    let rate = |s: &Sample| Some(s.requests_per_second);
    let cpu = |s: &Sample| s.us_per_request;
    let (Some(h3_rate), Some(h2_rate)) = (median(h3, rate), median(h2, rate)) else { return String::new() };
    let mut line = format!(
        "HTTP/3 beside HTTP/2, the router on the same edge route (16 connections x 10 streams each): {} vs {} \
         requests/s ({:.2}x)",
        si(h3_rate),
        si(h2_rate),
        h3_rate / h2_rate
    );
    if let (Some(h3_cpu), Some(h2_cpu)) = (median(h3, cpu), median(h2, cpu)) {
        let _ = write!(line, ", proxy CPU {h3_cpu:.1} vs {h2_cpu:.1} µs per request ({:.2}x)", h3_cpu / h2_cpu);
    }
    line.push_str(".\n");
    line
}

/// What `openssl s_client` (with the bench's client configuration) negotiated with each contender for each target
/// route, and whether a second connection resumed the session.
pub fn negotiated_table(outcome: &Outcome) -> String {
    let mut rows = std::collections::BTreeSet::new();
    for result in outcome.results.iter().filter(|r| r.scenario.load.is_tls()) {
        let kind = match result.scenario.load.termination() {
            Termination::Edge if result.scenario.load == Load::EdgeFullHandshakeEcdsa => {
                "edge, ECDSA P-256, servers without resumption"
            }
            Termination::Edge if result.scenario.load == Load::EdgeFullHandshake => "edge, servers without resumption",
            Termination::Edge if result.scenario.load == Load::EdgeHttp3 => "edge over QUIC (h3load probe)",
            Termination::Edge => "edge",
            Termination::Reencrypt => "reencrypt",
            Termination::Passthrough => "passthrough (the pod's TLS)",
            Termination::Http => continue,
        };
        for (contender, n) in &result.negotiated {
            let resumed = if n.resumed { "yes" } else { "no" };
            rows.insert(format!(
                "| {kind} | {} | {} | {} | {} | {resumed} |",
                contender.label(),
                n.protocol,
                n.cipher,
                n.group
            ));
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "| route | contender | protocol | cipher | key exchange | second connection resumed |\n|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let _ = writeln!(out, "{row}");
    }
    out
}

/// `- router: not available (reason): scenario, scenario`, one line per contender and reason.
pub fn unavailable_lines(outcome: &Outcome) -> String {
    let mut by_reason: BTreeMap<(Contender, &str), Vec<String>> = BTreeMap::new();
    for result in &outcome.results {
        for (contender, reason) in &result.unavailable {
            by_reason.entry((*contender, reason.as_str())).or_default().push(result.scenario.title());
        }
    }
    let mut out = String::new();
    for ((contender, reason), scenarios) in by_reason {
        let _ = writeln!(out, "- **{}: not available** ({reason}): {}", contender.label(), scenarios.join("; "));
    }
    out
}
