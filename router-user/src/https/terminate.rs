//! TLS termination of a :443 connection: the certificate for its SNI (a route's own, a wildcard route's, or
//! the default), HTTP/2 offered only with a certificate exactly one route uses (a connection on a shared or
//! default certificate must not be coalesced across hosts), then HTTP over the decrypted stream. With
//! ROUTER_STRICT_SNI a name without a route certificate that the default one does not carry is refused in the
//! handshake; with ROUTER_MUTUAL_TLS_AUTH_FILTER a client whose certificate subject does not match gets 403 for
//! every request. A resumed session whose client certificate no longer verifies (revoked since) is closed.
//! An SNI whose route checks client certificates itself (`router.openshift.io/client-tls-ca`) gets that
//! route's verifier in the handshake; the check made goes with the connection, for its requests to compare.

use std::net::SocketAddr;

use rustls::HandshakeKind;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tracing::debug;

use super::forbidden::serve_forbidden;
use super::inspect::Inspected;
use super::HttpsContext;
use crate::listen::{CountedIo, Prefixed};
use crate::metrics::{tls_failure_reason, Frontend, TlsFailureLabels, TlsHandshakeFailureLabels, TlsHandshakeLabels};
use crate::proxy::{serve_client, ClientConnection, ConnectionInfo, HandshakeCheck, HttpVersion};
use crate::tls::{client_cert_headers, client_subject};

pub async fn serve(
    stream: TcpStream,
    client: SocketAddr,
    hello: Inspected,
    context: &HttpsContext,
    shutdown: watch::Receiver<bool>,
) {
    let fail = |reason: &'static str| context.metrics.tls_failures.get_or_create(&TlsFailureLabels { reason }).inc();
    let Ok(local) = stream.local_addr() else { return };
    let (certs, route_check) = {
        let table = context.table.load();
        (table.certs.clone(), table.client_auth(hello.server_name.as_deref()).cloned())
    };
    let Some(certs) = certs else {
        fail("no_certificate");
        return;
    };
    let choice = certs.find(hello.server_name.as_deref());
    let strict_refusal = !choice.own && !context.configs.serves_default_for(hello.server_name.as_deref());
    let config = match (strict_refusal, &route_check) {
        (true, _) => context.configs.refusing(),
        (false, Some(check)) => context.configs.for_client_auth(choice.key, choice.offer_h2, check.verifier()),
        (false, None) => context.configs.for_connection(choice.key, choice.offer_h2),
    };
    // rustls reads the ClientHello again from the bytes the inspection kept; the raw TLS bytes are
    // `public_ssl`'s (the decrypted ones count toward `fe_sni` / `fe_no_sni` in `serve_client`).
    let public_ssl = context.metrics.haproxy.frontend(Frontend::PublicSsl).clone();
    let io = CountedIo::new(Prefixed::new(hello.buffered, stream), public_ssl);
    let handshake = tokio::time::timeout(context.timeouts.http_request, TlsAcceptor::from(config).accept(io));
    let tls = match handshake.await {
        Ok(Ok(tls)) => tls,
        Ok(Err(error)) => {
            debug!(%error, sni = ?hello.server_name, "TLS handshake failed");
            fail(if strict_refusal { "strict_sni" } else { "handshake" });
            let reason = TlsHandshakeFailureLabels { reason: tls_failure_reason(&error) };
            context.metrics.tls_handshake_failures.get_or_create(&reason).inc();
            return;
        }
        Err(_) => {
            fail("handshake_timeout");
            let reason = TlsHandshakeFailureLabels { reason: "timeout" };
            context.metrics.tls_handshake_failures.get_or_create(&reason).inc();
            return;
        }
    };
    let session = tls.get_ref().1;
    let handshake = TlsHandshakeLabels::new(session.protocol_version(), session.alpn_protocol());
    context.metrics.tls_handshakes.get_or_create(&handshake).inc();
    let frontend = if hello.server_name.is_some() { Frontend::FeSni } else { Frontend::FeNoSni };
    let _session = context.metrics.haproxy.frontend(frontend).open_session();
    let version = if session.alpn_protocol() == Some(b"h2") { HttpVersion::H2 } else { HttpVersion::Http1 };
    if !context.configs.client_still_valid(session) {
        debug!("resumed session of a client certificate that no longer verifies (revoked since)");
        fail("client_certificate_revoked");
        return;
    }
    let resumed = session.handshake_kind() == Some(HandshakeKind::Resumed);
    if route_check.as_ref().is_some_and(|check| resumed && !check.still_verifies(session.peer_certificates())) {
        debug!("resumed session whose client certificate the route's current check refuses");
        fail("client_certificate_refused");
        return;
    }
    if let Some(filter) = context.configs.client_subject_filter() {
        let subject = client_subject(session.peer_certificates());
        if !subject.as_deref().is_some_and(|subject| filter.is_match(subject)) {
            debug!(subject = ?subject, "client certificate subject does not match ROUTER_MUTUAL_TLS_AUTH_FILTER");
            fail("client_subject_filter");
            return serve_forbidden(tls, version, context.timeouts.http_request, shutdown).await;
        }
    }
    let mut state = ClientConnection::new(ConnectionInfo { client, local, proto: "https" });
    state.frontend = frontend;
    if context.client_cert_headers {
        state.tls_headers = client_cert_headers(session.peer_certificates());
    }
    state.handshake_check = HandshakeCheck::new(route_check, session.peer_certificates());
    serve_client(tls, state, context.proxy.clone(), context.timeouts, shutdown, version).await
}
