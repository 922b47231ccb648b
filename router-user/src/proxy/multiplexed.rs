//! The requests of a client connection whose streams another server reads (HTTP/3, read by `http3`): each
//! goes through the same handler as an HTTP/2 stream's (routing, client certificate verdicts, protection,
//! rewriting, forwarding, access log, metrics), timed by the connection's clock as HTTP/2 streams are (no head
//! or body timer per stream: the connection carries other streams meanwhile; the transport's idle timeout
//! bounds a silent client).

use std::sync::Arc;

use http::{Request, Response};

use super::client_io::{ConnectionClock, InFlightBody};
use super::handler::{ClientConnection, HttpProxy};
use super::request_body::RequestBody;
use super::request_log::LoggedBody;
use super::response::ProxyBody;
use crate::access_log::{OpenConnection, FE_SNI};
use crate::protection::RefusedConnection;

/// A response body as the multiplexed connection's server writes it: finished (or dropped), it ends its
/// request for the connection's clock and writes the access log line.
pub type StreamResponseBody = InFlightBody<LoggedBody<ProxyBody>>;

/// One multiplexed client connection's side of the proxy, shared by its streams.
pub struct MultiplexedClient {
    state: ClientConnection,
    proxy: Arc<HttpProxy>,
    clock: Arc<ConnectionClock>,
    /// Counts the connection on its frontend for the access log's `%ac` / `%fc` while it is open.
    _counted: Option<OpenConnection>,
}

impl MultiplexedClient {
    pub fn new(state: ClientConnection, proxy: Arc<HttpProxy>) -> MultiplexedClient {
        let access_log = proxy.access_log();
        let counted = access_log.enabled().then(|| OpenConnection::new(access_log, FE_SNI));
        MultiplexedClient { state, proxy, clock: ConnectionClock::new(true), _counted: counted }
    }

    /// Answers one stream's request; `Err` when the route's protection refused the client (the connection is
    /// to be closed without an answer, as on HTTP/2).
    pub async fn serve(
        &self,
        request: Request<RequestBody>,
    ) -> Result<Response<StreamResponseBody>, RefusedConnection> {
        let timing = self.clock.head_timing();
        let in_flight = self.clock.request_started();
        let response = self.proxy.handle(&self.state, request, timing).await?;
        Ok(response.map(|body| InFlightBody::new(body, in_flight)))
    }

    /// A request is being served (its response body included).
    pub fn busy(&self) -> bool {
        self.clock.busy()
    }

    pub fn proxy(&self) -> &Arc<HttpProxy> {
        &self.proxy
    }
}
