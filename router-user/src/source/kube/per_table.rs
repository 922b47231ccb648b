//! The feed both status writers run on: each table the publisher publishes, and the same table again a second
//! later while the last pass left a write to retry (a conflict or a failed request), unless a newer one comes
//! first.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::table::RouteTable;

/// Wait before a pass that retries what the last one could not write.
const RETRY_AFTER: Duration = Duration::from_secs(1);

pub struct TableFeed {
    tables: watch::Receiver<Arc<RouteTable>>,
    /// The last pass left a write to retry.
    pub retry: bool,
}

impl TableFeed {
    pub fn new(tables: watch::Receiver<Arc<RouteTable>>) -> Self {
        Self { tables, retry: false }
    }

    /// The table for the next pass; `None` once the publisher is gone.
    pub async fn next(&mut self) -> Option<Arc<RouteTable>> {
        if self.retry {
            tokio::select! {
                changed = self.tables.changed() => changed.ok()?,
                _ = tokio::time::sleep(RETRY_AFTER) => {}
            }
        } else {
            self.tables.changed().await.ok()?;
        }
        Some(self.tables.borrow_and_update().clone())
    }
}
