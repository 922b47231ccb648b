//! A passthrough route's connection: the route's checks on the client (`protection::RouteGate`), a pod
//! chosen by the route's balancer (by default a consistent hash of the client address,
//! `ROUTER_TCP_BALANCE_SCHEME=source`) and connected with retries (`balance::Attempts`), the buffered
//! ClientHello sent first, then the bytes carried both ways by a passthrough relay (`relay`) until both
//! sides close or the tunnel timeout passes with no traffic. With `--xdp-steer-passthrough`, the chosen pod
//! is first offered the connection through the XDP datapath (`relay::steer`), which then carries it
//! without the router; the relay takes whatever the setup gives back.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tracing::debug;

use super::HttpsContext;
use crate::access_log::{LineKind, LogRecord, OpenConnection, Termination, PUBLIC_SSL};
use crate::balance::{AttemptError, Attempts, EndpointHealth, EndpointTrial, PickedEndpoint};
use crate::metrics::{BackendOnlyLabels, CountersSlot, Frontend, PassthroughLabels, TlsFailureLabels};
use crate::protection::{ConnectionTicket, RouteGate};
use crate::relay::SteerOutcome;
use crate::table::{Backend, Endpoint};

pub async fn relay_to_pod(
    client_stream: TcpStream,
    client: SocketAddr,
    hello: Vec<u8>,
    backend: Arc<Backend>,
    context: &HttpsContext,
) {
    let labels = &backend.labels;
    let mut line = TcpLine::begin(context, &client_stream, client, &backend);
    let gate = RouteGate {
        backend: &labels.backend,
        allowlist: backend.policy.allowlist.as_ref(),
        limiter: backend.limiter.as_ref(),
        metrics: &context.metrics,
    };
    // concurrent-tcp and rate-tcp apply to passthrough; rate-http cannot (no requests are seen). Shared with a
    // steered flow, which keeps it until the datapath's flow ends.
    let ticket = match gate.admit_connection(client.ip()) {
        Ok(ticket) => Arc::new(ticket),
        Err(refused) => {
            debug!(%refused, "passthrough connection refused");
            line.end(Termination::new(b'P', b'R'), 0, 0);
            return;
        }
    };
    let client_stream = if context.passthrough_relay.steers() {
        match offer_to_xdp(client_stream, client, &hello, &backend, &ticket, context).await {
            Some(stream) => stream,
            None => {
                // Handed to the XDP datapath: the router saw only the ClientHello.
                line.end(Termination::NORMAL, 0, hello.len() as u64);
                return;
            }
        }
    } else {
        client_stream
    };
    let connecting = Instant::now();
    let Some((endpoint, mut pod)) = connect(&backend, client, context).await else {
        context.metrics.tls_failures.get_or_create(&TlsFailureLabels { reason: "no_endpoint" }).inc();
        line.end(Termination::new(b'S', b'C'), 0, hello.len() as u64);
        return;
    };
    line.connected(endpoint, connecting.elapsed());
    if let Err(error) = pod.write_all(&hello).await {
        debug!(endpoint = %endpoint.addr, %error, "pod closed before the ClientHello was forwarded");
        return;
    }
    context.metrics.passthrough_connections.get_or_create(&BackendOnlyLabels { backend: labels.backend.clone() }).inc();
    let backend_proxy = context.metrics.backend_proxy(labels, &backend.requests);
    let _session = backend_proxy.open_session();
    let server_proxy = context.metrics.haproxy.server(&labels.backend, &endpoint.id, &endpoint.proxy);
    server_proxy.count_session();
    // Counted for leastconn while the connection lasts.
    endpoint.in_flight.enter();
    server_proxy.observe_concurrency(u64::from(endpoint.in_flight.get()));
    let relayed = context.passthrough_relay.carry(client_stream, pod, backend.policy.tunnel_timeout).await;
    endpoint.in_flight.leave();
    match relayed {
        Ok(stats) => {
            let count = |direction, bytes: u64| {
                let labels = PassthroughLabels { backend: labels.backend.clone(), direction };
                context.metrics.passthrough_bytes.get_or_create(&labels).inc_by(bytes);
            };
            count("in", stats.to_pod + hello.len() as u64);
            count("out", stats.to_client);
            let public_ssl = context.metrics.haproxy.frontend(Frontend::PublicSsl);
            for proxy in [backend_proxy, server_proxy, public_ssl] {
                proxy.add_bytes(stats.to_pod + hello.len() as u64, stats.to_client);
            }
            line.end(Termination::NORMAL, stats.to_client, stats.to_pod + hello.len() as u64);
        }
        Err(error) => {
            debug!(endpoint = %endpoint.addr, %error, "passthrough relay ended with an error");
            line.end(Termination::new(b'S', b'D'), 0, hello.len() as u64);
        }
    }
}

/// The tcplog line of a passthrough connection, when the access log is on.
struct TcpLine {
    open: Option<(OpenConnection, LogRecord, Instant)>,
    log: Arc<crate::access_log::AccessLog>,
}

impl TcpLine {
    fn begin(context: &HttpsContext, stream: &TcpStream, client: SocketAddr, backend: &Backend) -> TcpLine {
        let log = context.proxy.access_log().clone();
        let open = match (log.enabled(), stream.local_addr()) {
            (true, Ok(local)) => {
                let open = OpenConnection::new(&log, PUBLIC_SSL);
                let mut record = LogRecord::new(PUBLIC_SSL, false, client, local);
                record.backend = backend.labels.backend.clone();
                record.request_counter = log.next_request_number();
                let (active, frontend) = log.connections.now(PUBLIC_SSL);
                (record.counts.active, record.counts.frontend) = (active, frontend);
                Some((open, record, Instant::now()))
            }
            _ => None,
        };
        TcpLine { open, log }
    }

