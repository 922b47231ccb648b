//! The XDP group's part of the results: nodePort through XDP / iptables / direct, the SYN flood, passthrough
//! (`xdp_passthrough`: XDP steering, the relays, direct), the XDP front's counters, and how it was all set up.

use std::fmt::Write as _;

use super::super::results::xdp::{NodeLoad, NodePath, NodeResult, XdpOutcome, XdpStatus};
use super::super::results::Sample;
use super::super::stats::Summary;
use super::format::{range, ratio_text, si};
use super::xdp_passthrough::{self, paired, passthrough_section, passthrough_tables, summary};

fn rps(sample: &Sample) -> Option<f64> {
    Some(sample.requests_per_second)
}

/// The whole section of the markdown file.
pub fn xdp_section(xdp: &XdpOutcome) -> String {
    let mut out =
        String::from("\n## XDP front: nodePort and passthrough steering in network namespaces, SYN flood, relays\n\n");
    match &xdp.status {
        XdpStatus::Skipped(reason) => {
            let what = match xdp.passthrough {
                Some(_) => "The nodePort scenarios were not measured",
                None => "Nothing of the XDP group was measured",
            };
            let _ = writeln!(out, "**Skipped: {reason}.** {what} (not a pass).");
            if xdp.passthrough.is_none() {
                return out;
            }
            out.push('\n');
        }
        XdpStatus::Failed(reason) => {
            let _ = writeln!(out, "**Failed: {reason}.** The tables hold what was measured before.\n");
        }
        XdpStatus::Ran => {}
    }
    let plan = &xdp.plan;
    if !xdp.nodeport.is_empty() {
        let _ = writeln!(
            out,
            "- nodePort: client, node and pod network namespaces joined by veth pairs (10.211.0.0/16, nothing leaves \
             them), made fresh for every path and repetition so that no path inherits another's conntrack or \
             TIME_WAIT state. The router on CPU1 in the node namespace is the one local endpoint of its own Service \
             (nodePort 30080 -> :80, `externalTrafficPolicy: Local`); nginx (one worker) is the app pod, on CPU0 \
             with wrk (`-t1 -c{} -d{}s`, from the client namespace, Host `app.example.com`). Paths: **XDP nodePort** \
             (the router's `xdp_front` in {} mode on the node's client-side veth does the DNAT, `nat_reverse` on tcx \
             egress undoes it); **iptables nodePort** (the router without XDP; kube-proxy's chain shape \
             KUBE-SERVICES -> KUBE-NODEPORTS -> KUBE-EXT -> KUBE-SVL -> KUBE-SEP DNAT, with netfilter conntrack); \
             **router pod direct** (the node address :80: no nodePort, no DNAT, the floor). Paths in rotated order per \
             repetition; ratios pair runs of the same repetition. Wall time of the group {:.1} min ({:.0} s of it \
             waiting for idle CPUs and rerunning noisy runs).",
            plan.connections,
            plan.duration.as_secs(),
            plan.mode.as_str(),
            xdp.wall.as_secs_f64() / 60.0,
            xdp.extra.as_secs_f64()
        );
        out.push_str(
            "- router µs/req is the router process's CPU; machine µs/req is both CPUs' busy time over the run, \
             interrupt and softirq context included (where XDP, netfilter and the veth pairs do their work, charged \
             to no process), per request: the translation's own cost shows there. The client, the pod and the \
             kernel share the machine, so new-connection rates are bounded by CPU0 as much as by the path.\n\n",
        );
        out.push_str(&nodeport_table(&xdp.nodeport));
        if let Some(flood) = xdp.nodeport.iter().find(|r| r.load == NodeLoad::UnderFlood) {
            let _ = writeln!(
                out,
                "\n### New connections under a SYN flood\n\nhping3 in the client namespace sends SYNs to the nodePort \
                 (`-S -i u{}`, incrementing source ports; at most {} s worth, stopped when wrk ends), starting {:.1} s \
                 before wrk, on CPU0 beside it. Without flood: the new-connection run through the same path in the \
                 same topology just before.\n",
                plan.flood_interval_us,
                (plan.flood_warmup + plan.duration).as_secs() + 2,
                plan.flood_warmup.as_secs_f64()
            );
            let without = xdp.nodeport.iter().find(|r| r.load == NodeLoad::NewConnections);
            out.push_str(&flood_table(flood, without));
        }
    }
    if let Some(reason) = &xdp.flood_skipped {
        let _ = writeln!(out, "\nSYN flood: not run: {reason}.");
    }
    if let Some(passthrough) = &xdp.passthrough {
        out.push_str(&passthrough_section(passthrough, plan));
    }
    if let Some(reason) = &xdp.passthrough_skipped {
        let _ = writeln!(out, "\nPassthrough: not run: {reason}.");
    }
    if !xdp.xdp_status.is_empty() {
        out.push_str("\n<details><summary>`router xdp status` after the last XDP path's runs</summary>\n\n```\n");
        out.push_str(&xdp.xdp_status);
        out.push_str("```\n</details>\n");
    }
    out.push_str("\n### Commands (XDP group)\n\n```sh\n");
    for command in &xdp.setup_commands {
        let _ = writeln!(out, "{command}");
    }
    for result in &xdp.nodeport {
        let _ = writeln!(out, "# {}", result.load.title());
        for (path, command) in &result.commands {
            let _ = writeln!(out, "{command}  # {}", path.label());
        }
    }
    if let Some(passthrough) = &xdp.passthrough {
        out.push_str("# passthrough\n");
        for command in &passthrough.setup {
            let _ = writeln!(out, "{command}");
        }
        for ((load, relay), command) in &passthrough.commands {
            let _ = writeln!(out, "{command}  # {} / {}", load.title(), relay.label());
        }
    }
    out.push_str("```\n");
    out
}

