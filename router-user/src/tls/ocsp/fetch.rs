//! One OCSP request over plain HTTP (RFC 6960 appendix A.1): a POST of the DER request to the responder's URL,
//! bounded in time and in the size of the answer.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// One exchange with a responder may take this long.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read (responses are a few KB; a chain sent along stays far below this).
const MAX_RESPONSE_BYTES: usize = 256 << 10;

pub type OcspClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> OcspClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// POSTs `request` to `url`: the response body, or why there is none.
pub async fn fetch(client: &OcspClient, url: &str, request: &[u8]) -> Result<Bytes, String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("not a URL: {e}"))?;
    let post = http::Request::post(uri)
        .header(http::header::CONTENT_TYPE, "application/ocsp-request")
        .header(http::header::ACCEPT, "application/ocsp-response")
        .body(Full::new(Bytes::copy_from_slice(request)))
        .map_err(|e| e.to_string())?;
    let exchange = async {
        let response = client.request(post).await.map_err(|e| format!("{e:#}"))?;
        if !response.status().is_success() {
            return Err(format!("HTTP status {}", response.status()));
        }
        let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES).collect().await.map_err(|e| e.to_string())?;
        Ok(body.to_bytes())
    };
    tokio::time::timeout(FETCH_TIMEOUT, exchange).await.map_err(|_| "timed out".to_string())?
}
