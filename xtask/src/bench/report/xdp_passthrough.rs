//! The XDP group's passthrough part of the results: per contender (XDP steering, splice(2) relay, sockmap relay,
//! direct) the download, new connections/s and open-connection latency with router and machine CPU, ratios against
//! direct and against the splice relay, and issue 22's targets for steering marked met or missed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::super::plan::XdpPlan;
use super::super::results::xdp::{PassLoad, PassthroughResult, Relay};
use super::super::results::Sample;
use super::super::stats::Summary;
use super::format::{range, ratio_text, si};

/// `pick` of each run, by repetition.
fn by_rep(samples: Option<&Vec<Sample>>, pick: impl Fn(&Sample) -> Option<f64>) -> BTreeMap<u32, f64> {
    samples.map(|s| s.iter().filter_map(|s| pick(s).map(|v| (s.rep, v))).collect()).unwrap_or_default()
}

/// Median (min–max) of `pick` over a contender's runs.
pub(super) fn summary(samples: Option<&Vec<Sample>>, pick: impl Fn(&Sample) -> Option<f64>) -> Option<Summary> {
    Summary::of(&by_rep(samples, pick).into_values().collect::<Vec<_>>())
}

/// Ratios `ours / theirs` of the runs of the same repetition.
pub(super) fn paired(
    ours: Option<&Vec<Sample>>,
    theirs: Option<&Vec<Sample>>,
    pick: impl Fn(&Sample) -> Option<f64> + Copy,
) -> Option<Summary> {
    let theirs = by_rep(theirs, pick);
    let ratios: Vec<f64> = by_rep(ours, pick)
        .into_iter()
        .filter_map(|(rep, v)| theirs.get(&rep).filter(|t| **t > 0.0).map(|t| v / t))
        .collect();
    Summary::of(&ratios)
}

fn mib(sample: &Sample) -> Option<f64> {
    Some(sample.bytes_per_second / 1048576.0)
}

fn rps(sample: &Sample) -> Option<f64> {
    Some(sample.requests_per_second)
}

fn p99(sample: &Sample) -> Option<f64> {
    Some(sample.p99_ms)
}

/// Process or machine CPU per GiB moved (ms), from a CPU share and the bytes per second.
pub fn ms_per_gib(cpu_percent: Option<f64>, sample: &Sample) -> Option<f64> {
    let cpu = cpu_percent? / 100.0;
    (sample.bytes_per_second > 0.0).then(|| cpu * 1e3 / (sample.bytes_per_second / f64::from(1u32 << 30)))
}

fn router_ms_per_gib(sample: &Sample) -> Option<f64> {
    ms_per_gib(sample.cpu_percent, sample)
}

fn machine_ms_per_gib(sample: &Sample) -> Option<f64> {
    ms_per_gib(sample.machine_cpu_percent, sample)
}

fn machine_us_per_connection(sample: &Sample) -> Option<f64> {
    sample.machine_us_per_request()
}

/// The ratio of `relay` to `other` (paired by repetition), `-` against itself.
fn versus(
    result: &PassthroughResult,
    load: PassLoad,
    relay: Relay,
    other: Relay,
    pick: impl Fn(&Sample) -> Option<f64> + Copy,
) -> String {
    if relay == other {
        return "-".into();
    }
    ratio_text(paired(result.of(load, relay), result.of(load, other), pick))
}

