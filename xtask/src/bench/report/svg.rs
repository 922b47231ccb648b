//! The SVG chart beside the markdown: proxy CPU per request and peak requests/s, median bars with min–max whiskers;
//! with the XDP group, its nodePort requests/s per path and the passthrough relays' MiB/s.

use std::fmt::Write as _;

use super::super::results::xdp::{NodePath, PassLoad, Relay, XdpOutcome};
use super::super::results::{Outcome, Sample, ScenarioResult};
use super::super::scenario::{Contender, Load};
use super::super::stats::Summary;
use super::format::{escape, si, summary};

/// One horizontal bar chart panel.
struct Panel {
    title: String,
    /// (group label, bars: (color, summary)).
    groups: Vec<(String, Vec<(&'static str, Summary)>)>,
    unit: fn(f64) -> String,
    /// Series drawn beside the title (none: the contenders' legend at the top applies).
    legend: Vec<(&'static str, &'static str)>,
}

fn color(contender: Contender) -> &'static str {
    match contender {
        Contender::Direct => "#9e9e9e",
        Contender::Haproxy => "#1f77b4",
        Contender::Router => "#d95f02",
        Contender::RouterAwsLc => "#e7298a",
    }
}

fn path_color(path: NodePath) -> &'static str {
    match path {
        NodePath::Xdp => "#2ca02c",
        NodePath::Iptables => "#9467bd",
        NodePath::Direct => "#9e9e9e",
    }
}

fn relay_color(relay: Relay) -> &'static str {
    match relay {
        Relay::Steer => "#1b9e77",
        Relay::Direct => "#9e9e9e",
        Relay::Splice => "#d95f02",
        Relay::Sockmap => "#e7a33e",
    }
}

/// The XDP group's panels: nodePort requests/s per load and path, passthrough MiB/s per relay.
fn xdp_panels(xdp: &XdpOutcome) -> Vec<Panel> {
    let mut panels = Vec::new();
    let groups: Vec<(String, Vec<(&'static str, Summary)>)> = xdp
        .nodeport
        .iter()
        .map(|result| {
            let bars = result
                .load
                .paths()
                .iter()
                .filter_map(|path| {
                    let values: Vec<f64> = result.samples.get(path)?.iter().map(|s| s.requests_per_second).collect();
                    Some((path_color(*path), Summary::of(&values)?))
                })
                .collect();
            (result.load.title().to_string(), bars)
        })
        .filter(|(_, bars): &(String, Vec<_>)| !bars.is_empty())
        .collect();
    if !groups.is_empty() {
        panels.push(Panel {
            title: format!("nodePort, network namespaces ({} XDP): requests/s", xdp.plan.mode.as_str()),
            groups,
            unit: si,
            legend: NodePath::ALL.iter().map(|p| (p.label(), path_color(*p))).collect(),
        });
    }
    if let Some(passthrough) = &xdp.passthrough {
        let bars: Vec<(&'static str, Summary)> = Relay::ALL
            .iter()
            .filter_map(|relay| {
                let values: Vec<f64> = passthrough
                    .of(PassLoad::Download, *relay)?
                    .iter()
                    .map(|s| s.bytes_per_second / 1048576.0)
                    .collect();
                Some((relay_color(*relay), Summary::of(&values)?))
            })
            .collect();
        if !bars.is_empty() {
            panels.push(Panel {
                title: "Passthrough download (64 MiB over TLS): MiB/s".into(),
                groups: vec![("passthrough relay".into(), bars)],
                unit: |v| format!("{v:.0}"),
                legend: Relay::ALL.iter().map(|r| (r.label(), relay_color(*r))).collect(),
            });
        }
    }
    panels
}

pub fn svg(outcome: &Outcome, stamp: &str) -> String {
    let peak: Vec<&ScenarioResult> = outcome
        .results
        .iter()
        .filter(|r| !matches!(r.scenario.load, Load::FixedRate | Load::FixedRateHostile | Load::PassthroughBulk))
        .filter(|r| r.scenario.contenders.iter().any(|c| r.samples.contains_key(c)))
        .collect();
    let bars =
        |pick: fn(&Sample) -> Option<f64>, contenders: &[Contender]| -> Vec<(String, Vec<(&'static str, Summary)>)> {
            peak.iter()
                .map(|r| {
                    let bars = contenders.iter().filter_map(|c| summary(r, *c, pick).map(|s| (color(*c), s))).collect();
                    (r.scenario.title(), bars)
                })
                .filter(|(_, bars): &(String, Vec<_>)| !bars.is_empty())
                .collect()
        };
    let mut panels = vec![
        Panel {
            title: "Proxy CPU per request, µs (lower is better)".into(),
            groups: bars(|s| s.us_per_request, &[Contender::Haproxy, Contender::Router]),
            unit: |v| format!("{v:.1}"),
            legend: Vec::new(),
        },
        Panel {
            title: "Requests/s (connections/s for new connections) at peak (higher is better)".into(),
            groups: bars(|s| Some(s.requests_per_second), &[Contender::Direct, Contender::Haproxy, Contender::Router]),
            unit: si,
            legend: Vec::new(),
        },
    ];
    panels.retain(|panel| !panel.groups.is_empty());
    let contenders = !panels.is_empty();
    if let Some(xdp) = &outcome.xdp {
        panels.extend(xdp_panels(xdp));
    }
    let (label_w, bar_w, bar_h, gap, width) = (330.0, 520.0, 13.0, 10.0, 960.0);
    let mut body = String::new();
    let mut y = 60.0;
    for panel in &panels {
        let _ = writeln!(body, r#"<text x="10" y="{y}" class="h">{}</text>"#, escape(&panel.title));
        for (i, (label, fill)) in panel.legend.iter().enumerate() {
            let x = label_w + 120.0 + i as f64 * 150.0;
            let _ = writeln!(
                body,
                r#"<rect x="{x}" y="{:.1}" width="12" height="12" fill="{fill}"/><text x="{}" y="{y}" class="l">{}</text>"#,
                y - 10.0,
                x + 16.0,
                escape(label)
            );
        }
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
            for (fill, s) in group {
                let w = bar_w * s.median / max;
                let _ = writeln!(
                    body,
                    r#"<rect x="{label_w}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{fill}"/>"#,
                    bar_h - 2.0,
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
    let shown: &[Contender] =
        if contenders { &[Contender::Direct, Contender::Haproxy, Contender::Router] } else { &[] };
    for (i, contender) in shown.iter().enumerate() {
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
