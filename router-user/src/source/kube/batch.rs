//! Turning store changes into source updates: after the first complete sync, each burst of changes becomes one
//! whole-state snapshot. A burst ends when no change came for [`QUIET`] or `RELOAD_INTERVAL` after its first
//! change, whichever is sooner. The channel to the publisher holds one update: while the publisher builds a
//! table, at most one newer snapshot waits, and further changes are batched here meanwhile, so at most one
//! rebuild is in flight. Before a snapshot goes out, Secrets the router may not read for
//! `externalCertificate` are taken out of it (`secret_access`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;
use tracing::{info, warn};

use super::secret_access::SecretAccess;
use super::stores::Stores;
use crate::source::SourceUpdate;

/// A burst of changes ends after this long without another.
pub const QUIET: Duration = Duration::from_millis(20);

/// Sends a snapshot after the initial sync and after each burst of changes, until the receiver goes away.
pub async fn run(
    stores: Stores,
    mut access: SecretAccess,
    changes: Arc<Notify>,
    reload_interval: Duration,
    updates: mpsc::Sender<SourceUpdate>,
) {
    stores.wait_until_ready().await;
    info!("initial sync from the Kubernetes API complete");
    loop {
        let snapshot_stores = stores.clone();
        let mut snapshot = match tokio::task::spawn_blocking(move || snapshot_stores.snapshot()).await {
            Ok(snapshot) => snapshot,
            Err(error) => {
                warn!(%error, "building a snapshot from the stores failed");
                return;
            }
        };
        access.restrict(&mut snapshot).await;
        if updates.send(SourceUpdate { snapshot, errors: Vec::new() }).await.is_err() {
            return;
        }
        changes.notified().await;
        let deadline = Instant::now() + reload_interval;
        loop {
            let quiet_until = (Instant::now() + QUIET).min(deadline);
            tokio::select! {
                _ = changes.notified() => {}
                _ = tokio::time::sleep_until(quiet_until) => break,
            }
            if Instant::now() >= deadline {
                break;
            }
        }
    }
}
