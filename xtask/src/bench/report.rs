//! The results: a markdown file (tables with median (min–max), ratios ours / HAProxy, the machine, the commit and
//! the exact commands) and an SVG chart beside it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::stats::{paired_ratio, quantile, Summary};
use super::{Contender, Load, Outcome, Sample, ScenarioResult, FIXED_RATE};

/// Scenarios the issue asks for that the router cannot serve yet; HAProxy's side (config generation for edge,
/// reencrypt and passthrough, checked by `haproxy -c` in the xtask tests) is ready for them.
const NOT_YET: &[&str] = &[
    "edge TLS keep-alive requests/s (1k http + 1k edge + 1k passthrough routes)",
    "edge TLS new connections/s, resumed and full handshakes",
    "HTTP/2 over edge TLS",
    "reencrypt TLS keep-alive requests/s",
    "passthrough throughput (1 MiB download) and new connections/s",
    "XDP front scenarios",
];

/// Writes `<stamp>-<commit>.md` and `.svg` into `dir`; returns both paths.
pub fn write(outcome: &Outcome, dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let stamp = command_line("date", &["-u", "+%Y-%m-%dT%H%MZ"]);
    let commit = outcome.info.commit.split_whitespace().next().unwrap_or("unknown").to_string();
    let base = if outcome.quick { "quick".to_string() } else { format!("{stamp}-{commit}") };
    let markdown_path = dir.join(format!("{base}.md"));
    let svg_path = dir.join(format!("{base}.svg"));
    let svg_name = svg_path.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
    std::fs::write(&markdown_path, markdown(outcome, &stamp, &svg_name))
        .with_context(|| format!("writing {}", markdown_path.display()))?;
    std::fs::write(&svg_path, svg(outcome, &stamp)).with_context(|| format!("writing {}", svg_path.display()))?;
    Ok((markdown_path, svg_path))
}

