//! Turns each source update into a new compiled table, built on a blocking thread and swapped in whole.
//! Updates that arrive during a build are coalesced: only the newest is built next. For OpenShift's
//! `template_router_*` families the build is the "write config" and the swap the "reload"; a build that fails
//! is a failed reload.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

use crate::admin::Readiness;
use crate::health_check::HealthChecks;
use crate::metrics::Metrics;
use crate::model::Snapshot;
use crate::source::SourceUpdate;
use crate::table::{build_from, BuildOptions, RouteTable, TableHandle};

pub struct Publisher {
    pub table: TableHandle,
    pub options: BuildOptions,
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    /// Told about every table once it is live (the Kubernetes source writes route status from it).
    pub published: Option<watch::Sender<Arc<RouteTable>>>,
    /// Told about every snapshot a source delivers, before its table is built (the XDP nodePort sync and the
    /// load-balancer probe derive the router's own Service from it).
    pub snapshots: Option<watch::Sender<Arc<Snapshot>>>,
}

impl Publisher {
    /// Runs until the source's sender is dropped.
    pub async fn run(self, mut updates: mpsc::Receiver<SourceUpdate>) {
        let mut known_errors: HashSet<String> = HashSet::new();
        let checks = HealthChecks::start(self.metrics.clone());
        // The last snapshot and the table built from it: the next build takes over what did not change.
        let mut last: Option<(Arc<Snapshot>, Arc<RouteTable>)> = None;
        while let Some(mut update) = updates.recv().await {
            let mut superseded = Vec::new();
            while let Ok(newer) = updates.try_recv() {
                superseded.push(std::mem::replace(&mut update, newer));
            }
            self.count_new_errors(&update, &mut known_errors);
            let generation = self.table.load().generation + 1;
            let options = self.options.clone();
            let started = Instant::now();
            let snapshot = Arc::new(update.snapshot);
            let replaced = self.snapshots.as_ref().map(|snapshots| snapshots.send_replace(snapshot.clone()));
            let previous = last.take();
            let building = snapshot.clone();
            let built = tokio::task::spawn_blocking(move || {
                let from = previous.as_ref().map(|(snapshot, table)| (&**snapshot, &**table));
                (build_from(&building, &options, generation, from), previous)
            })
            .await;
            // Whole states are freed off the runtime's threads, after the table is live.
            let stale = (superseded, replaced);
            let (table, previous) = match built {
                Ok(built) => built,
                Err(error) => {
                    warn!(%error, "route table build failed; the previous table stays live");
                    self.metrics.template_router.reload_failed(started.elapsed());
                    tokio::task::spawn_blocking(move || drop(stale));
                    continue;
                }
            };
            // `build_from` carried endpoint health over from the table it started from; only another live table (after a
            // failed build) needs the whole-table pass.
            let from_live = previous.as_ref().is_some_and(|(_, table)| Arc::ptr_eq(table, &self.table.load()));
            let table = self.publish(table, started, from_live, &checks);
            last = Some((snapshot, table));
            // The old snapshot and table (unless requests still hold it) go too.
            tokio::task::spawn_blocking(move || drop((stale, previous)));
        }
    }

    fn count_new_errors(&self, update: &SourceUpdate, known: &mut HashSet<String>) {
        let current: HashSet<String> = update.errors.iter().map(ToString::to_string).collect();
        let new = current.difference(known).count();
        self.metrics.manifest_errors.inc_by(new as u64);
        *known = current;
    }

    fn publish(
        &self,
        table: RouteTable,
        started: Instant,
        health_inherited: bool,
        checks: &HealthChecks,
    ) -> Arc<RouteTable> {
        let previous = self.table.load_full();
        if !health_inherited {
            table.inherit_health(&previous);
        }
        log_new_rejections(&previous, &table);
        let new_warnings = log_new_warnings(&previous, &table);
        self.metrics.route_warnings.inc_by(new_warnings);
        let elapsed = started.elapsed();
        let swap_started = Instant::now();
        self.metrics.table_build_seconds.observe(elapsed.as_secs_f64());
        self.metrics.template_router.observe_write_config(elapsed);
        self.metrics.table_generation.set(table.generation as i64);
        let admitted = table.routes_admitted();
        let rejected = table.routes_rejected();
        self.metrics.routes_loaded.set(admitted as i64);
        self.metrics.routes_rejected.set(rejected as i64);
        info!(
            generation = table.generation,
            admitted,
            rejected,
            build_ms = elapsed.as_secs_f64() * 1000.0,
            "route table published"
        );
        let table = Arc::new(table);
        self.table.store(table.clone());
        checks.follow(&table);
        self.readiness.mark_table_ready();
        if let Some(published) = &self.published {
            published.send_replace(table.clone());
        }
        self.metrics.template_router.observe_reload(swap_started.elapsed());
        if Arc::strong_count(&previous) == 1 {
            // The last holder of the old table: free it off the runtime.
            tokio::task::spawn_blocking(move || drop(previous));
        }
        table
    }
}

/// Logs each rejection once: only those that were not already in the previous table.
fn log_new_rejections(previous: &RouteTable, next: &RouteTable) {
    let before: HashSet<_> = previous.outcomes().filter_map(|o| o.result.as_ref().err().map(|r| (&o.key, r))).collect();
    for outcome in next.outcomes() {
        if let Err(rejection) = &outcome.result {
            if !before.contains(&(&outcome.key, rejection)) {
                warn!(route = %outcome.key, reason = rejection.reason, "{}", rejection.message);
            }
        }
    }
}

/// Logs each annotation problem once (those not already in the previous table); returns how many were new.
fn log_new_warnings(previous: &RouteTable, next: &RouteTable) -> u64 {
    let before: HashSet<_> = previous.warnings().collect();
    let mut new = 0;
    for warning @ (route, message) in next.warnings() {
        if !before.contains(warning) {
            warn!(route = %route, "{message}");
            new += 1;
        }
    }
    new
}
