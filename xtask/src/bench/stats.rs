//! Median, minimum and maximum of repeated runs, and ratios of paired runs.

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: usize,
}

impl Summary {
    /// None for no values. The median of an even count is the mean of the middle two.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_unstable_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
        Some(Summary { median, min: sorted[0], max: sorted[n - 1], runs: n })
    }
}

/// Ratios `ours[i] / theirs[i]` of runs made back to back (same repetition), summarised.
pub fn paired_ratio(ours: &[f64], theirs: &[f64]) -> Option<Summary> {
    let ratios: Vec<f64> = ours.iter().zip(theirs).filter(|(_, t)| **t > 0.0).map(|(o, t)| o / t).collect();
    Summary::of(&ratios)
}

/// The value at quantile `q` (0..=1) of `sorted` (nearest rank).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).expect("summary");
        assert_eq!((s.median, s.min, s.max, s.runs), (2.0, 1.0, 3.0, 3));
        assert_eq!(Summary::of(&[1.0, 4.0]).expect("even").median, 2.5);
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn ratios_pair_runs_by_repetition() {
        let r = paired_ratio(&[12.0, 10.0, 15.0], &[10.0, 10.0, 10.0]).expect("ratio");
        assert_eq!((r.median, r.min, r.max), (1.2, 1.0, 1.5));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.5), 3.0);
    }
}
