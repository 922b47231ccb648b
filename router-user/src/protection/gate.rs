//! A route's checks on a client, for HTTP requests and passthrough connections alike: its IP allowlist,
//! then its per-client connection limits (`concurrent-tcp`, `rate-tcp`) and, for HTTP, its request limit
//! (`rate-http`). A refused client's connection is closed without an answer, as HAProxy's
//! `tcp-request content reject` does; every refusal is counted in `router_connections_refused` with its
//! reason.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::{ConnectionTicket, RateLimiter};
use crate::metrics::{Metrics, RefusedLabels};
use crate::policy::IpAllowlist;

/// A client turned away by a route (already counted); its connection is to be closed unanswered.
#[derive(Debug, thiserror::Error)]
#[error("client {client} refused by {backend}: {reason}")]
pub struct RefusedConnection {
    client: IpAddr,
    backend: Arc<str>,
    reason: &'static str,
}

/// The routes whose connection limits count one client connection (an HTTP connection may carry requests
/// for several routes): each counts it once, until the connection closes.
#[derive(Debug, Default)]
pub struct ConnectionTickets(Mutex<Vec<(usize, ConnectionTicket)>>);

/// One route's checks, with where refusals are counted.
pub struct RouteGate<'a> {
    /// The route's backend name (the metric's label).
    pub backend: &'a Arc<str>,
    pub allowlist: Option<&'a IpAllowlist>,
    pub limiter: Option<&'a RateLimiter>,
    pub metrics: &'a Metrics,
}

impl RouteGate<'_> {
    /// A new connection from `client` (passthrough): the allowlist, then the connection limits. The ticket,
    /// when the route limits connections, counts the connection until it is dropped.
    pub fn admit_connection(&self, client: IpAddr) -> Result<Option<ConnectionTicket>, RefusedConnection> {
        self.check_allowlist(client)?;
        let Some(limiter) = self.limiter else { return Ok(None) };
        limiter.connect(client, Instant::now()).map(Some).map_err(|refused| self.refuse(client, refused.reason()))
    }

    /// A request from `client` on a connection whose route tickets are `tickets`: the allowlist, the
    /// connection limits the first time this route sees the connection, then the request limits.
    pub fn admit_request(&self, client: IpAddr, tickets: &ConnectionTickets) -> Result<(), RefusedConnection> {
        self.check_allowlist(client)?;
        let Some(limiter) = self.limiter else { return Ok(()) };
        let now = Instant::now();
        let mut held = tickets.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !held.iter().any(|(id, _)| *id == limiter.id()) {
            match limiter.connect(client, now) {
                Ok(ticket) => held.push((limiter.id(), ticket)),
                Err(refused) => return Err(self.refuse(client, refused.reason())),
            }
        }
        drop(held);
        limiter.request(client, now).map_err(|refused| self.refuse(client, refused.reason()))
    }

    fn check_allowlist(&self, client: IpAddr) -> Result<(), RefusedConnection> {
        match self.allowlist {
            Some(list) if !list.allows(client) => Err(self.refuse(client, "ip_allowlist")),
            _ => Ok(()),
        }
    }

    /// Counts the refusal and names it.
    fn refuse(&self, client: IpAddr, reason: &'static str) -> RefusedConnection {
        let labels = RefusedLabels { backend: self.backend.clone(), reason };
        self.metrics.refused.get_or_create(&labels).inc();
        RefusedConnection { client, backend: self.backend.clone(), reason }
    }
}
