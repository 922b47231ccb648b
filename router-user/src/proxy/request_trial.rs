//! One request's attempts on its backend's endpoints, as `balance::Attempts` drives them: the sticky
//! endpoint first (when the cookie names one that is up), then the balancer's picks, waiting up to the queue
//! timeout when every endpoint is at its `pod-concurrent-connections` cap; each attempt sends the request
//! the way the endpoint takes it (HTTP/1.1, h2c or reencrypt). An attempt that failed after the client's body
//! did is the client's failure.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use http::{request, Response};

use super::client_body::{ClientBody, ClientFault};
use super::lease::EndpointLease;
use super::upstream::{PodResponseBody, Upstream, UpstreamError, Via};
use super::wire_size::request_head_size;
use crate::balance::EndpointTrial;
use crate::metrics::{ProxyCounters, ProxyRegistry};
use crate::table::Backend;

pub struct RequestTrial<'r> {
    pub backend: &'r Arc<Backend>,
    pub client: IpAddr,
    /// The endpoint the sticky cookie names, until it is tried.
    pub sticky: Option<usize>,
    /// How long a pick waits for a free `pod-concurrent-connections` slot.
    pub queue_timeout: Duration,
    pub upstream: &'r Upstream,
    /// The request as rewritten for the pod.
    pub parts: &'r request::Parts,
    /// The client's body, until an attempt takes it (a request with a body is tried once).
    pub body: Option<ClientBody>,
    /// Whether that body failed (`None`: no body).
    pub client_fault: Option<ClientFault>,
    /// The `haproxy_*` counters: the backend's (its queue, bytes), and where the servers' are found.
    pub backend_proxy: &'r Arc<ProxyCounters>,
    pub proxies: &'r ProxyRegistry,
    /// How long the pick waited in the backend's queue for a free slot.
    pub queued_for: Duration,
}

impl EndpointTrial for RequestTrial<'_> {
    type Picked = EndpointLease;
    type Served = Response<PodResponseBody>;
    type Error = UpstreamError;

    async fn pick(&mut self, tried: &[usize]) -> Option<EndpointLease> {
        match self.sticky.take().and_then(|index| EndpointLease::take(self.backend, index)) {
            Some(lease) => Some(lease),
            None => self.lease(tried).await,
        }
    }

    async fn try_endpoint(&mut self, lease: &EndpointLease) -> Result<Response<PodResponseBody>, UpstreamError> {
        let endpoint = lease.endpoint();
        let via = match (&self.backend.reencrypt, endpoint.h2c) {
            (Some(reencrypt), _) => Via::Reencrypt(reencrypt),
            (None, true) => Via::H2c,
            (None, false) => Via::Http1,
        };
        let server_timeout = self.backend.policy.server_timeout;
        let server = self.proxies.server(&self.backend.labels.backend, &endpoint.id, &endpoint.proxy);
        let counters = [self.backend_proxy.clone(), server.clone()];
        let mut body = self.body.take();
        if let Some(body) = body.as_mut() {
            body.count_into(counters.clone());
        }
        let sent = self.upstream.send(endpoint.addr, self.parts, body, via, server_timeout).await;
        if !matches!(sent, Err(UpstreamError::Connect(_))) {
            // The head went to the pod (its body counts as it goes).
            let head = request_head_size(self.parts);
            for counters in &counters {
                counters.bytes_in.fetch_add(head, Ordering::Relaxed);
            }
        }
        sent.map_err(|error| match self.client_fault.as_ref().is_some_and(ClientFault::happened) {
            true => UpstreamError::ClientBody(error.into()),
            false => error,
        })
    }
}

impl RequestTrial<'_> {
    /// The balancer's pick, waiting up to the queue timeout when every endpoint is at its concurrency cap.
    async fn lease(&mut self, tried: &[usize]) -> Option<EndpointLease> {
        let backend = self.backend;
        let started = tokio::time::Instant::now();
        let deadline = started + self.queue_timeout;
        // In the backend's queue (`haproxy_backend_current_queue`) from the first wait until a pick or give-up.
        let mut queued = None;
        loop {
            let freed = backend.endpoints.iter().find_map(|e| e.slots.as_ref()).map(|slots| slots.freed());
            let notified = freed.as_ref().map(|notify| notify.notified());
            if let Some(index) = backend.pick(self.client, tried) {
                if let Some(lease) = EndpointLease::take(backend, index) {
                    self.queued_for = started.elapsed();
                    return Some(lease);
                }
            }
            let capped = backend
                .endpoints
                .iter()
                .enumerate()
                .any(|(i, e)| !tried.contains(&i) && e.weight > 0 && e.slots.is_some());
            let notified = notified.filter(|_| capped)?;
            queued.get_or_insert_with(|| self.backend_proxy.enter_queue());
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }
}