/// requests/s, ratios to iptables and to direct, latency, router and machine CPU per request, per load and path.
fn nodeport_table(results: &[NodeResult]) -> String {
    let mut out = String::from(
        "| scenario | path | req/s | vs iptables | vs direct | p50 / p99 ms | router µs/req | machine µs/req |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for result in results.iter().filter(|r| r.load != NodeLoad::UnderFlood) {
        for path in result.load.paths() {
            let samples = result.samples.get(path);
            let versus = |other: NodePath| {
                if other == *path {
                    "-".to_string()
                } else {
                    ratio_text(paired(samples, result.samples.get(&other), rps))
                }
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                result.load.title(),
                path.label(),
                range(summary(samples, rps), si),
                versus(NodePath::Iptables),
                versus(NodePath::Direct),
                latency(samples),
                range(summary(samples, |s| s.us_per_request), |v| format!("{v:.1}")),
                range(summary(samples, |s| s.machine_us_per_request()), |v| format!("{v:.1}")),
            );
        }
    }
    out
}

fn latency(samples: Option<&Vec<Sample>>) -> String {
    match (summary(samples, |s| Some(s.p50_ms)), summary(samples, |s| Some(s.p99_ms))) {
        (Some(p50), Some(p99)) => format!("{:.2} / {}", p50.median, range(Some(p99), |v| format!("{v:.2}"))),
        _ => "-".into(),
    }
}

fn flood_table(flood: &NodeResult, without: Option<&NodeResult>) -> String {
    let mut out = String::from(
        "| path | new connections/s under flood | without flood | under / without | vs iptables under flood \
         | p99 ms under flood | SYN/s the flood sent |\n|---|---|---|---|---|---|---|\n",
    );
    for path in flood.load.paths() {
        let under = flood.samples.get(path);
        let before = without.and_then(|w| w.samples.get(path));
        let sent: Vec<f64> =
            flood.floods.get(path).map(|f| f.iter().map(|s| s.per_second()).collect()).unwrap_or_default();
        let versus = if *path == NodePath::Iptables {
            "-".to_string()
        } else {
            ratio_text(paired(under, flood.samples.get(&NodePath::Iptables), rps))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {versus} | {} | {} |",
            path.label(),
            range(summary(under, rps), si),
            range(summary(before, rps), si),
            ratio_text(paired(under, before, rps)),
            range(summary(under, |s| Some(s.p99_ms)), |v| format!("{v:.2}")),
            range(Summary::of(&sent), si),
        );
    }
    out
}

