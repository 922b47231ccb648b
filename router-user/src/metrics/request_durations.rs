//! `router_http_request_duration_seconds`: a histogram per route of the time from a request's arrival to its
//! response head. Observed on every request, so without a lock: one atomic add for the bucket, the count and
//! the sum (in nanoseconds) each, read and encoded as a Prometheus histogram at scrape time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

use super::BackendLabels;

/// Upper bounds in seconds: 1 ms to 30 s (a pod's default server timeout), denser where pods usually answer.
const BUCKETS: [f64; 14] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// The same bounds in nanoseconds, for the comparison on the request path.
const BUCKET_NANOS: [u64; 14] = {
    let mut nanos = [0u64; 14];
    let micros = [1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000];
    let mut i = 0;
    while i < micros.len() {
        nanos[i] = micros[i] * 1_000;
        i += 1;
    }
    let seconds = [2_500, 5_000, 10_000, 30_000];
    let mut j = 0;
    while j < seconds.len() {
        nanos[i + j] = seconds[j] * 1_000_000;
        j += 1;
    }
    nanos
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub backend: Arc<str>,
    pub namespace: Arc<str>,
    pub route: Arc<str>,
}

impl RouteLabels {
    pub fn of(labels: &BackendLabels) -> Self {
        Self { backend: labels.backend.clone(), namespace: labels.namespace.clone(), route: labels.route.clone() }
    }
}

/// A duration histogram with [`BUCKETS`] (and `+Inf`) that the request path updates with atomics alone.
#[derive(Clone, Debug, Default)]
pub struct DurationHistogram {
    inner: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    /// Observations per bucket (not cumulative); the last one is `+Inf`.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl DurationHistogram {
    pub fn observe(&self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BUCKET_NANOS.iter().position(|bound| nanos <= *bound).unwrap_or(BUCKETS.len());
        let counts = &self.inner;
        counts.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        counts.count.fetch_add(1, Ordering::Relaxed);
        counts.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// (sum in seconds, count, per-bucket counts with their upper bounds), as the encoder takes them.
    fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let counts = &self.inner;
        let buckets = BUCKETS
            .iter()
            .copied()
            .chain(std::iter::once(f64::MAX))
            .zip(&counts.buckets)
            .map(|(bound, observed)| (bound, observed.load(Ordering::Relaxed)))
            .collect();
        let sum = counts.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        (sum, counts.count.load(Ordering::Relaxed), buckets)
    }
}

impl TypedMetric for DurationHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for DurationHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, buckets) = self.snapshot();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Registry;

    #[test]
    fn bounds_in_nanoseconds_are_the_bounds_in_seconds() {
        for (seconds, nanos) in BUCKETS.iter().zip(BUCKET_NANOS) {
            assert_eq!((seconds * 1e9).round() as u64, nanos);
        }
    }

    #[test]
    fn encodes_as_prometheus_clients_own_histogram_with_the_same_observations() {
        let ours = DurationHistogram::default();
        let theirs = Histogram::new(BUCKETS);
        for millis in [0, 1, 2, 3, 7, 40, 40, 999, 2_000, 29_000, 31_000, 120_000] {
            let elapsed = Duration::from_millis(millis);
            ours.observe(elapsed);
            theirs.observe(elapsed.as_secs_f64());
        }
        let text = |metric: Box<dyn FnOnce(&mut Registry)>| {
            let mut registry = Registry::default();
            metric(&mut registry);
            let mut out = String::new();
            encode(&mut out, &registry).expect("encode");
            out
        };
        let ours = text(Box::new(move |r| r.register("d", "help", ours)));
        let theirs = text(Box::new(move |r| r.register("d", "help", theirs)));
        // The sums differ only in float rounding (ours adds nanoseconds): compare the other lines.
        let without_sum = |text: &str| text.lines().filter(|l| !l.starts_with("d_sum")).collect::<Vec<_>>().join("\n");
        assert_eq!(without_sum(&ours), without_sum(&theirs));
        assert!(ours.contains("d_sum 183.092\n"), "{ours}");
        assert!(ours.contains("d_bucket{le=\"0.001\"} 2"), "{ours}");
        assert!(ours.contains("d_count 12"), "{ours}");
    }
}
