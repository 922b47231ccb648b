//! ROUTER_OCSP_STAPLING at start: a stapler for the :443 configurations, told the certificates of every table
//! published (the default certificate and every route's), until the publisher ends.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::metrics::OcspMetrics;
use crate::table::RouteTable;
use crate::tls::{ServerConfigs, Stapler};

/// Makes `configs` staple, following the certificates of the tables `published` announces.
pub fn start_stapling(
    configs: &mut ServerConfigs,
    metrics: OcspMetrics,
    refresh_max: Duration,
    mut published: watch::Receiver<Arc<RouteTable>>,
) {
    let stapler = Stapler::new(metrics, refresh_max);
    configs.staple_with(Arc::clone(&stapler));
    tokio::spawn(async move {
        loop {
            let certs = published.borrow_and_update().certs.clone();
            if let Some(store) = certs {
                stapler.track(store.keys().cloned());
            }
            if published.changed().await.is_err() {
                return;
            }
        }
    });
}
