//! One HTTP/3 request stream: its head (h3 refuses a header section past ROUTER_BUF_SIZE less
//! ROUTER_MAX_REWRITE_SIZE with 431, as hyper does for HTTP/2), the proxy's handler, then the response head,
//! body and trailers written to the stream. Connection-specific header fields, which HTTP/3 forbids
//! (RFC 9114 section 4.2), are dropped from the response head.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName};
use http::Response;
use http_body_util::BodyExt;
use tracing::debug;

use super::codes::H3_REQUEST_REJECTED;
use super::request_body::StreamBody;
use crate::proxy::{BoxError, MultiplexedClient, RequestBody, StreamResponseBody};

type SendStream = h3::server::RequestStream<h3_quinn::SendStream<Bytes>, Bytes>;

#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error("HTTP/3 stream: {0}")]
    Stream(#[from] h3::error::StreamError),
    #[error("response body: {0}")]
    Body(BoxError),
}

/// Serves the request `resolver` holds; a route's protection refusing the client closes the connection
/// without an answer, as on HTTP/2.
pub async fn serve_request(
    resolver: h3::server::RequestResolver<h3_quinn::Connection, Bytes>,
    client: Arc<MultiplexedClient>,
    quic: quinn::Connection,
) {
    let (head, stream) = match resolver.resolve_request().await {
        Ok(resolved) => resolved,
        Err(error) => {
            debug!(%error, "HTTP/3 request head refused");
            return;
        }
    };
    let (mut send, receive) = stream.split();
    let body = StreamBody::new(receive).looked_ahead().await;
    let request = head.map(|()| RequestBody::Stream(body.boxed_unsync()));
    let response = match client.serve(request).await {
        Ok(response) => response,
        Err(_refused) => {
            quic.close(H3_REQUEST_REJECTED, b"");
            return;
        }
    };
    if let Err(error) = write_response(&mut send, response).await {
        debug!(%error, "HTTP/3 response not finished");
        send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
    }
}

async fn write_response(send: &mut SendStream, response: Response<StreamResponseBody>) -> Result<(), WriteError> {
    let (mut parts, body) = response.into_parts();
    drop_connection_fields(&mut parts.headers);
    send.send_response(Response::from_parts(parts, ())).await?;
    let mut body = std::pin::pin!(body);
    while let Some(frame) = body.frame().await {
        match frame.map_err(WriteError::Body)?.into_data() {
            Ok(data) => send.send_data(data).await?,
            Err(frame) => {
                if let Ok(trailers) = frame.into_trailers() {
                    send.send_trailers(trailers).await?;
                }
            }
        }
    }
    send.finish().await?;
    Ok(())
}

/// HTTP/3 has no connection-specific fields: a response carrying one is malformed (RFC 9114 section 4.2).
fn drop_connection_fields(headers: &mut HeaderMap) {
    const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
    const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");
    for name in [header::CONNECTION, KEEP_ALIVE, PROXY_CONNECTION, header::TRANSFER_ENCODING, header::UPGRADE] {
        headers.remove(name);
    }
}
