//! ROUTER_MAX_CONNECTIONS, HAProxy's `maxconn`: client connections open at once on the HTTP and HTTPS
//! listeners together. At the limit the accept loops stop calling accept(2), so new connections wait in the
//! kernel's listen backlog (not accepted and dropped) until a connection closes; each time the limit holds an
//! accept back is counted.

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::metrics::Metrics;

/// The connection budget shared by the :80 and :443 accept loops.
#[derive(Debug)]
pub struct ConnectionLimit {
    permits: Arc<Semaphore>,
    open: Gauge,
    held_back: Counter,
}

/// A place in the budget for the next connection, given back when dropped; counted as an open connection
/// from [`ConnectionPermit::opened`] on.
#[derive(Debug)]
pub struct ConnectionPermit {
    _permit: OwnedSemaphorePermit,
    open: Gauge,
    counted: bool,
}

impl ConnectionPermit {
    /// The connection this place was kept for is accepted.
    pub fn opened(&mut self) {
        if !self.counted {
            self.counted = true;
            self.open.inc();
        }
    }
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        if self.counted {
            self.open.dec();
        }
    }
}

impl ConnectionLimit {
    /// A budget of `max` connections (at least one), counted in `metrics`.
    pub fn new(max: usize, metrics: &Metrics) -> Arc<Self> {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        metrics.max_connections.set(i64::try_from(max).unwrap_or(i64::MAX));
        // openshift/router reads the same limit from the `public` frontend's session limit.
        metrics.haproxy.set_max_connections(max as u64);
        Arc::new(Self {
            permits: Arc::new(Semaphore::new(max)),
            open: metrics.client_connections.clone(),
            held_back: metrics.connection_limit_waits.clone(),
        })
    }

    /// A place for the next connection, waiting (and counting the wait) while every place is taken.
    /// `None` only if the budget was closed, which nothing does.
    pub async fn admit(&self) -> Option<ConnectionPermit> {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                self.held_back.inc();
                self.permits.clone().acquire_owned().await.ok()?
            }
        };
        Some(ConnectionPermit { _permit: permit, open: self.open.clone(), counted: false })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn the_third_connection_waits_for_one_of_two_to_close() {
        let metrics = Metrics::default();
        let limit = ConnectionLimit::new(2, &metrics);
        let mut first = limit.admit().await.expect("place");
        first.opened();
        let mut second = limit.admit().await.expect("place");
        second.opened();
        assert_eq!(metrics.client_connections.get(), 2);
        assert!(tokio::time::timeout(Duration::from_millis(100), limit.admit()).await.is_err(), "held back");
        assert_eq!(metrics.connection_limit_waits.get(), 1);
        let waiting = limit.admit();
        tokio::pin!(waiting);
        assert!(tokio::time::timeout(Duration::from_millis(50), waiting.as_mut()).await.is_err());
        drop(first);
        let third = tokio::time::timeout(Duration::from_secs(2), waiting).await.expect("a place freed");
        assert_eq!(metrics.client_connections.get(), 1, "kept for the next connection, not yet open");
        third.expect("place").opened();
        assert_eq!(metrics.client_connections.get(), 1, "and closed again");
        assert_eq!(metrics.max_connections.get(), 2);
    }
}