/// The section's text.
pub fn passthrough_section(result: &PassthroughResult, plan: &XdpPlan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n### Passthrough: XDP steering vs splice(2) relay vs sockmap vs direct\n\nA fresh client / node / pod \
         topology per contender and repetition (order rotated); the pod is nginx (one worker, CPU0) with TLS on \
         10.211.1.2:8443 and the pods' certificate; the router on CPU1 in the node namespace serves the passthrough \
         route `pass.bench.example.com` on 10.211.0.2:443. **XDP steering**: `--xdp-steer-passthrough`, \
         `xdp_front` in {} mode on the client-facing veth and `steer_ingress` on the pod-facing one (found from the \
         FIB at the first steered connection); after \
         the ClientHello the flow runs client <-> pod in XDP and no router socket carries it. **splice(2) relay**: \
         the default router. **sockmap relay**: `ROUTER_PASSTHROUGH_SOCKMAP=true`. **direct**: the client to the \
         pod's :8443, routed by the node namespace (the same two veth hops, no router). wrk over TLS (TLS 1.3, \
         AES-256-GCM, sessions resumed on reconnect) from the client namespace on CPU0: the 64 MiB file \
         (`-c{} -d{}s`), new connections (`-c32 -d{}s`, `Connection: close`, the 1 KiB body), and one open \
         connection's back-to-back small requests (`-c1 -d{}s`: its p99 is the latency figure). Router CPU is the \
         router process's; machine CPU is both CPUs' busy time, interrupt and softirq context included (where XDP, \
         the sockmap and the veths work). A steering run counts only when the router's /metrics say it steered \
         (`router_xdp_steered_connections_total` moved, `router_passthrough_bytes_total` stayed 0).\n",
        plan.mode.as_str(),
        plan.passthrough_connections,
        plan.passthrough_duration.as_secs(),
        plan.duration.as_secs(),
        plan.duration.as_secs(),
    );
    out.push_str(&passthrough_tables(result));
    out.push_str(&targets(result));
    if !result.not_steered.is_empty() {
        out.push_str("\n**Steering runs that were not steered (kept out of the tables):**\n\n");
        for line in &result.not_steered {
            let _ = writeln!(out, "- {line}");
        }
    }
    if !result.steer_counts.is_empty() {
        out.push_str("\n<details><summary>What the steering router's /metrics counted per run</summary>\n\n");
        for line in &result.steer_counts {
            let _ = writeln!(out, "- {line}");
        }
        out.push_str("\n</details>\n");
    }
    if !result.steer_status.is_empty() {
        out.push_str(
            "\n<details><summary>`router xdp status` of the steering router after its runs</summary>\n\n```\n",
        );
        out.push_str(&result.steer_status);
        out.push_str("```\n</details>\n");
    }
    out
}

/// The three tables: download, new connections, open-connection latency.
pub fn passthrough_tables(result: &PassthroughResult) -> String {
    let mut out = String::new();
    relay_table(
        &mut out,
        result,
        PassLoad::Download,
        "| download, 64 MiB | MiB/s | vs direct | vs splice(2) relay | router CPU ms/GiB | machine CPU ms/GiB |\n\
         |---|---|---|---|---|---|\n",
        |relay, samples| {
            let load = PassLoad::Download;
            vec![
                range(summary(samples, mib), |v| format!("{v:.0}")),
                versus(result, load, relay, Relay::Direct, mib),
                versus(result, load, relay, Relay::Splice, mib),
                range(summary(samples, router_ms_per_gib), |v| format!("{v:.1}")),
                range(summary(samples, machine_ms_per_gib), |v| format!("{v:.0}")),
            ]
        },
    );
    relay_table(
        &mut out,
        result,
        PassLoad::NewConnections,
        "| new connections | conn/s | vs direct | vs splice(2) relay | router µs/conn | machine µs/conn | \
         machine µs/conn vs direct |\n|---|---|---|---|---|---|---|\n",
        |relay, samples| {
            let load = PassLoad::NewConnections;
            vec![
                range(summary(samples, rps), si),
                versus(result, load, relay, Relay::Direct, rps),
                versus(result, load, relay, Relay::Splice, rps),
                range(summary(samples, |s| s.us_per_request), |v| format!("{v:.1}")),
                range(summary(samples, machine_us_per_connection), |v| format!("{v:.1}")),
                versus(result, load, relay, Relay::Direct, machine_us_per_connection),
            ]
        },
    );
    relay_table(
        &mut out,
        result,
        PassLoad::OpenConnection,
        "| small request, open connection | req/s | p50 ms | p99 ms | p99 vs direct | p99 vs splice(2) relay |\n\
         |---|---|---|---|---|---|\n",
        |relay, samples| {
            let load = PassLoad::OpenConnection;
            vec![
                range(summary(samples, rps), si),
                range(summary(samples, |s| Some(s.p50_ms)), |v| format!("{v:.3}")),
                range(summary(samples, p99), |v| format!("{v:.3}")),
                versus(result, load, relay, Relay::Direct, p99),
                versus(result, load, relay, Relay::Splice, p99),
            ]
        },
    );
    out
}