/// `10000` -> `10,000`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The start of a generated HAProxy config (frontends and the first backend) and of its HTTP map, for the results.
pub fn config_excerpt(dir: &Path) -> String {
    let config = std::fs::read_to_string(dir.join(super::haproxy::CONFIG_FILE)).unwrap_or_default();
    let mut out = String::new();
    let mut backends = 0;
    for line in config.lines() {
        if line.starts_with("backend be_")
            && !line.starts_with("backend be_sni")
            && !line.starts_with("backend be_no_sni")
        {
            backends += 1;
            if backends > 1 {
                out.push_str("# ... one backend per route\n");
                break;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    let map = std::fs::read_to_string(dir.join(super::haproxy::HTTP_BACKEND_MAP)).unwrap_or_default();
    let _ = writeln!(out, "\n# {}:", super::haproxy::HTTP_BACKEND_MAP);
    for line in map.lines().take(3) {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("# ...\n");
    out
}

fn values(samples: Option<&Vec<Sample>>, pick: impl Fn(&Sample) -> Option<f64>) -> Vec<f64> {
    samples.map(|s| s.iter().filter_map(&pick).collect()).unwrap_or_default()
}

fn summary(result: &ScenarioResult, contender: Contender, pick: impl Fn(&Sample) -> Option<f64>) -> Option<Summary> {
    Summary::of(&values(result.samples.get(&contender), pick))
}

fn ratio(result: &ScenarioResult, pick: impl Fn(&Sample) -> Option<f64> + Copy) -> Option<Summary> {
    let ours = values(result.samples.get(&Contender::Router), pick);
    let theirs = values(result.samples.get(&Contender::Haproxy), pick);
    paired_ratio(&ours, &theirs)
}

fn si(value: f64) -> String {
    if value >= 10_000.0 {
        format!("{:.1}k", value / 1000.0)
    } else if value >= 1000.0 {
        format!("{:.2}k", value / 1000.0)
    } else if value >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

/// `median (min–max)` with a formatter.
fn range(summary: Option<Summary>, format: impl Fn(f64) -> String) -> String {
    match summary {
        None => "-".into(),
        Some(s) if s.runs == 1 => format(s.median),
        Some(s) => format!("{} ({}–{})", format(s.median), format(s.min), format(s.max)),
    }
}

fn ratio_text(summary: Option<Summary>) -> String {
    range(summary, |v| format!("{v:.2}"))
}

fn latency_pair(result: &ScenarioResult, contender: Contender) -> String {
    let p50 = summary(result, contender, |s| Some(s.p50_ms));
    let p99 = summary(result, contender, |s| Some(s.p99_ms));
    match (p50, p99) {
        (Some(p50), Some(p99)) => format!("{:.2} / {}", p50.median, range(Some(p99), |v| format!("{v:.2}"))),
        _ => "-".into(),
    }
}

fn is_keep_alive_table(load: Load) -> bool {
    matches!(load, Load::SameUrl | Load::RandomPath | Load::ConnectionPerRequest)
}

/// The main table: proxy CPU per request first, then requests/s, then latency (BENCH-METHOD 2).
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

fn fixed_rate_table(outcome: &Outcome) -> String {
    let rows: Vec<&ScenarioResult> = outcome.results.iter().filter(|r| r.scenario.load == Load::FixedRate).collect();
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

fn bulk_table(outcome: &Outcome) -> String {
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
fn scaling_table(outcome: &Outcome) -> String {
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

fn churn_table(outcome: &Outcome) -> String {
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
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.0} / {:.0} / {:.0} | {} | {} ({} + {}) | {} | {:.0} | {} |",
            churn.contender.label(),
            thousands(churn.routes),
            churn.changes,
            quantile(&sorted, 0.5),
            quantile(&sorted, 0.99),
            sorted.last().copied().unwrap_or(f64::NAN),
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
            super::CHURN_CHANGES,
            churn.stopped.as_deref().unwrap_or("")
        );
    }
    out
}

fn lifecycle_table(outcome: &Outcome) -> String {
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
            "| {} | {} | {} | {:.2} s | {:.1} | {:.1} |",
            entry.contender.label(),
            thousands(entry.routes),
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

/// The issue's targets, checked against this run.
fn targets(outcome: &Outcome) -> String {
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
    out.push_str(
        "- edge TLS handshakes/s >= 1.0 x, passthrough throughput >= 1.0 x: not yet measurable (no TLS in the \
         router)\n",
    );
    out
}

fn markdown(outcome: &Outcome, stamp: &str, svg_name: &str) -> String {
    let info = &outcome.info;
    let mut out = String::new();
    let _ = writeln!(out, "# Router vs HAProxy vs direct: {stamp}\n");
    if outcome.quick {
        out.push_str(
            "**Smoke run (`cargo xtask bench --quick`): one short run, the debug build of the router. The numbers \
             only show that the bench works; use `cargo xtask bench` for measurements.**\n\n",
        );
    }
    let _ = writeln!(out, "- commit: `{}`", info.commit);
    let _ = writeln!(out, "- machine: {}, {} CPUs, kernel {}", info.cpu_model, info.cores, info.kernel);
    let versions: Vec<String> =
        info.versions.iter().filter(|(_, v)| !v.is_empty()).map(|(name, v)| format!("{name}: `{v}`")).collect();
    let _ = writeln!(out, "- versions: {}", versions.join("; "));
    let _ = writeln!(
        out,
        "- core split: each proxy alone on CPU1 (`taskset -c 1`: HAProxy `nbthread 1`; the router's tokio runtime sees \
         one CPU, so one worker thread, helpers pinned there too); wrk/h2load and nginx (one worker, 4 pods = \
         127.0.0.11-14, one port) on CPU0. Loopback only."
    );
    let _ = writeln!(
        out,
        "- runs: median of {} (min–max), contenders back to back within each repetition, order rotated per \
         repetition; ratios pair the runs of the same repetition. Before each run both CPUs must be idle (<5% over \
         300 ms, waited up to {} s; {} waits timed out); a run where other processes took >{:.0}% of a CPU is run \
         again ({} reruns); waits and reruns stop after {} s in total so the bench stays bounded. Wall time {:.1} min.",
        outcome.runs,
        super::IDLE_WAIT.as_secs(),
        outcome.idle_timeouts,
        super::NOISE_LIMIT * 100.0,
        outcome.reruns,
        super::EXTRA_TIME_BUDGET.as_secs(),
        outcome.wall.as_secs_f64() / 60.0
    );
    let cookie = match outcome.cookies {
        Some(true) => {
            "**Both insert the sticky cookie** (the router sets one, so HAProxy gets \
                       `cookie <name> insert indirect nocache httponly`; wrk never sends it back)"
        }
        _ => "**HAProxy runs without the sticky cookie** (the router inserts none: `disable_cookies` on every route)",
    };
    let _ = writeln!(
        out,
        "- equal work: both lowercase Host, drop `Proxy`, append X-Forwarded-For/-Host/-Port/-Proto and `Forwarded`. \
         {cookie}. **Active health checks are off on both** (HAProxy without `check`; the router with \
         `ROUTER_BACKEND_CHECK_INTERVAL=24h`: one round at start, then none): with OpenShift's `check inter 5000ms` \
         each proxy would open 8,000 connections/s to the pods at 10,000 routes x 4 pods, on the load's CPU. HAProxy balances with `random` (OpenShift's default for a route with one service). HAProxy's \
         `maxconn` is lowered to what the machine's open-files limit allows (the bench opens a few hundred \
         connections)."
    );
    out.push_str(
        "- routes: N plain HTTP routes from one generator (`xtask/src/bench/routes.rs`), host \
         `rNNNNN.bench.example.com`, one Service with 4 pods each; the target is the route in the middle \
         (`r{N/2}`). HAProxy's configuration is what the OpenShift router would write for them \
         (`xtask/src/bench/haproxy.rs`; excerpt at the end); the router reads the same routes as manifests.\n",
    );
    let _ = writeln!(
        out,
        "- µs/req is the proxy's CPU (utime+stime from /proc/PID/stat) per request at peak load; lower is better. \
         Ratios are router / HAProxy: above 1 is better for requests/s, below 1 is better for CPU and latency.\n"
    );
    let _ = writeln!(out, "![chart]({svg_name})\n");

    out.push_str("## Proxy CPU, peak requests/s, latency at peak (wrk -t1 -c64)\n\n");
    out.push_str(&summary_table(outcome));
    let errors: Vec<String> = outcome
        .results
        .iter()
        .flat_map(|r| {
            r.samples.iter().flat_map(move |(c, samples)| {
                samples.iter().filter(|s| s.errors > 0).map(move |s| {
                    format!("{} / {} run {}: {} errors", r.scenario.title(), c.label(), s.rep + 1, s.errors)
                })
            })
        })
        .collect();
    if errors.is_empty() {
        out.push_str("\nNo run had errors (non-2xx responses or socket errors).\n");
    } else {
        let _ = writeln!(out, "\nRuns with errors: {}.", errors.join("; "));
    }
    if !outcome.failed_runs.is_empty() {
        let _ = writeln!(out, "\nRuns that failed (left out of the medians): {}.", outcome.failed_runs.join("; "));
    }
    let noisy: Vec<String> = outcome
        .results
        .iter()
        .flat_map(|r| {
            r.samples.iter().flat_map(move |(c, samples)| {
                samples
                    .iter()
                    .filter(|s| s.noisy)
                    .map(move |s| format!("{} / {} run {}", r.scenario.title(), c.label(), s.rep + 1))
            })
        })
        .collect();
    if !noisy.is_empty() {
        let _ = writeln!(out, "\nRuns kept although other processes took CPU: {}.", noisy.join("; "));
    }

    let fixed = fixed_rate_table(outcome);
    if !fixed.is_empty() {
        let _ = writeln!(
            out,
            "\n## Latency at a fixed rate ({}k requests/s, h2load --h1, 50 connections)\n",
            FIXED_RATE / 1000
        );
        out.push_str(&fixed);
    }
    let bulk = bulk_table(outcome);
    if !bulk.is_empty() {
        out.push_str("\n## Bulk (1 MiB body, wrk -c8)\n\n");
        out.push_str(&bulk);
    }
    let scaling = scaling_table(outcome);
    if !scaling.is_empty() {
        out.push_str("\n## Route count scaling (issue 3: the router's lookup does not grow with the route count)\n\n");
        out.push_str(&scaling);
    }
    let churn = churn_table(outcome);
    if !churn.is_empty() {
        let _ = writeln!(
            out,
            "\n## Route churn under load (100 route additions; HAProxy: rewrite config + maps, reload with `-x` \
             socket transfer and `-sf`; router: one more manifest file, written by rename)\n"
        );
        out.push_str(&churn);
        out.push_str(
            "\nChange-to-traffic runs from the start of writing the change until the new route answers 200 (polled \
             every 2 ms on new connections); the router's manifest watch waits 100 ms for writes to settle before it \
             reloads.\n",
        );
    }
    let lifecycle = lifecycle_table(outcome);
    if !lifecycle.is_empty() {
        out.push_str("\n## Start time and memory\n\n");
        out.push_str(&lifecycle);
    }
    let targets = targets(outcome);
    if !targets.is_empty() && !outcome.quick {
        out.push_str("\n## Targets (issue 7)\n\n");
        out.push_str(&targets);
    }
    out.push_str("\n## Not run yet\n\n");
    for name in NOT_YET {
        let _ = writeln!(out, "- {name}: not yet supported by the router");
    }
    if outcome.cookies != Some(true) {
        out.push_str("- HTTP with the sticky cookie inserted by both: not yet supported by the router\n");
    }

    out.push_str("\n## Commands\n\n```sh\n");
    for command in &outcome.setup_commands {
        let _ = writeln!(out, "{command}");
    }
    for result in &outcome.results {
        let _ = writeln!(out, "# {}", result.scenario.title());
        for (contender, command) in &result.commands {
            let _ = writeln!(out, "{command}  # {}", contender.label());
        }
    }
    for churn in &outcome.churn {
        let _ = writeln!(out, "# route churn, {}\n{}", churn.contender.label(), churn.command);
    }
    out.push_str("```\n\nRandom path script (`-s random-path.lua`):\n\n```lua\n");
    out.push_str(super::loadgen::RANDOM_PATH_SCRIPT);
    out.push_str("```\n");
    if !outcome.haproxy_sample.is_empty() {
        out.push_str("\n<details><summary>Generated HAProxy configuration, 10 routes (excerpt)</summary>\n\n```\n");
        out.push_str(&outcome.haproxy_sample);
        out.push_str("```\n</details>\n");
    }
    out
}

/// One horizontal bar chart panel.
struct Panel {
    title: String,
    /// (group label, bars: (series, summary)).
    groups: Vec<(String, Vec<(Contender, Summary)>)>,
    unit: fn(f64) -> String,
}

fn color(contender: Contender) -> &'static str {
    match contender {
        Contender::Direct => "#9e9e9e",
        Contender::Haproxy => "#1f77b4",
        Contender::Router => "#d95f02",
    }
}

fn svg(outcome: &Outcome, stamp: &str) -> String {
    let peak: Vec<&ScenarioResult> = outcome.results.iter().filter(|r| r.scenario.load != Load::FixedRate).collect();
    let bars =
        |pick: fn(&Sample) -> Option<f64>, contenders: &[Contender]| -> Vec<(String, Vec<(Contender, Summary)>)> {
            peak.iter()
                .map(|r| {
                    let bars = contenders.iter().filter_map(|c| summary(r, *c, pick).map(|s| (*c, s))).collect();
                    (r.scenario.title(), bars)
                })
                .filter(|(_, bars): &(String, Vec<_>)| !bars.is_empty())
                .collect()
        };
    let panels = [
        Panel {
            title: "Proxy CPU per request, µs (lower is better)".into(),
            groups: bars(|s| s.us_per_request, &[Contender::Haproxy, Contender::Router]),
            unit: |v| format!("{v:.1}"),
        },
        Panel {
            title: "Requests/s at peak (higher is better)".into(),
            groups: bars(|s| Some(s.requests_per_second), &[Contender::Direct, Contender::Haproxy, Contender::Router]),
            unit: si,
        },
    ];
    let (label_w, bar_w, bar_h, gap, width) = (330.0, 520.0, 13.0, 10.0, 960.0);
    let mut body = String::new();
    let mut y = 60.0;
    for panel in &panels {
        let _ = writeln!(body, r#"<text x="10" y="{y}" class="h">{}</text>"#, escape(&panel.title));
        y += 14.0;
        let max = panel.groups.iter().flat_map(|(_, b)| b.iter().map(|(_, s)| s.max)).fold(0.0, f64::max).max(1e-9);
        for (label, group) in &panel.groups {
            let group_h = group.len() as f64 * bar_h;
            let _ = writeln!(
                body,
                r#"<text x="{}" y="{:.1}" class="l" text-anchor="end">{}</text>"#,
                label_w - 8.0,
                y + group_h / 2.0 + 4.0,
                escape(label)
            );
            for (contender, s) in group {
                let w = bar_w * s.median / max;
                let _ = writeln!(
                    body,
                    r#"<rect x="{label_w}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{}"/>"#,
                    bar_h - 2.0,
                    color(*contender)
                );
                if s.runs > 1 {
                    let (x0, x1) = (label_w + bar_w * s.min / max, label_w + bar_w * s.max / max);
                    let mid = y + (bar_h - 2.0) / 2.0;
                    let _ =
                        writeln!(body, r#"<line x1="{x0:.1}" y1="{mid:.1}" x2="{x1:.1}" y2="{mid:.1}" class="w"/>"#);
                }
                let _ = writeln!(
                    body,
                    r#"<text x="{:.1}" y="{:.1}" class="v">{}</text>"#,
                    label_w + bar_w * s.max / max + 4.0,
                    y + bar_h - 4.0,
                    (panel.unit)(s.median)
                );
                y += bar_h;
            }
            y += gap;
        }
        y += 20.0;
    }
    let mut legend = String::new();
    for (i, contender) in [Contender::Direct, Contender::Haproxy, Contender::Router].iter().enumerate() {
        let x = label_w + i as f64 * 130.0;
        let _ = writeln!(
            legend,
            r#"<rect x="{x}" y="30" width="12" height="12" fill="{}"/><text x="{}" y="40" class="l">{}</text>"#,
            color(*contender),
            x + 16.0,
            contender.label()
        );
    }
    let height = y + 20.0;
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0}"
 viewBox="0 0 {width} {height:.0}" font-family="sans-serif">
<style>.h{{font-size:14px;font-weight:bold}} .l{{font-size:11px}} .v{{font-size:10px;fill:#333}}
 .w{{stroke:#000;stroke-width:1}}</style>
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="20" class="h">Router vs HAProxy vs direct, {stamp}, commit {commit}, median of {runs} (whiskers: min–max)</text>
{legend}{body}</svg>
"#,
        stamp = escape(stamp),
        commit = escape(&outcome.info.commit),
        runs = outcome.runs,
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn command_line(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(10), "10");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn ranges_and_si_units() {
        let s = Summary::of(&[60_000.0, 63_200.0, 64_100.0]);
        assert_eq!(range(s, si), "63.2k (60.0k–64.1k)");
        assert_eq!(si(2440.0), "2.44k");
        assert_eq!(range(None, si), "-");
    }
}
