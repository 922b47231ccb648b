//! One QUIC connection: its handshake (bounded by ROUTER_SLOWLORIS_TIMEOUT, as a TCP :443 handshake is), the
//! checks TCP :443 makes after one (ROUTER_MUTUAL_TLS_AUTH_FILTER: a refused subject closes the connection,
//! where TCP answers 403), then its request streams, each a task. The first request must come within
//! ROUTER_SLOWLORIS_TIMEOUT, a later one within the keep-alive timeout of the last answer; else the connection
//! is closed with GOAWAY. On shutdown: GOAWAY, the requests in flight are answered (and those the client sent
//! before it read the GOAWAY), then the connection closes once the client had time to acknowledge the answers.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rustls_pki_types::CertificateDer;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{debug, info_span, Instrument};

use super::codes::{H3_NO_ERROR, H3_REQUEST_REJECTED};
use super::request::serve_request;
use crate::https::HttpsContext;
use crate::listen::{stop_requested, ClientTimeouts};
use crate::metrics::{Frontend, TlsFailureLabels, TlsHandshakeFailureLabels, TlsHandshakeLabels};
use crate::proxy::{ClientConnection, ConnectionInfo, MultiplexedClient};
use crate::tls::{client_cert_headers, client_subject};

/// The least time a finished connection waits for the client to close it (see `linger_then_close`).
const CLOSE_LINGER_MIN: Duration = Duration::from_millis(250);
/// The least time a connection keeps accepting the requests the client sent before it read the GOAWAY.
const GOAWAY_GRACE_MIN: Duration = Duration::from_millis(20);

pub async fn serve_connection(
    incoming: quinn::Incoming,
    local: SocketAddr,
    context: Arc<HttpsContext>,
    shutdown: watch::Receiver<bool>,
) {
    let client = incoming.remote_address();
    let span = info_span!("h3", %client);
    async move {
        // Every QUIC connection is one of OpenShift's `public_ssl` sessions, as every TCP :443 one is.
        let public_ssl = context.metrics.haproxy.frontend(Frontend::PublicSsl).clone();
        let _ssl_session = public_ssl.open_session();
        let Some(quic) = handshake(incoming, &context).await else { return };
        let local = SocketAddr::new(quic.local_ip().unwrap_or(local.ip()), local.port());
        if let Some(state) = connection_state(&quic, client, local, &context) {
            let frontend = context.metrics.haproxy.frontend(state.frontend).clone();
            let _session = frontend.open_session();
            let multiplexed = Arc::new(MultiplexedClient::new(state, context.proxy.clone()));
            serve_requests(&quic, multiplexed, context.timeouts, shutdown).await;
        }
        let stats = quic.stats();
        public_ssl.add_bytes(stats.udp_rx.bytes, stats.udp_tx.bytes);
    }
    .instrument(span)
    .await
}

/// The handshake, counted as a :443 one is; `None` when it failed (counted by reason).
async fn handshake(incoming: quinn::Incoming, context: &HttpsContext) -> Option<quinn::Connection> {
    let metrics = &context.metrics;
    let fail = |reason: &'static str, handshake_reason: &'static str| {
        metrics.tls_failures.get_or_create(&TlsFailureLabels { reason }).inc();
        metrics.tls_handshake_failures.get_or_create(&TlsHandshakeFailureLabels { reason: handshake_reason }).inc();
    };
    let connecting = match incoming.accept() {
        Ok(connecting) => connecting,
        Err(error) => {
            debug!(%error, "QUIC connection not accepted");
            fail("handshake", "quic");
            return None;
        }
    };
    match tokio::time::timeout(context.timeouts.http_request, connecting).await {
        Ok(Ok(quic)) => {
            let alpn = quic_handshake_data(&quic).and_then(|data| data.protocol);
            let labels = TlsHandshakeLabels::new(Some(rustls::ProtocolVersion::TLSv1_3), alpn.as_deref());
            metrics.tls_handshakes.get_or_create(&labels).inc();
            Some(quic)
        }
        Ok(Err(error)) => {
            debug!(%error, "QUIC handshake failed");
            fail("handshake", "quic");
            None
        }
        Err(_) => {
            fail("handshake_timeout", "timeout");
            None
        }
    }
}

