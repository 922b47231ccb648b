//! The client's request body on its way to a pod, watched for the client's faults. A body that fails (chunked
//! framing the decoder refuses, a client gone mid-body, a reset HTTP/2 stream) fails the pod exchange
//! before any last chunk or END_STREAM goes out, so the pod never gets a complete request; the failure is
//! noted here so that the request is answered as the client's fault (400), not as the pod's (502). While the
//! body waits for the client's bytes, the connection's client timeout runs (`BodyWait`).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use super::client_io::BodyWait;
use super::request_body::{BoxError, RequestBody};
use crate::metrics::ProxyCounters;

/// Whether the client's body failed; shared by the body and whoever judges the exchange.
#[derive(Clone, Debug, Default)]
pub struct ClientFault(Arc<AtomicBool>);

impl ClientFault {
    /// The client's body failed: whatever the pod side reported after that is a consequence.
    pub fn happened(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn record(&self) {
        self.0.store(true, Ordering::Release);
    }
}

#[derive(Debug)]
pub struct ClientBody {
    inner: RequestBody,
    fault: ClientFault,
    /// The connection's client timeout, when the connection has one.
    wait: Option<BodyWait>,
    /// The backend and server whose `bytes_in` count the body's bytes, once the body goes to a pod.
    counters: Option<[Arc<ProxyCounters>; 2]>,
}

impl ClientBody {
    /// Watches `inner`; the returned handle tells whether it failed. `wait` reports when the body waits for
    /// the client.
    pub fn watch(inner: RequestBody, wait: Option<BodyWait>) -> (ClientBody, ClientFault) {
        let fault = ClientFault::default();
        (ClientBody { inner, fault: fault.clone(), wait, counters: None }, fault)
    }

    /// The body goes to a server of a backend: its bytes count as theirs.
    pub fn count_into(&mut self, counters: [Arc<ProxyCounters>; 2]) {
        self.counters = Some(counters);
    }
}

impl Body for ClientBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match (&polled, &self.counters) {
            (Poll::Ready(Some(Err(_))), _) => self.fault.record(),
            (Poll::Ready(Some(Ok(frame))), Some(counters)) => {
                let bytes = frame.data_ref().map_or(0, |data| data.len() as u64);
                for counters in counters {
                    counters.bytes_in.fetch_add(bytes, Ordering::Relaxed);
                }
            }
            _ => {}
        }
        if let Some(wait) = self.wait.as_mut() {
            match polled {
                Poll::Pending => wait.waiting(),
                Poll::Ready(_) => wait.received(),
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
