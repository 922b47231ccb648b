//! The result tables: proxy CPU / peak requests/s / latency, latency at a fixed rate, bulk, route-count scaling,
//! route churn, start time and memory.

use std::fmt::Write as _;

use super::super::numbers::thousands;
use super::super::results::{Outcome, Sample, ScenarioResult};
use super::super::scenario::{Contender, Load};
use super::super::stats::quantile;
use super::format::{latency_pair, range, ratio, ratio_text, si, summary};

pub fn is_keep_alive_table(load: Load) -> bool {
    matches!(load, Load::SameUrl | Load::RandomPath | Load::ConnectionPerRequest)
}

/// The main table: proxy CPU per request first, then requests/s, then latency (docs/benchmarking.md §2).
pub fn summary_table(outcome: &Outcome) -> String {
    let mut out = String::new();
    out.push_str(
        "| scenario | HAProxy µs/req | router µs/req | router/HAProxy CPU | direct req/s | HAProxy req/s \
         | router req/s \
         | router/HAProxy req/s | HAProxy p50 / p99 ms | router p50 / p99 ms | router/HAProxy p99 |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for result in outcome.results.iter().filter(|r| is_keep_alive_table(r.scenario.load)) {
        let us = |c| range(summary(result, c, |s| s.us_per_request), |v| format!("{v:.1}"));
        let rps = |c| range(summary(result, c, |s| Some(s.requests_per_second)), si);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            result.scenario.title(),
            us(Contender::Haproxy),
            us(Contender::Router),
            ratio_text(ratio(result, |s| s.us_per_request)),
            rps(Contender::Direct),
            rps(Contender::Haproxy),
            rps(Contender::Router),
            ratio_text(ratio(result, |s| Some(s.requests_per_second))),
            latency_pair(result, Contender::Haproxy),
            latency_pair(result, Contender::Router),
            ratio_text(ratio(result, |s| Some(s.p99_ms))),
        );
    }
    out
}