    fn connected(&mut self, endpoint: &Endpoint, took: Duration) {
        if let Some((_, record, _)) = &mut self.open {
            record.server = Some((endpoint.id.clone(), endpoint.addr));
            record.counts.server = u64::from(endpoint.in_flight.get());
            record.timers.queue = 0;
            record.timers.connect = took.as_millis() as i64;
        }
    }

    fn end(self, termination: Termination, to_client: u64, from_client: u64) {
        if let Some((open, mut record, started)) = self.open {
            record.termination = termination;
            record.bytes_read = to_client;
            record.bytes_uploaded = from_client;
            record.timers.total = started.elapsed().as_millis() as i64;
            drop(open);
            self.log.log(LineKind::Tcp, record);
        }
    }
}

/// Offers the connection to the XDP datapath for the pod the route's balancer picks; `None` when the
/// datapath took it (counted like a relayed connection) or it was lost, else the stream back.
async fn offer_to_xdp(
    stream: TcpStream,
    client: SocketAddr,
    hello: &[u8],
    backend: &Arc<Backend>,
    ticket: &Arc<Option<ConnectionTicket>>,
    context: &HttpsContext,
) -> Option<TcpStream> {
    let endpoints = &backend.endpoints;
    // Weight 0 takes no new passthrough connections, as in `ConnectTrial::pick`.
    let Some(index) = backend.pick(client.ip(), &[]).filter(|i| endpoints[*i].weight > 0) else {
        return Some(stream);
    };
    let pod = endpoints[index].addr;
    let share = Box::new(SteeredShare::enter(backend, index, ticket));
    match context.passthrough_relay.steer(stream, hello, pod, backend.policy.tunnel_timeout, share).await {
        SteerOutcome::Steered => {
            let labels = BackendOnlyLabels { backend: backend.labels.backend.clone() };
            context.metrics.passthrough_connections.get_or_create(&labels).inc();
            None
        }
        SteerOutcome::Lost => None,
        SteerOutcome::NotSteered(stream) => Some(stream),
    }
}

/// A steered connection's part in its route's counts while the datapath carries it, as the relay's
/// connection has while it relays: its pod in flight (least-connections, `haproxy_server_current_sessions`)
/// and the route's concurrent-tcp ticket. The steering setup drops it when the flow ends.
struct SteeredShare {
    backend: Arc<Backend>,
    index: usize,
    _ticket: Arc<Option<ConnectionTicket>>,
}

impl SteeredShare {
    fn enter(backend: &Arc<Backend>, index: usize, ticket: &Arc<Option<ConnectionTicket>>) -> SteeredShare {
        backend.endpoints[index].in_flight.enter();
        SteeredShare { backend: backend.clone(), index, _ticket: ticket.clone() }
    }
}

impl Drop for SteeredShare {
    fn drop(&mut self) {
        self.backend.endpoints[self.index].in_flight.leave();
    }
}

/// A connection to one of the route's pods, trying others when a connect fails.
async fn connect<'b>(
    backend: &'b Backend,
    client: SocketAddr,
    context: &HttpsContext,
) -> Option<(&'b Endpoint, TcpStream)> {
    let attempts = Attempts {
        backend: &backend.labels.backend,
        endpoints: backend.endpoints.len(),
        metrics: &context.metrics,
        retry_connect: true,
    };
    let mut trial = ConnectTrial { backend, client: client.ip(), connect_timeout: context.connect_timeout };
    let (picked, stream) = attempts.run(&mut trial).await.ok()?;
    Some((picked.endpoint, stream))
}

/// A passthrough connection's attempts: the balancer's picks, each connected to.
struct ConnectTrial<'b> {
    backend: &'b Backend,
    client: IpAddr,
    connect_timeout: Duration,
}

impl<'b> EndpointTrial for ConnectTrial<'b> {
    type Picked = PickedPod<'b>;
    type Served = TcpStream;
    type Error = PodConnectError;

    async fn pick(&mut self, tried: &[usize]) -> Option<PickedPod<'b>> {
        let endpoints = &self.backend.endpoints;
        // Weight 0 takes no new passthrough connections: there is no cookie to keep a session.
        let index = self.backend.pick(self.client, tried).filter(|i| endpoints[*i].weight > 0)?;
        Some(PickedPod { index, endpoint: &endpoints[index] })
    }

    async fn try_endpoint(&mut self, pod: &PickedPod<'b>) -> Result<TcpStream, PodConnectError> {
        match tokio::time::timeout(self.connect_timeout, TcpStream::connect(pod.endpoint.addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                Ok(stream)
            }
            Ok(Err(error)) => Err(PodConnectError::Failed(error)),
            Err(_) => Err(PodConnectError::TimedOut(self.connect_timeout)),
        }
    }
}

/// An endpoint picked for a passthrough connection.
struct PickedPod<'b> {
    index: usize,
    endpoint: &'b Endpoint,
}

impl PickedEndpoint for PickedPod<'_> {
    fn index(&self) -> usize {
        self.index
    }

    fn addr(&self) -> SocketAddr {
        self.endpoint.addr
    }

    fn health(&self) -> &EndpointHealth {
        &self.endpoint.health
    }

    fn proxy(&self) -> Option<(&str, &CountersSlot)> {
        Some((&self.endpoint.id, &self.endpoint.proxy))
    }
}

/// A failed connect to a passthrough route's pod.
#[derive(Debug, thiserror::Error)]
enum PodConnectError {
    #[error("connect: {0}")]
    Failed(#[source] io::Error),
    #[error("connect timed out after {0:?}")]
    TimedOut(Duration),
}

impl AttemptError for PodConnectError {
    fn kind(&self) -> &'static str {
        "connect"
    }

    fn is_connect(&self) -> bool {
        true
    }
}