/// A blank line, `header` (with its separator line), then one row per relay: `cells` of its runs of `load`, or
/// why it has none (as many columns as the header).
fn relay_table(
    out: &mut String,
    result: &PassthroughResult,
    load: PassLoad,
    header: &str,
    cells: impl Fn(Relay, Option<&Vec<Sample>>) -> Vec<String>,
) {
    out.push('\n');
    out.push_str(header);
    let columns = header.lines().next().map_or(1, |line| line.matches('|').count().saturating_sub(2));
    for relay in Relay::ALL {
        match unavailable_row(result, relay, columns) {
            Some(row) => out.push_str(&row),
            None => {
                let _ = writeln!(out, "| {} | {} |", relay.label(), cells(relay, result.of(load, relay)).join(" | "));
            }
        }
    }
}

fn unavailable_row(result: &PassthroughResult, relay: Relay, empty_columns: usize) -> Option<String> {
    let reason = result.unavailable.get(&relay)?;
    let reason = reason.lines().next().unwrap_or_default().replace('|', "/");
    Some(format!("| {} | not available: {reason} |{}\n", relay.label(), " |".repeat(empty_columns - 1)))
}

/// One target: its text, the measured value (median), and whether it holds.
struct Target {
    what: &'static str,
    measured: Option<f64>,
    met: fn(f64) -> bool,
    show: fn(f64) -> String,
}

/// The XDP steering targets of issue 22 (which raised issue 15's), met or missed (medians of the paired
/// ratios). The SYN-flood target is the nodePort table's own column (under / without).
pub fn targets(result: &PassthroughResult) -> String {
    let median = |s: Option<Summary>| s.map(|s| s.median);
    let steer = |load| result.of(load, Relay::Steer);
    let direct_download = result.of(PassLoad::Download, Relay::Direct);
    let download = median(paired(steer(PassLoad::Download), direct_download, mib));
    let machine_gib = median(paired(steer(PassLoad::Download), direct_download, machine_ms_per_gib));
    // Router CPU per GiB: the steering router's median over the splice router's median (the steering router's is
    // often 0 ticks, which pairing by repetition would not change).
    let router_gib = match (
        median(summary(steer(PassLoad::Download), router_ms_per_gib)),
        median(summary(result.of(PassLoad::Download, Relay::Splice), router_ms_per_gib)),
    ) {
        (Some(ours), Some(theirs)) if theirs > 0.0 => Some(ours / theirs),
        _ => None,
    };
    let load = PassLoad::NewConnections;
    let connections = median(paired(steer(load), result.of(load, Relay::Splice), rps));
    let cpu_per_connection = median(paired(steer(load), result.of(load, Relay::Direct), machine_us_per_connection));
    let latency =
        median(paired(steer(PassLoad::OpenConnection), result.of(PassLoad::OpenConnection, Relay::Direct), p99));
    let ratio = |v: f64| format!("{v:.2}x");
    let percent = |v: f64| format!("{:.2}%", v * 100.0);
    let list = [
        Target { what: "download >= 1.0x direct", measured: download, met: |v| v >= 1.0, show: ratio },
        Target { what: "machine CPU per GiB below direct's", measured: machine_gib, met: |v| v < 1.0, show: ratio },
        Target {
            what: "router CPU per GiB < 1% of the splice(2) relay's",
            measured: router_gib,
            met: |v| v < 0.01,
            show: percent,
        },
        Target {
            what: "new connections/s >= 1.3x the splice(2) relay's",
            measured: connections,
            met: |v| v >= 1.3,
            show: ratio,
        },
        Target {
            what: "machine CPU per connection <= 1.1x direct",
            measured: cpu_per_connection,
            met: |v| v <= 1.1,
            show: ratio,
        },
        Target {
            what: "p99 of a small request on an open connection <= 1.05x direct",
            measured: latency,
            met: |v| v <= 1.05,
            show: ratio,
        },
    ];
    let mut out = String::from("\n| issue 22 target (XDP steering) | measured (median) | |\n|---|---|---|\n");
    for target in list {
        let (value, verdict) = match target.measured {
            Some(v) if (target.met)(v) => ((target.show)(v), "**met**"),
            Some(v) => ((target.show)(v), "**missed**"),
            None => ("-".into(), "not measured"),
        };
        let _ = writeln!(out, "| {} | {value} | {verdict} |", target.what);
    }
    out
}

