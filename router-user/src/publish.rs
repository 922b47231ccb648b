//! Turns each source update into a new compiled table, built on a blocking thread and swapped in whole.
//! Updates that arrive during a build are coalesced: only the newest is built next.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

use crate::admin::Health;
use crate::balance::health_check::spawn_checks;
use crate::metrics::Metrics;
use crate::model::Snapshot;
use crate::source::SourceUpdate;
use crate::table::{build, BuildOptions, RouteTable, TableHandle};

pub struct Publisher {
    pub table: TableHandle,
    pub options: BuildOptions,
    pub metrics: Arc<Metrics>,
    pub health: Arc<Health>,
    /// Told about every table once it is live (the Kubernetes source writes route status from it).
    pub published: Option<watch::Sender<Arc<RouteTable>>>,
    /// Told about every snapshot a source delivers, before its table is built (the XDP nodePort sync and the
    /// health check listener derive the router's own Service from it).
    pub snapshots: Option<watch::Sender<Arc<Snapshot>>>,
}

impl Publisher {
    /// Runs until the source's sender is dropped.
    pub async fn run(self, mut updates: mpsc::Receiver<SourceUpdate>) {
        let mut known_errors: HashSet<String> = HashSet::new();
        while let Some(mut update) = updates.recv().await {
            while let Ok(newer) = updates.try_recv() {
                update = newer;
            }
            self.count_new_errors(&update, &mut known_errors);
            let generation = self.table.load().generation + 1;
            let options = self.options.clone();
            let started = Instant::now();
            let snapshot = Arc::new(update.snapshot);
            if let Some(snapshots) = &self.snapshots {
                snapshots.send_replace(snapshot.clone());
            }
            let built = tokio::task::spawn_blocking(move || build(&snapshot, &options, generation)).await;
            let table = match built {
                Ok(table) => table,
                Err(error) => {
                    warn!(%error, "route table build failed; the previous table stays live");
                    continue;
                }
            };
            self.publish(table, started);
        }
    }

    fn count_new_errors(&self, update: &SourceUpdate, known: &mut HashSet<String>) {
        let current: HashSet<String> = update.errors.iter().map(ToString::to_string).collect();
        let new = current.difference(known).count();
        self.metrics.manifest_errors.inc_by(new as u64);
        *known = current;
    }

    fn publish(&self, table: RouteTable, started: Instant) {
        let previous = self.table.load_full();
        table.inherit_health(&previous);
        log_new_rejections(&previous, &table);
        let new_warnings = log_new_warnings(&previous, &table);
        self.metrics.route_warnings.inc_by(new_warnings);
        let elapsed = started.elapsed();
        self.metrics.table_build_seconds.observe(elapsed.as_secs_f64());
        self.metrics.table_generation.set(table.generation as i64);
        self.metrics.routes_loaded.set(table.routes_admitted() as i64);
        self.metrics.routes_rejected.set(table.routes_rejected() as i64);
        info!(
            generation = table.generation,
            admitted = table.routes_admitted(),
            rejected = table.routes_rejected(),
            build_ms = elapsed.as_secs_f64() * 1000.0,
            "route table published"
        );
        let table = Arc::new(table);
        self.table.store(table.clone());
        spawn_checks(Arc::downgrade(&table));
        self.health.mark_table_ready();
        if let Some(published) = &self.published {
            published.send_replace(table);
        }
    }
}

/// Logs each rejection once: only those that were not already in the previous table.
fn log_new_rejections(previous: &RouteTable, next: &RouteTable) {
    let before: HashSet<_> =
        previous.outcomes.iter().filter_map(|o| o.result.as_ref().err().map(|r| (&o.key, r))).collect();
    for outcome in &next.outcomes {
        if let Err(rejection) = &outcome.result {
            if !before.contains(&(&outcome.key, rejection)) {
                warn!(route = %outcome.key, reason = rejection.reason, "{}", rejection.message);
            }
        }
    }
}

/// Logs each annotation problem once (those not already in the previous table); returns how many were new.
fn log_new_warnings(previous: &RouteTable, next: &RouteTable) -> u64 {
    let before: HashSet<_> = previous.warnings.iter().collect();
    let mut new = 0;
    for warning @ (route, message) in &next.warnings {
        if !before.contains(warning) {
            warn!(route = %route, "{message}");
            new += 1;
        }
    }
    new
}
