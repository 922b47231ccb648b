//! Number formatting and the per-contender summaries (median (min–max), paired ratios router / HAProxy) the tables
//! and the chart are made of.

use super::super::results::{Sample, ScenarioResult};
use super::super::scenario::Contender;
use super::super::stats::{paired_ratio, Summary};

pub fn values(samples: Option<&Vec<Sample>>, pick: impl Fn(&Sample) -> Option<f64>) -> Vec<f64> {
    samples.map(|s| s.iter().filter_map(&pick).collect()).unwrap_or_default()
}

pub fn summary(
    result: &ScenarioResult,
    contender: Contender,
    pick: impl Fn(&Sample) -> Option<f64>,
) -> Option<Summary> {
    Summary::of(&values(result.samples.get(&contender), pick))
}

pub fn ratio(result: &ScenarioResult, pick: impl Fn(&Sample) -> Option<f64> + Copy) -> Option<Summary> {
    ratio_between(result, Contender::Router, Contender::Haproxy, pick)
}

/// `ours / theirs`, paired run by run.
pub fn ratio_between(
    result: &ScenarioResult,
    ours: Contender,
    theirs: Contender,
    pick: impl Fn(&Sample) -> Option<f64> + Copy,
) -> Option<Summary> {
    paired_ratio(&values(result.samples.get(&ours), pick), &values(result.samples.get(&theirs), pick))
}

pub fn si(value: f64) -> String {
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
pub fn range(summary: Option<Summary>, format: impl Fn(f64) -> String) -> String {
    match summary {
        None => "-".into(),
        Some(s) if s.runs == 1 => format(s.median),
        Some(s) => format!("{} ({}–{})", format(s.median), format(s.min), format(s.max)),
    }
}

pub fn ratio_text(summary: Option<Summary>) -> String {
    range(summary, |v| format!("{v:.2}"))
}

pub fn latency_pair(result: &ScenarioResult, contender: Contender) -> String {
    let p50 = summary(result, contender, |s| Some(s.p50_ms));
    let p99 = summary(result, contender, |s| Some(s.p99_ms));
    match (p50, p99) {
        (Some(p50), Some(p99)) => format!("{:.2} / {}", p50.median, range(Some(p99), |v| format!("{v:.2}"))),
        _ => "-".into(),
    }
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_si_units() {
        let s = Summary::of(&[60_000.0, 63_200.0, 64_100.0]);
        assert_eq!(range(s, si), "63.2k (60.0k–64.1k)");
        assert_eq!(si(2440.0), "2.44k");
        assert_eq!(range(None, si), "-");
    }
}
