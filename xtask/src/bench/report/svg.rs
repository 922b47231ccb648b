//! The SVG chart beside the markdown: proxy CPU per request and peak requests/s, median bars with min–max whiskers.

use std::fmt::Write as _;

use super::super::scenario::{Contender, Load, Outcome, Sample, ScenarioResult};
use super::super::stats::Summary;
use super::format::{escape, si, summary};

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

pub fn svg(outcome: &Outcome, stamp: &str) -> String {
    let peak: Vec<&ScenarioResult> = outcome
        .results
        .iter()
        .filter(|r| !matches!(r.scenario.load, Load::FixedRate | Load::PassthroughBulk))
        .filter(|r| r.scenario.contenders.iter().any(|c| r.samples.contains_key(c)))
        .collect();
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
            title: "Requests/s (connections/s for new connections) at peak (higher is better)".into(),
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