/// Every run of the group, named `scenario / path`.
pub fn named_runs(xdp: &XdpOutcome) -> Vec<(String, &Sample)> {
    let mut runs = Vec::new();
    for result in &xdp.nodeport {
        for (path, samples) in &result.samples {
            runs.extend(samples.iter().map(|s| (format!("{} / {}", result.load.title(), path.label()), s)));
        }
    }
    if let Some(passthrough) = &xdp.passthrough {
        runs.extend(xdp_passthrough::named_runs(passthrough));
    }
    runs
}

/// What the terminal shows at the end of a bench.
pub fn xdp_summary(xdp: &XdpOutcome) -> String {
    let mut out = String::new();
    match &xdp.status {
        XdpStatus::Skipped(reason) => {
            let _ = writeln!(out, "XDP group: SKIPPED: {reason}");
        }
        XdpStatus::Failed(reason) => {
            let _ = writeln!(out, "XDP group: FAILED: {reason}");
        }
        XdpStatus::Ran => {
            let _ = writeln!(
                out,
                "XDP group ({:.0} s, {:.0} s of it waiting for idle CPUs and rerunning noisy runs):",
                xdp.wall.as_secs_f64(),
                xdp.extra.as_secs_f64()
            );
        }
    }
    if !xdp.nodeport.is_empty() {
        out.push_str(&nodeport_table(&xdp.nodeport));
        if let Some(flood) = xdp.nodeport.iter().find(|r| r.load == NodeLoad::UnderFlood) {
            out.push('\n');
            out.push_str(&flood_table(flood, xdp.nodeport.iter().find(|r| r.load == NodeLoad::NewConnections)));
        }
    }
    if let Some(passthrough) = &xdp.passthrough {
        out.push_str(&passthrough_tables(passthrough));
        out.push_str(&xdp_passthrough::targets(passthrough));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rep: u32, rps: f64) -> Sample {
        Sample { rep, requests_per_second: rps, ..Sample::default() }
    }

    #[test]
    fn ratios_pair_runs_of_the_same_repetition() {
        // Run 2 of `theirs` failed: runs 1 and 3 are paired, not shifted.
        let ours = vec![sample(0, 12.0), sample(1, 10.0), sample(2, 15.0)];
        let theirs = vec![sample(0, 10.0), sample(2, 10.0)];
        let ratio = paired(Some(&ours), Some(&theirs), rps).expect("ratio");
        assert_eq!((ratio.min, ratio.max, ratio.runs), (1.2, 1.5, 2));
        assert!(paired(Some(&ours), None, rps).is_none());
    }

    #[test]
    fn a_skipped_group_says_why_and_shows_no_numbers() {
        let mut xdp = XdpOutcome::new(&super::super::super::plan::XdpPlan::default());
        xdp.status = XdpStatus::Skipped("needs root".into());
        let section = xdp_section(&xdp);
        assert!(section.contains("**Skipped: needs root.**"), "{section}");
        assert!(!section.contains("| path |"), "{section}");
        assert!(xdp_summary(&xdp).starts_with("XDP group: SKIPPED: needs root"));
    }

    #[test]
    fn cpu_per_gib() {
        let s = Sample { bytes_per_second: f64::from(1u32 << 30), ..Sample::default() };
        assert_eq!(xdp_passthrough::ms_per_gib(Some(50.0), &s), Some(500.0));
        assert_eq!(xdp_passthrough::ms_per_gib(None, &s), None);
    }
}
