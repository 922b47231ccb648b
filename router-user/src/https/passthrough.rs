//! A passthrough route's connection: a pod chosen by the route's balancer (by default a consistent hash of
//! the client address, `ROUTER_TCP_BALANCE_SCHEME=source`), the buffered ClientHello sent first, then the
//! bytes relayed both ways until both sides close or the tunnel timeout passes with no traffic.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tracing::{debug, warn};

use super::splice::{relay, RelayStats};
use super::HttpsContext;
use crate::metrics::{BackendOnlyLabels, PassthroughLabels, RefusedLabels, TlsFailureLabels, UpstreamErrorLabels};
use crate::proxy::MAX_ATTEMPTS;
use crate::table::Backend;

pub async fn relay_to_pod(
    client_stream: TcpStream,
    client: SocketAddr,
    hello: Vec<u8>,
    backend: Arc<Backend>,
    context: &HttpsContext,
) {
    let labels = &backend.labels;
    let refuse = |reason: &'static str| {
        debug!(backend = %labels.backend, reason, "passthrough connection refused");
        context.metrics.refused.get_or_create(&RefusedLabels { backend: labels.backend.clone(), reason }).inc();
    };
    if backend.policy.allowlist.as_ref().is_some_and(|list| !list.allows(client.ip())) {
        return refuse("ip_allowlist");
    }
    // concurrent-tcp and rate-tcp apply to passthrough; rate-http cannot (no requests are seen).
    let _ticket = match &backend.limiter {
        Some(limiter) => match limiter.connect(client.ip(), Instant::now()) {
            Ok(ticket) => Some(ticket),
            Err(refused) => return refuse(refused.reason()),
        },
        None => None,
    };
    let Some((index, mut pod)) = connect(&backend, client, context).await else {
        context.metrics.tls_failures.get_or_create(&TlsFailureLabels { reason: "no_endpoint" }).inc();
        return;
    };
    let endpoint = &backend.endpoints[index];
    if let Err(error) = pod.write_all(&hello).await {
        debug!(endpoint = %endpoint.addr, %error, "pod closed before the ClientHello was forwarded");
        return;
    }
    context.metrics.passthrough_connections.get_or_create(&BackendOnlyLabels { backend: labels.backend.clone() }).inc();
    // Counted for leastconn while the connection lasts.
    endpoint.in_flight.enter();
    let relayed = relay_either(client_stream, pod, backend.policy.tunnel_timeout, context).await;
    endpoint.in_flight.leave();
    match relayed {
        Ok(stats) => {
            let count = |direction, bytes: u64| {
                let labels = PassthroughLabels { backend: labels.backend.clone(), direction };
                context.metrics.passthrough_bytes.get_or_create(&labels).inc_by(bytes);
            };
            count("in", stats.to_pod + hello.len() as u64);
            count("out", stats.to_client);
        }
        Err(error) => debug!(endpoint = %endpoint.addr, %error, "passthrough relay ended with an error"),
    }
}

/// Relays in the kernel when the sockmap splice is loaded, else (or when it refuses) in userspace.
async fn relay_either(
    client: TcpStream,
    pod: TcpStream,
    idle: std::time::Duration,
    context: &HttpsContext,
) -> std::io::Result<RelayStats> {
    let Some(sockmap) = &context.passthrough_sockmap else { return relay(client, pod, idle).await };
    match sockmap.relay_in_kernel(client, pod, idle).await {
        Ok(relayed) => relayed,
        Err(refused) => {
            debug!(reason = %refused.reason, "sockmap splice refused; relaying in userspace");
            relay(refused.client, refused.pod, idle).await
        }
    }
}

/// A connection to one of the route's pods, trying others when a connect fails.
async fn connect(backend: &Backend, client: SocketAddr, context: &HttpsContext) -> Option<(usize, TcpStream)> {
    let mut tried = Vec::with_capacity(MAX_ATTEMPTS);
    while tried.len() < MAX_ATTEMPTS.min(backend.endpoints.len()) {
        // Weight 0 takes no new passthrough connections: there is no cookie to keep a session.
        let index = backend.pick(client.ip(), &tried).filter(|i| backend.endpoints[*i].weight > 0)?;
        tried.push(index);
        let endpoint = &backend.endpoints[index];
        match tokio::time::timeout(context.connect_timeout, TcpStream::connect(endpoint.addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                endpoint.health.mark_up();
                return Some((index, stream));
            }
            result => {
                let error = result.map_or_else(|_| "connect timed out".to_string(), |r| format!("{:?}", r.err()));
                warn!(backend = %backend.labels.backend, endpoint = %endpoint.addr, %error, "passthrough connect failed");
                let labels = UpstreamErrorLabels { backend: backend.labels.backend.clone(), kind: "connect" };
                context.metrics.upstream_errors.get_or_create(&labels).inc();
                endpoint.health.mark_down();
            }
        }
    }
    None
}
