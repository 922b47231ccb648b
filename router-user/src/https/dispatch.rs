//! One :443 connection, as the OpenShift router's `public_ssl` frontend handles it: the client address (PROXY
//! header), the ClientHello read without consuming it, then by SNI: a passthrough route's pod, or TLS
//! termination here (no SNI: the default certificate).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpStream;
use tokio::sync::watch;
use tracing::{debug, info_span, Instrument};

use super::inspect::read_client_hello;
use super::{passthrough, terminate, HttpsContext};
use crate::listen::client_of;
use crate::metrics::{Frontend, TlsFailureLabels};

pub async fn serve_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    context: Arc<HttpsContext>,
    shutdown: watch::Receiver<bool>,
) {
    let _session = context.metrics.haproxy.frontend(Frontend::PublicSsl).open_session();
    let Some((client, leftover)) = client_of(&mut stream, peer, &context.timeouts).await else {
        context.metrics.tls_failures.get_or_create(&TlsFailureLabels { reason: "proxy_protocol" }).inc();
        return;
    };
    let span = info_span!("tls", %client);
    async move {
        let hello = match read_client_hello(&mut stream, leftover, context.inspect_delay).await {
            Ok(hello) => hello,
            Err(error) => {
                debug!(%error, "connection closed before a ClientHello was read");
                context.metrics.tls_failures.get_or_create(&TlsFailureLabels { reason: error.reason() }).inc();
                return;
            }
        };
        let passthrough = hello.server_name.as_deref().and_then(|name| {
            let table = context.table.load();
            table.passthrough().lookup(name, "/").cloned()
        });
        match passthrough {
            Some(backend) => passthrough::relay_to_pod(stream, client, hello.buffered, backend, &context).await,
            None => terminate::serve(stream, client, hello, &context, shutdown).await,
        }
    }
    .instrument(span)
    .await
}
