//! OpenShift's `template_router_*` reload families, fed by table publishes: compiling a table is the router's
//! "write config" and swapping it in its "reload". `template_router_reload_failure` is 1 while the last
//! attempt failed (the ingress operator's HAProxyReloadFail alert fires on `== 1` for 5 minutes) and 0 after a
//! success. The two `_seconds` families are summaries without quantiles, as openshift/router registers them;
//! prometheus-client has no summary type, so they are written in the text format here.

use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Default)]
struct Summary {
    sum: f64,
    count: u64,
}

#[derive(Debug)]
pub struct TemplateRouterMetrics {
    reload: Mutex<Summary>,
    write_config: Mutex<Summary>,
    reload_failure: Gauge,
}

impl TemplateRouterMetrics {
    /// Registers the gauge in `registry`; the summaries are written by [`TemplateRouterMetrics::encode`].
    pub fn register(registry: &mut Registry) -> Self {
        let reload_failure = Gauge::default();
        registry.register(
            "template_router_reload_failure",
            "Metric to track the status of the most recent HAProxy reload",
            reload_failure.clone(),
        );
        Self { reload: Mutex::default(), write_config: Mutex::default(), reload_failure }
    }

    /// A table was compiled in `elapsed`.
    pub fn observe_write_config(&self, elapsed: Duration) {
        observe(&self.write_config, elapsed);
    }

    /// A compiled table went live (swap, health carried over, listeners told) in `elapsed`.
    pub fn observe_reload(&self, elapsed: Duration) {
        observe(&self.reload, elapsed);
        self.reload_failure.set(0);
    }

    /// A table could not be built; the previous one stays live.
    pub fn reload_failed(&self, elapsed: Duration) {
        observe(&self.reload, elapsed);
        self.reload_failure.set(1);
    }

    /// The two summaries in the text format (before the final `# EOF`).
    pub fn encode(&self, out: &mut String) {
        summary(
            out,
            "template_router_reload_seconds",
            "Measures the time spent reloading the router in seconds.",
            &self.reload,
        );
        summary(
            out,
            "template_router_write_config_seconds",
            "Measures the time spent writing out the router configuration to disk in seconds.",
            &self.write_config,
        );
    }
}

fn observe(summary: &Mutex<Summary>, elapsed: Duration) {
    let mut summary = summary.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    summary.sum += elapsed.as_secs_f64();
    summary.count += 1;
}

fn summary(out: &mut String, name: &str, help: &str, summary: &Mutex<Summary>) {
    let (sum, count) = {
        let summary = summary.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        (summary.sum, summary.count)
    };
    // Writing into a String cannot fail.
    let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} summary\n{name}_sum {sum:?}\n{name}_count {count}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_gauge_follows_the_last_attempt_and_summaries_count_each() {
        let mut registry = Registry::default();
        let metrics = TemplateRouterMetrics::register(&mut registry);
        metrics.observe_write_config(Duration::from_millis(250));
        metrics.reload_failed(Duration::from_millis(250));
        let mut text = String::new();
        prometheus_client::encoding::text::encode_registry(&mut text, &registry).expect("encode");
        assert!(
            text.contains("# TYPE template_router_reload_failure gauge\ntemplate_router_reload_failure 1\n"),
            "{text}"
        );
        metrics.observe_reload(Duration::from_millis(500));
        let mut text = String::new();
        prometheus_client::encoding::text::encode_registry(&mut text, &registry).expect("encode");
        assert!(text.contains("template_router_reload_failure 0\n"), "{text}");

        let mut summaries = String::new();
        metrics.encode(&mut summaries);
        assert!(summaries.contains("# TYPE template_router_reload_seconds summary\n"), "{summaries}");
        assert!(
            summaries.contains("template_router_reload_seconds_sum 0.75\ntemplate_router_reload_seconds_count 2\n"),
            "{summaries}"
        );
        assert!(
            summaries.contains(
                "template_router_write_config_seconds_sum 0.25\ntemplate_router_write_config_seconds_count 1\n"
            ),
            "{summaries}"
        );
    }
}
