//! Trying a backend's endpoints until one serves, for HTTP requests and passthrough connections alike: at
//! most `MAX_ATTEMPTS` different endpoints (HAProxy's `retries 3` with `option redispatch`). Every failed
//! attempt is logged and counted in `router_upstream_errors`, unless the client caused it; a failed connect
//! marks the endpoint down for a while and, when the caller allows it, the next endpoint is tried, as after an
//! HTTP request without a body that the endpoint closed or reset unanswered (HAProxy's `retry-on conn-failure
//! empty-response`, for idempotent methods only); any other failure ends the attempts.
//! The endpoint that serves is marked up.

use std::fmt::Display;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tracing::{debug, warn};

use super::EndpointHealth;
use crate::metrics::{CountersSlot, Metrics, UpstreamErrorLabels};

/// At most this many endpoints are tried for one request or passthrough connection.
pub const MAX_ATTEMPTS: usize = 3;

/// An endpoint picked for one attempt.
pub trait PickedEndpoint {
    /// Its position among the backend's endpoints.
    fn index(&self) -> usize;
    fn addr(&self) -> SocketAddr;
    fn health(&self) -> &EndpointHealth;
    /// Its server id and the slot of its `haproxy_server_*` counters, when it has them.
    fn proxy(&self) -> Option<(&str, &CountersSlot)> {
        None
    }
}

/// Why an attempt failed.
pub trait AttemptError: Display {
    /// The `kind` label of `router_upstream_errors`: `connect`, `timeout` or `response`.
    fn kind(&self) -> &'static str;
    /// The endpoint could not be reached: nothing was exchanged, so another endpoint may be tried.
    fn is_connect(&self) -> bool;
    /// Another endpoint may be tried: the endpoint could not be reached, or (HTTP) it closed or reset the
    /// connection before answering an idempotent request without a body.
    fn may_try_another(&self) -> bool {
        self.is_connect()
    }
    /// The attempt failed because of the client (its request body broke): neither counted nor logged as the
    /// endpoint's failure, and no other endpoint is tried.
    fn blames_client(&self) -> bool {
        false
    }
}

/// What is tried on each endpoint, and how the next endpoint is picked: one request, or one passthrough
/// connection. (The futures are declared `Send` so that callers' futures stay `Send`.)
pub trait EndpointTrial {
    type Picked: PickedEndpoint + Send;
    /// What an endpoint that served gave (a response, a connection).
    type Served: Send;
    type Error: AttemptError + Send;

    /// The next endpoint to try, given the indices tried so far; `None` ends the attempts.
    fn pick(&mut self, tried: &[usize]) -> impl Future<Output = Option<Self::Picked>> + Send;

    /// One attempt on `picked`.
    fn try_endpoint(&mut self, picked: &Self::Picked)
        -> impl Future<Output = Result<Self::Served, Self::Error>> + Send;
}

/// How the attempts ended when no endpoint served.
#[derive(Debug)]
pub enum GaveUp<E> {
    /// No endpoint left to try: none could be picked, or every allowed attempt failed to connect.
    Exhausted,
    /// An attempt failed in a way that is not retried (any failure but a connect, or a connect when the
    /// caller does not retry).
    Failed(E),
}

/// One backend's attempts for one request or connection.
pub struct Attempts<'a> {
    /// The backend's name, for the metric and the log.
    pub backend: &'a Arc<str>,
    /// How many endpoints the backend has (no more attempts than that).
    pub endpoints: usize,
    pub metrics: &'a Metrics,
    /// After a failed connect, try another endpoint (a request without a body, a passthrough connection).
    pub retry_connect: bool,
}

impl Attempts<'_> {
    /// Picks and tries endpoints as `trial` says until one serves: returns it with what it served.
    pub async fn run<T: EndpointTrial>(&self, trial: &mut T) -> Result<(T::Picked, T::Served), GaveUp<T::Error>> {
        let mut tried = Vec::with_capacity(MAX_ATTEMPTS);
        while tried.len() < MAX_ATTEMPTS.min(self.endpoints) {
            let Some(picked) = trial.pick(&tried).await else { break };
            tried.push(picked.index());
            match trial.try_endpoint(&picked).await {
                Ok(served) => {
                    picked.health().mark_up();
                    return Ok((picked, served));
                }
                Err(error) if error.blames_client() => {
                    debug!(backend = %self.backend, endpoint = %picked.addr(), %error, "attempt ended by the client");
                    return Err(GaveUp::Failed(error));
                }
                Err(error) => {
                    let kind = error.kind();
                    let labels = UpstreamErrorLabels { backend: self.backend.clone(), kind };
                    self.metrics.upstream_errors.get_or_create(&labels).inc();
                    self.count_haproxy_error(&picked, error.is_connect());
                    warn!(backend = %self.backend, endpoint = %picked.addr(), kind, %error, "endpoint attempt failed");
                    if !error.may_try_another() {
                        return Err(GaveUp::Failed(error));
                    }
                    if error.is_connect() {
                        picked.health().mark_down();
                    }
                    if !self.retry_connect {
                        return Err(GaveUp::Failed(error));
                    }
                }
            }
        }
        Err(GaveUp::Exhausted)
    }

    /// A failed attempt in the `haproxy_*` counters: a connection error when nothing was exchanged, else a
    /// response error, for the backend and the server.
    fn count_haproxy_error(&self, picked: &impl PickedEndpoint, connect: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        let backend = self.metrics.haproxy.backend_named(self.backend);
        let server = picked.proxy().map(|(id, slot)| self.metrics.haproxy.server(self.backend, id, slot).clone());
        for counters in std::iter::once(&backend).chain(server.as_ref()) {
            let counter = if connect { &counters.connection_errors } else { &counters.response_errors };
            counter.fetch_add(1, Relaxed);
        }
    }
}