/// Every passthrough run, named `load / relay`.
pub fn named_runs(result: &PassthroughResult) -> Vec<(String, &Sample)> {
    let mut runs = Vec::new();
    for ((load, relay), samples) in &result.samples {
        runs.extend(samples.iter().map(|s| (format!("{} / {}", load.title(), relay.label()), s)));
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rep: u32, bytes_per_second: f64, cpu: f64, rps: f64, p99_ms: f64) -> Sample {
        Sample {
            rep,
            bytes_per_second,
            cpu_percent: Some(cpu),
            machine_cpu_percent: Some(100.0),
            requests_per_second: rps,
            p99_ms,
            ..Sample::default()
        }
    }

    fn result(steer: Sample, splice: Sample, direct: Sample) -> PassthroughResult {
        let mut samples = BTreeMap::new();
        for load in PassLoad::ALL {
            samples.insert((load, Relay::Steer), vec![steer.clone()]);
            samples.insert((load, Relay::Splice), vec![splice.clone()]);
            samples.insert((load, Relay::Direct), vec![direct.clone()]);
        }
        PassthroughResult {
            samples,
            commands: BTreeMap::new(),
            unavailable: BTreeMap::new(),
            not_steered: Vec::new(),
            steer_counts: Vec::new(),
            steer_status: String::new(),
            setup: Vec::new(),
        }
    }

    #[test]
    fn targets_are_met_or_missed_by_their_ratios() {
        let gib = f64::from(1u32 << 30);
        // Steering: as fast as direct, no router CPU, 1.5x the splice relay's connections, same latency.
        let met =
            result(sample(0, gib, 0.0, 150.0, 1.0), sample(0, gib, 50.0, 100.0, 2.0), sample(0, gib, 0.0, 150.0, 1.0));
        let text = targets(&met);
        assert_eq!(text.matches("**met**").count(), 5, "{text}");
        assert!(text.contains("| machine CPU per GiB below direct's | 1.00x | **missed** |"), "{text}");
        // Half direct's throughput, router CPU 10% of the splice relay's, p99 twice direct's.
        let missed = result(
            sample(0, gib / 2.0, 5.0, 100.0, 2.0),
            sample(0, gib, 50.0, 100.0, 2.0),
            sample(0, gib, 0.0, 150.0, 1.0),
        );
        let text = targets(&missed);
        assert!(text.contains("| download >= 1.0x direct | 0.50x | **missed** |"), "{text}");
        assert!(text.contains("| 20.00% | **missed** |"), "{text}");
        assert!(
            text.contains("p99 of a small request on an open connection <= 1.05x direct | 2.00x | **missed**"),
            "{text}"
        );
    }

    #[test]
    fn an_unavailable_relay_says_why_in_every_table() {
        let gib = f64::from(1u32 << 30);
        let mut result =
            result(sample(0, gib, 0.0, 1.0, 1.0), sample(0, gib, 1.0, 1.0, 1.0), sample(0, gib, 0.0, 1.0, 1.0));
        result.unavailable.insert(Relay::Sockmap, "no sk_skb | here\nmore".into());
        let text = passthrough_tables(&result);
        assert_eq!(text.matches("| router, sockmap relay | not available: no sk_skb / here |").count(), 3, "{text}");
    }
}
