//! The load-balancer probe: the router's own Service's healthCheckNodePort, answered as kube-proxy
//! answers it for an `externalTrafficPolicy: Local` Service, so the cloud load balancer probing it
//! follows this node's local router endpoints and the router's shutdown.
//!
//! Bound on `<listen-addr>:<healthCheckNodePort>` whenever the router Service has one (re-bound
//! when it changes, closed when it goes away or the router stops). Every request, any path, gets:
//! - `200` when the node has at least one ready local endpoint and the router is not draining,
//!   `503` otherwise, and from the moment SIGTERM starts draining;
//! - the JSON body `{"service":{"namespace":..,"name":..},"localEndpoints":N,"serviceProxyHealthy":B}`
//!   (`serviceProxyHealthy` false while draining), with `Content-Type: application/json`,
//!   `X-Content-Type-Options: nosniff` and `X-Load-Balancing-Endpoint-Weight: N`, as kube-proxy sends.
#![forbid(unsafe_code)]

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::admin::Readiness;
use crate::model::LocalService;

/// How long to wait before retrying a bind that failed.
const REBIND_DELAY: Duration = Duration::from_secs(2);

/// The status and JSON body for the current state.
pub fn answer(service: &LocalService, draining: bool) -> (StatusCode, serde_json::Value) {
    let count = service.local_endpoint_count();
    let status = if count > 0 && !draining { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let body = serde_json::json!({
        "service": {"namespace": service.service.namespace, "name": service.service.name},
        "localEndpoints": count,
        "serviceProxyHealthy": !draining,
    });
    (status, body)
}

fn response(service: &LocalService, draining: bool) -> Response<Full<Bytes>> {
    let (status, body) = answer(service, draining);
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert("x-load-balancing-endpoint-weight", HeaderValue::from(service.local_endpoint_count()));
    response
}

/// Serves the healthCheckNodePort of `service` (the latest value; `None` until the first snapshot)
/// until `shutdown` turns true.
pub async fn serve(
    mut service: watch::Receiver<Option<LocalService>>,
    readiness: Arc<Readiness>,
    listen: IpAddr,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut bound: Option<(u16, TcpListener)> = None;
    loop {
        if *shutdown.borrow() {
            return;
        }
        let wanted = service.borrow_and_update().as_ref().and_then(|s| s.health_check_node_port);
        if bound.as_ref().map(|(port, _)| *port) != wanted {
            bound = None;
            if let Some(port) = wanted {
                let addr = SocketAddr::new(listen, port);
                match TcpListener::bind(addr).await {
                    Ok(listener) => {
                        info!(%addr, "healthCheckNodePort listener bound");
                        bound = Some((port, listener));
                    }
                    Err(error) => {
                        warn!(%addr, %error, "cannot bind the healthCheckNodePort; retrying");
                        tokio::select! {
                            _ = tokio::time::sleep(REBIND_DELAY) => {}
                            _ = shutdown.changed() => {}
                        }
                        continue;
                    }
                }
            }
        }
        let accepted = async {
            match &bound {
                Some((_, listener)) => listener.accept().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = service.changed() => if changed.is_err() { return },
            _ = shutdown.changed() => {}
            accepted = accepted => match accepted {
                Ok((stream, peer)) => {
                    let (service, readiness) = (service.clone(), readiness.clone());
                    tokio::spawn(async move {
                        let answer = service_fn(move |_request| {
                            let current = service.borrow().clone();
                            let draining = readiness.is_draining();
                            async move {
                                Ok::<_, Infallible>(match current {
                                    Some(current) => response(&current, draining),
                                    None => Response::builder()
                                        .status(StatusCode::SERVICE_UNAVAILABLE)
                                        .body(Full::new(Bytes::new()))
                                        .unwrap_or_default(),
                                })
                            }
                        });
                        if let Err(error) = http1::Builder::new().serve_connection(TokioIo::new(stream), answer).await {
                            debug!(%peer, %error, "load-balancer probe connection ended with an error");
                        }
                    });
                }
                Err(error) => warn!(%error, "load-balancer probe accept failed"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::model::ObjectKey;

    fn service(addresses: &[&str]) -> LocalService {
        LocalService {
            service: ObjectKey::new("openshift-ingress", "router-default"),
            found: true,
            families: BTreeSet::new(),
            node_ports: Vec::new(),
            health_check_node_port: Some(32000),
            local_addresses: addresses.iter().map(|a| a.parse().expect("ip")).collect(),
        }
    }

    #[test]
    fn healthy_with_a_local_endpoint() {
        let (status, body) = answer(&service(&["10.0.0.2"]), false);
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            serde_json::json!({
                "service": {"namespace": "openshift-ingress", "name": "router-default"},
                "localEndpoints": 1,
                "serviceProxyHealthy": true
            })
        );
    }

    #[test]
    fn unavailable_without_local_endpoints_or_while_draining() {
        assert_eq!(answer(&service(&[]), false).0, StatusCode::SERVICE_UNAVAILABLE);
        let (status, body) = answer(&service(&["10.0.0.2"]), true);
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body["serviceProxyHealthy"], false);
        assert_eq!(body["localEndpoints"], 1);
    }

    #[test]
    fn headers_match_kube_proxy() {
        let response = response(&service(&["10.0.0.2", "10.0.0.3"]), false);
        let headers = response.headers();
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(headers["x-load-balancing-endpoint-weight"], "2");
    }

    #[tokio::test]
    async fn binds_answers_and_flips_on_drain() {
        let (tx, rx) = watch::channel(None);
        let (stop_tx, stop_rx) = watch::channel(false);
        let readiness = Arc::new(Readiness::default());
        let port = free_port().await;
        let mut svc = service(&["10.0.0.2"]);
        svc.health_check_node_port = Some(port);
        tx.send_replace(Some(svc));
        let task = tokio::spawn(serve(rx, readiness.clone(), IpAddr::from([127, 0, 0, 1]), stop_rx));
        let status = |_: ()| async move { get_status(port).await };
        let mut first = None;
        for _ in 0..100 {
            first = status(()).await;
            if first.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(first, Some(200));
        readiness.mark_draining();
        assert_eq!(status(()).await, Some(503));
        stop_tx.send_replace(true);
        task.await.expect("listener task ends on stop");
    }

    async fn free_port() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        listener.local_addr().expect("addr").port()
    }

    /// The status code of `GET /` on 127.0.0.1:`port`, or `None` when it does not answer.
    async fn get_status(port: u16) -> Option<u16> {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.ok()?;
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).await.ok()?;
        let line = String::from_utf8_lossy(&reply);
        line.split_whitespace().nth(1)?.parse().ok()
    }
}
