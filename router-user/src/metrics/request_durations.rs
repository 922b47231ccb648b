//! `router_http_request_duration_seconds`: a histogram per route of the time from a request's arrival to its
//! response head.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::histogram::Histogram;

use super::BackendLabels;

/// Upper bounds in seconds: 1 ms to 30 s (a pod's default server timeout), denser where pods usually answer.
const BUCKETS: [f64; 14] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

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

pub fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}