pub fn fixed_rate_table(outcome: &Outcome) -> String {
    let rows: Vec<&ScenarioResult> = outcome
        .results
        .iter()
        .filter(|r| matches!(r.scenario.load, Load::FixedRate | Load::FixedRateHostile))
        .collect();
    if rows.is_empty() {
        return if outcome.h2load {
            String::new()
        } else {
            "h2load is not installed (apt package nghttp2-client): no fixed-rate latency runs.\n".into()
        };
    }
    let mut out = String::from(
        "| scenario | direct p50 / p99 / p99.9 ms | HAProxy p50 / p99 / p99.9 ms | router p50 / p99 / p99.9 ms \
         | router/HAProxy p99 | HAProxy CPU % | router CPU % | router/HAProxy CPU |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for result in rows {
        let lat = |c| {
            let p50 = summary(result, c, |s| Some(s.p50_ms));
            let p99 = summary(result, c, |s| Some(s.p99_ms));
            let p999 = summary(result, c, |s| s.p999_ms);
            match (p50, p99, p999) {
                (Some(a), Some(b), Some(c)) => {
                    format!("{:.2} / {} / {:.2}", a.median, range(Some(b), |v| format!("{v:.2}")), c.median)
                }
                _ => "-".into(),
            }
        };
        let cpu = |c| range(summary(result, c, |s| s.cpu_percent), |v| format!("{v:.0}"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            result.scenario.title(),
            lat(Contender::Direct),
            lat(Contender::Haproxy),
            lat(Contender::Router),
            ratio_text(ratio(result, |s| Some(s.p99_ms))),
            cpu(Contender::Haproxy),
            cpu(Contender::Router),
            ratio_text(ratio(result, |s| s.cpu_percent)),
        );
    }
    out
}

pub fn bulk_table(outcome: &Outcome) -> String {
    let rows: Vec<&ScenarioResult> = outcome.results.iter().filter(|r| r.scenario.load == Load::Bulk).collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "| scenario | direct MiB/s | HAProxy MiB/s | router MiB/s | router/HAProxy | HAProxy µs/req \
         | router µs/req |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for result in rows {
        let mib = |c| range(summary(result, c, |s| Some(s.bytes_per_second / 1048576.0)), |v| format!("{v:.0}"));
        let us = |c| range(summary(result, c, |s| s.us_per_request), |v| format!("{v:.0}"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            result.scenario.title(),
            mib(Contender::Direct),
            mib(Contender::Haproxy),
            mib(Contender::Router),
            ratio_text(ratio(result, |s| Some(s.bytes_per_second))),
            us(Contender::Haproxy),
            us(Contender::Router),
        );
    }
    out
}

/// Issue 3: the router's lookup must not grow with the route count.
pub fn scaling_table(outcome: &Outcome) -> String {
    let find = |load: Load, routes: usize| {
        outcome.results.iter().find(|r| r.scenario.load == load && r.scenario.routes == routes)
    };
    let mut out = String::from(
        "| contender | load | req/s, 10 routes | req/s, 1,000 routes | req/s, 10,000 routes | 10,000 / 10 routes \
         | p99 ms, 10 → 10,000 routes | µs/req, 10 → 10,000 routes |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mut any = false;
    for contender in [Contender::Haproxy, Contender::Router] {
        for (load, name) in [(Load::SameUrl, "same URL"), (Load::RandomPath, "random path")] {
            let (Some(small), Some(large)) = (find(load, 10), find(load, 10_000)) else { continue };
            any = true;
            let rps = |r: Option<&ScenarioResult>| {
                r.map_or("-".into(), |r| range(summary(r, contender, |s| Some(s.requests_per_second)), si))
            };
            let median =
                |r: &ScenarioResult, pick: fn(&Sample) -> Option<f64>| summary(r, contender, pick).map(|s| s.median);
            let change = match (
                median(small, |s| Some(s.requests_per_second)),
                median(large, |s| Some(s.requests_per_second)),
            ) {
                (Some(a), Some(b)) if a > 0.0 => format!("{:.2}", b / a),
                _ => "-".into(),
            };
            let pair =
                |pick: fn(&Sample) -> Option<f64>, digits: usize| match (median(small, pick), median(large, pick)) {
                    (Some(a), Some(b)) => format!("{a:.digits$} → {b:.digits$}"),
                    _ => "-".into(),
                };
            let _ = writeln!(
                out,
                "| {} | {name} | {} | {} | {} | {change} | {} | {} |",
                contender.label(),
                rps(Some(small)),
                rps(find(load, 1000)),
                rps(Some(large)),
                pair(|s| Some(s.p99_ms), 2),
                pair(|s| s.us_per_request, 1),
            );
        }
    }
    if any {
        out
    } else {
        String::new()
    }
}

pub fn churn_table(outcome: &Outcome) -> String {
    if outcome.churn.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "| contender | routes | changes | change-to-traffic p50 / p99 / max ms | changes not live in 10 s \
         | failed requests (non-2xx + socket errors) | requests during churn | churn duration s \
         | proxy processes at once |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for churn in &outcome.churn {
        let mut sorted = churn.latencies_ms.clone();
        sorted.sort_unstable_by(f64::total_cmp);
        // No change went live in time (HAProxy reloading 100,000 routes): no latency to show.
        let latencies = match sorted.last() {
            Some(max) => format!("{:.0} / {:.0} / {max:.0}", quantile(&sorted, 0.5), quantile(&sorted, 0.99)),
            None => "-".to_string(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {latencies} | {} | {} ({} + {}) | {} | {:.0} | {} |",
            churn.contender.label(),
            thousands(churn.routes),
            churn.changes,
            churn.timeouts,
            churn.non_2xx + churn.socket_errors,
            churn.non_2xx,
            churn.socket_errors,
            churn.requests,
            churn.seconds,
            churn.max_processes,
        );
    }
    for churn in outcome.churn.iter().filter(|c| c.stopped.is_some()) {
        let _ = writeln!(
            out,
            "\n{} churn stopped after {} of {} changes: {}.",
            churn.contender.label(),
            churn.changes,
            churn.planned,
            churn.stopped.as_deref().unwrap_or("")
        );
    }
    out
}

pub fn lifecycle_table(outcome: &Outcome) -> String {
    if outcome.lifecycle.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "| contender | routes | config / manifest bytes | start until the target route serves | RSS idle MB \
         | RSS after load MB |\n\
         |---|---|---|---|---|---|\n",
    );
    for entry in &outcome.lifecycle {
        let _ = writeln!(
            out,
            "| {} | {}{} | {} | {:.2} s | {:.1} | {:.1} |",
            entry.contender.label(),
            thousands(entry.routes),
            if entry.mixed { " mixed, with certificates" } else { "" },
            if entry.config_bytes >= 1_000_000 {
                format!("{:.1} MB", entry.config_bytes as f64 / 1e6)
            } else {
                format!("{:.1} kB", entry.config_bytes as f64 / 1e3)
            },
            entry.start.as_secs_f64(),
            entry.rss_idle_kib as f64 / 1024.0,
            entry.rss_loaded_kib as f64 / 1024.0,
        );
    }
    out
}
