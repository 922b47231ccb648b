//! OCSP stapling (ROUTER_OCSP_STAPLING): fetches of responses, the fetches that gave nothing to staple by
//! reason, and the certificates stapled now.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Why a fetch gave no staple: `fetch` (no answer: connection, HTTP status, timeout), `invalid` (an answer
/// that does not parse or verify), `revoked`, `unknown` (verified answers saying so).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OcspFailureLabels {
    pub reason: &'static str,
}

#[derive(Clone, Debug, Default)]
pub struct OcspMetrics {
    pub fetches: Counter,
    pub failures: Family<OcspFailureLabels, Counter>,
    pub stapled: Gauge,
}

impl OcspMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "router_ocsp_fetches",
            "OCSP responses asked for, one per responder request",
            self.fetches.clone(),
        );
        registry.register(
            "router_ocsp_fetch_failures",
            "OCSP fetches that gave nothing to staple, by reason (fetch, invalid, revoked, unknown)",
            self.failures.clone(),
        );
        registry.register(
            "router_ocsp_stapled_certificates",
            "Certificates served with a stapled OCSP response now",
            self.stapled.clone(),
        );
    }
}
