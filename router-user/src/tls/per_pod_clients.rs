//! hyper clients of one pod each, for requests whose URI names the client's host rather than the pod: HTTP/2
//! then carries that host as `:authority` (as HAProxy does) and no Host header, whatever the pod picks.
//! hyper's pool is keyed by the URI's scheme and authority, so each pod gets its own client, whose connector
//! dials that pod whatever the URI says.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::uri::Authority;
use http::{header, Request, Uri};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{Either, Empty};
use hyper_util::client::legacy::{Builder, Client};

/// A request body on its way to a pod over hyper's client: the client's stream (as the proxy watches it), or
/// nothing.
/// A request body's error, whichever server read it (the proxy's `RequestBody`).
type BodyError = Box<dyn std::error::Error + Send + Sync>;

pub type UpstreamBody = Either<UnsyncBoxBody<Bytes, BodyError>, Empty<Bytes>>;

/// Past this many pods, the map starts over (their idle connections close with their clients).
const MAX_PODS: usize = 4096;

/// A connector that dials one pod, whatever URI it is asked for.
#[derive(Clone)]
pub struct DialPod<C> {
    inner: C,
    pod: Uri,
}

impl<C: tower_service::Service<Uri>> tower_service::Service<Uri> for DialPod<C> {
    type Response = C::Response;
    type Error = C::Error;
    type Future = C::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, _named_host: Uri) -> Self::Future {
        self.inner.call(self.pod.clone())
    }
}

/// One hyper client per pod, built alike over `connector`.
pub struct PerPodClients<C> {
    builder: Builder,
    connector: C,
    /// `http` or `https`: the scheme the connector is handed with the pod's address.
    scheme: &'static str,
    clients: Mutex<HashMap<SocketAddr, Client<DialPod<C>, UpstreamBody>>>,
}

impl<C> PerPodClients<C>
where
    C: tower_service::Service<Uri> + Clone + Send + Sync + 'static,
    DialPod<C>: hyper_util::client::legacy::connect::Connect,
{
    pub fn new(builder: Builder, connector: C, scheme: &'static str) -> Self {
        Self { builder, connector, scheme, clients: Mutex::new(HashMap::new()) }
    }

    /// The client that sends every request to `pod`.
    pub fn client(&self, pod: SocketAddr) -> Client<DialPod<C>, UpstreamBody> {
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if clients.len() >= MAX_PODS && !clients.contains_key(&pod) {
            clients.clear();
        }
        let client = clients.entry(pod).or_insert_with(|| {
            // An IP and a port always form a valid URI; fall back to the bare scheme if not.
            let pod = format!("{}://{pod}", self.scheme).parse().unwrap_or_else(|_| Uri::from_static("/"));
            self.builder.build(DialPod { inner: self.connector.clone(), pod })
        });
        client.clone()
    }
}

/// Which Host header goes along once [`name_the_host`] made the URI name it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HostHeader {
    /// The connection is HTTP/2: `:authority` carries the host, no Host header.
    Drop,
    /// The connection may be HTTP/1.1, with hyper's `set_host(true)`: drop the Host header only when hyper
    /// rebuilds exactly the same value from the URI (host, then the port unless the scheme's default), so that
    /// HTTP/1.1 sends the client's value; else keep it (then HTTP/2 carries both, as before).
    DropWhenRebuilt,
}

/// Makes `request`'s URI (`<scheme>://<pod><path>`) name the Host header's value instead of the pod, and
/// removes the Host header as `host_header` says. A request without a Host header, or one that is no URI
/// authority, keeps naming the pod.
pub fn name_the_host(request: &mut Request<UpstreamBody>, host_header: HostHeader) {
    let Some(host) = request.headers().get(header::HOST).and_then(|value| value.to_str().ok()) else { return };
    let Ok(authority) = host.parse::<Authority>() else { return };
    if authority.as_str().contains('@') {
        return;
    }
    let uri = request.uri();
    let scheme = uri.scheme_str().unwrap_or("http");
    let path = uri.path_and_query().map_or("/", |pq| pq.as_str());
    let Ok(named) = format!("{scheme}://{authority}{path}").parse::<Uri>() else { return };
    let drop_host = match host_header {
        HostHeader::Drop => true,
        HostHeader::DropWhenRebuilt => rebuilt_host(&named).is_some_and(|rebuilt| rebuilt == host),
    };
    *request.uri_mut() = named;
    if drop_host {
        request.headers_mut().remove(header::HOST);
    }
}

/// The Host value hyper's client writes on HTTP/1 for `uri` when the request has none.
fn rebuilt_host(uri: &Uri) -> Option<String> {
    let host = uri.host()?;
    let default_port = match uri.scheme_str() {
        Some("https") => 443,
        _ => 80,
    };
    Some(match uri.port_u16() {
        Some(port) if port != default_port => format!("{host}:{port}"),
        _ => host.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(uri: &str, host: Option<&str>) -> Request<UpstreamBody> {
        let mut builder = Request::get(uri);
        if let Some(host) = host {
            builder = builder.header(header::HOST, host);
        }
        builder.body(Either::Right(Empty::new())).expect("request")
    }

    fn named(uri: &str, host: Option<&str>, host_header: HostHeader) -> (String, Option<String>) {
        let mut request = request(uri, host);
        name_the_host(&mut request, host_header);
        let host = request.headers().get(header::HOST).map(|v| v.to_str().expect("ascii").to_string());
        (request.uri().to_string(), host)
    }

    #[test]
    fn http2_gets_the_host_as_authority_and_no_host_header() {
        let (uri, host) = named("http://10.0.0.1:8080/a?b=1", Some("app.example.com:8080"), HostHeader::Drop);
        assert_eq!((uri.as_str(), host), ("http://app.example.com:8080/a?b=1", None));
    }

    #[test]
    fn the_host_header_goes_only_when_http1_would_write_the_same_one() {
        let uri = "https://10.0.0.1:8443/x";
        let rebuilt = HostHeader::DropWhenRebuilt;
        assert_eq!(named(uri, Some("a.example.com"), rebuilt), ("https://a.example.com/x".into(), None));
        assert_eq!(named(uri, Some("a.example.com:9443"), rebuilt), ("https://a.example.com:9443/x".into(), None));
        assert_eq!(named(uri, Some("[::1]:9443"), rebuilt), ("https://[::1]:9443/x".into(), None));
        // hyper would write `a.example.com` (default port dropped): the client's value stays.
        let kept = named(uri, Some("a.example.com:443"), rebuilt);
        assert_eq!(kept, ("https://a.example.com:443/x".into(), Some("a.example.com:443".into())));
    }

    #[test]
    fn no_usable_host_keeps_the_pod_uri() {
        let uri = "https://10.0.0.1:8443/x";
        assert_eq!(named(uri, None, HostHeader::Drop), (uri.into(), None));
        assert_eq!(
            named(uri, Some("user@a.example.com"), HostHeader::Drop),
            (uri.into(), Some("user@a.example.com".into()))
        );
        assert_eq!(named(uri, Some("a b"), HostHeader::Drop), (uri.into(), Some("a b".into())));
    }
}