/// The connection's state for the proxy, as `https::terminate` makes it for a TCP one; `None` (the
/// connection closed) when ROUTER_MUTUAL_TLS_AUTH_FILTER refuses the client certificate's subject.
fn connection_state(
    quic: &quinn::Connection,
    client: SocketAddr,
    local: SocketAddr,
    context: &HttpsContext,
) -> Option<ClientConnection> {
    let peer = quic
        .peer_identity()
        .and_then(|identity| identity.downcast::<Vec<CertificateDer<'static>>>().ok())
        .map(|certs| *certs);
    if let Some(filter) = context.configs.client_subject_filter() {
        let subject = client_subject(peer.as_deref());
        if !subject.as_deref().is_some_and(|subject| filter.is_match(subject)) {
            debug!(subject = ?subject, "client certificate subject does not match ROUTER_MUTUAL_TLS_AUTH_FILTER");
            context.metrics.tls_failures.get_or_create(&TlsFailureLabels { reason: "client_subject_filter" }).inc();
            quic.close(H3_REQUEST_REJECTED, b"client certificate subject refused");
            return None;
        }
    }
    let sni = quic_handshake_data(quic).and_then(|data| data.server_name);
    let mut state = ClientConnection::new(ConnectionInfo { client, local, proto: "https" });
    state.frontend = if sni.is_some() { Frontend::FeSni } else { Frontend::FeNoSni };
    if context.client_cert_headers {
        state.tls_headers = client_cert_headers(peer.as_deref());
    }
    Some(state)
}

fn quic_handshake_data(quic: &quinn::Connection) -> Option<quinn::crypto::rustls::HandshakeData> {
    let data = quic.handshake_data()?;
    data.downcast::<quinn::crypto::rustls::HandshakeData>().ok().map(|data| *data)
}

/// Accepts request streams until the client goes, the connection idles past its timer, or shutdown.
async fn serve_requests(
    quic: &quinn::Connection,
    client: Arc<MultiplexedClient>,
    timeouts: ClientTimeouts,
    mut shutdown: watch::Receiver<bool>,
) {
    let head_limit = u64::try_from(client.proxy().request_head_limit()).unwrap_or(u64::MAX);
    let mut builder = h3::server::builder();
    builder.max_field_section_size(head_limit);
    let built = builder.build(h3_quinn::Connection::new(quic.clone()));
    let mut h3: h3::server::Connection<h3_quinn::Connection, Bytes> = match built.await {
        Ok(h3) => h3,
        Err(error) => {
            debug!(%error, "HTTP/3 connection setup failed");
            return;
        }
    };
    // Dropped when the connection ends, which aborts requests still running (their client is gone).
    let mut requests = JoinSet::new();
    let mut served_any = false;
    loop {
        let idle_limit = if served_any { timeouts.keep_alive } else { timeouts.http_request };
        let nothing_in_flight = requests.is_empty();
        tokio::select! {
            accepted = h3.accept() => match accepted {
                Ok(Some(resolver)) => {
                    served_any = true;
                    requests.spawn(serve_request(resolver, client.clone(), quic.clone()));
                }
                // The client sent GOAWAY and its requests are answered.
                Ok(None) => return linger_then_close(quic).await,
                Err(error) => {
                    debug!(%error, "HTTP/3 connection ended");
                    return;
                }
            },
            Some(_) = requests.join_next(), if !requests.is_empty() => {}
            () = idle(nothing_in_flight, idle_limit) => {
                debug!(?idle_limit, "HTTP/3 connection idle: closing");
                break;
            }
            () = stop_requested(&mut shutdown) => break,
        }
    }
    // GOAWAY: the requests the client opened so far are served, no new ones; then the connection closes.
    if let Err(error) = h3.shutdown(0).await {
        debug!(%error, "GOAWAY not sent");
        return;
    }
    // A request the client sent before the GOAWAY reached it is still on its way: accepted for two round trips
    // (as HTTP/2 servers wait a PING's round trip before their final GOAWAY), then only what is in flight.
    let grace = tokio::time::sleep(quic.rtt() * 2 + GOAWAY_GRACE_MIN);
    tokio::pin!(grace);
    let (mut accepting, mut graced) = (true, false);
    while !(graced && requests.is_empty()) {
        tokio::select! {
            accepted = h3.accept(), if accepting => match accepted {
                Ok(Some(resolver)) => {
                    requests.spawn(serve_request(resolver, client.clone(), quic.clone()));
                }
                // Nothing more to accept; the requests in flight still finish.
                Ok(None) | Err(_) => accepting = false,
            },
            Some(_) = requests.join_next(), if !requests.is_empty() => {}
            () = &mut grace, if !graced => graced = true,
        }
    }
    linger_then_close(quic).await;
}

/// Closes the connection once the client had time to acknowledge the last responses. QUIC has no close that
/// first delivers what is buffered (as a FIN after the data does on TCP): a response's tail may still be
/// unacknowledged when its request ends. Most clients close by themselves once GOAWAY came and their requests
/// are answered; the router waits for that, four round trips and `CLOSE_LINGER_MIN` at most, then closes.
async fn linger_then_close(quic: &quinn::Connection) {
    let linger = quic.rtt() * 4 + CLOSE_LINGER_MIN;
    if tokio::time::timeout(linger, quic.closed()).await.is_err() {
        quic.close(H3_NO_ERROR, b"");
    }
}

/// Resolves after `limit` when no request is in flight; never while one is.
async fn idle(nothing_in_flight: bool, limit: Duration) {
    if nothing_in_flight {
        tokio::time::sleep(limit).await;
    } else {
        std::future::pending::<()>().await;
    }
}
