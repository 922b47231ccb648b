//! An endpoint in use by one request: counted in flight (least-connections, random's second draw) and
//! holding a `pod-concurrent-connections` slot, from the pick until the response body is finished; it is
//! what `balance::Attempts` tries for a request.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use super::upstream::PodResponseBody;
use crate::balance::{EndpointHealth, PickedEndpoint};
use crate::metrics::{CountersSlot, ProxyCounters};
use crate::table::{Backend, Endpoint};

pub struct EndpointLease {
    backend: Arc<Backend>,
    index: usize,
}

impl EndpointLease {
    /// Takes endpoint `index` of `backend`, or `None` when its slots are all in use.
    pub fn take(backend: &Arc<Backend>, index: usize) -> Option<EndpointLease> {
        let endpoint = &backend.endpoints[index];
        if let Some(slots) = &endpoint.slots {
            if !slots.try_take() {
                return None;
            }
        }
        endpoint.in_flight.enter();
        Some(EndpointLease { backend: backend.clone(), index })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.backend.endpoints[self.index]
    }

    pub fn index(&self) -> usize {
        self.index
    }
}

impl PickedEndpoint for EndpointLease {
    fn index(&self) -> usize {
        EndpointLease::index(self)
    }

    fn addr(&self) -> SocketAddr {
        self.endpoint().addr
    }

    fn health(&self) -> &EndpointHealth {
        &self.endpoint().health
    }

    fn proxy(&self) -> Option<(&str, &CountersSlot)> {
        Some((&self.endpoint().id, &self.endpoint().proxy))
    }
}

impl Drop for EndpointLease {
    fn drop(&mut self) {
        let endpoint = &self.backend.endpoints[self.index];
        endpoint.in_flight.leave();
        if let Some(slots) = &endpoint.slots {
            slots.release();
        }
    }
}

/// A pod's response body that keeps the endpoint leased until it is fully sent or dropped, its bytes counted
/// as sent by the backend's and the server's `haproxy_*` counters.
pub struct LeasedBody {
    inner: PodResponseBody,
    _lease: Option<EndpointLease>,
    counters: Option<[Arc<ProxyCounters>; 2]>,
}

impl LeasedBody {
    pub fn new(
        inner: PodResponseBody,
        lease: Option<EndpointLease>,
        counters: Option<[Arc<ProxyCounters>; 2]>,
    ) -> Self {
        Self { inner, _lease: lease, counters }
    }
}

impl Body for LeasedBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let (Poll::Ready(Some(Ok(frame))), Some(counters)) = (&polled, &self.counters) {
            if let Some(data) = frame.data_ref() {
                for counters in counters {
                    counters.add_bytes(0, data.len() as u64);
                }
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
