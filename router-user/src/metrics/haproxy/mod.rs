//! OpenShift's `haproxy_*` metrics, fed from the router's own counters: the proxies' counters (`counters`, with
//! HAProxy's sliding averages and session rates), where they are kept (`registry`), how proxy names become
//! labels (`names`), and the families published at each scrape (`exporter`).

mod counters;
mod exporter;
mod names;
mod registry;
mod session_rate;
mod sliding_average;
#[cfg(test)]
mod tests;

pub use counters::{response_class, ProxyCounters, Session, RESPONSE_CLASSES};
pub use exporter::{scrape, BackendView, ServerView, Topology};
pub use names::{backend_labels, server_labels};
pub use registry::{CountersSlot, Frontend, ProxyRegistry, DEFAULT_SERVER_THRESHOLD};
