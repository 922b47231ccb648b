//! gRPC end to end through an edge route: the client speaks HTTP/2 over TLS (ALPN h2, the route's own
//! certificate), the pod speaks h2c (`appProtocol: h2c`); the request keeps `te: trailers`, the response's
//! trailers (`grpc-status`, `grpc-message`) reach the client, and the message bytes are untouched.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use router::config::Settings;
use router_tests::manifests::{service_with_app_protocol, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::TestCa;
use router_tests::start_tls_router;
use router_tests::tls_client::{client_config, negotiated_alpn, tls_connect, Trust};
use tokio::net::TcpListener;

type PodBody = StreamBody<futures_util::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, Infallible>>>>;

/// An h2c pod answering every call like a unary gRPC method: the request message echoed, then trailers. It
/// tells in a header whether it saw `te: trailers` (gRPC servers refuse calls without it).
async fn grpc_pod() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind pod");
    let addr = listener.local_addr().expect("pod addr");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = service_fn(|request: Request<Incoming>| async move {
                    let saw_te = request.headers().get("te").cloned().unwrap_or(HeaderValue::from_static("none"));
                    let version = format!("{:?}", request.version());
                    let message = request.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
                    let mut trailers = HeaderMap::new();
                    trailers.insert("grpc-status", HeaderValue::from_static("0"));
                    trailers.insert("grpc-message", HeaderValue::from_static("done"));
                    let frames = vec![Ok(Frame::data(message)), Ok(Frame::trailers(trailers))];
                    let body: PodBody = StreamBody::new(futures_util::stream::iter(frames));
                    let response = Response::builder()
                        .header("content-type", "application/grpc")
                        .header("x-saw-te", saw_te)
                        .header("x-pod-version", version)
                        .body(body)
                        .expect("pod response");
                    Ok::<_, Infallible>(response)
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_grpc_call_keeps_its_trailers_through_an_edge_route() {
    let pod = grpc_pod().await;
    let ca = TestCa::new("grpc-ca");
    let leaf = ca.leaf(&["grpc.example.com"]);
    let dir = ManifestDir::new();
    let route = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "grpc", "grpc.example.com", "greeter")
    };
    dir.write("all.yaml", &[service_with_app_protocol("ns", "greeter", &[pod], "h2c"), route.yaml()].concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let tls = tls_connect(https, Some("grpc.example.com"), client_config(Trust::Ca(&ca.cert_pem), &["h2"], None))
        .await
        .expect("TLS to the router");
    assert_eq!(negotiated_alpn(&tls).as_deref(), Some("h2"), "a route with its own certificate offers h2");
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls)).await.expect("h2 handshake");
    tokio::spawn(connection);

    // A gRPC message: compressed flag 0, 4-byte length, payload.
    let message = Bytes::from_static(b"\x00\x00\x00\x00\x05hello");
    let request = Request::post("https://grpc.example.com/helloworld.Greeter/SayHello")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Full::new(message.clone()))
        .expect("request");
    let response = sender.send_request(request).await.expect("response through the router");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/grpc");
    assert_eq!(response.headers()["x-saw-te"], "trailers", "te: trailers reaches the pod");
    assert_eq!(response.headers()["x-pod-version"], "HTTP/2.0", "the pod is spoken to over h2c");
    let collected = response.into_body().collect().await.expect("body and trailers");
    let trailers = collected.trailers().cloned().expect("trailers reach the client");
    assert_eq!(trailers["grpc-status"], "0");
    assert_eq!(trailers["grpc-message"], "done");
    assert_eq!(collected.to_bytes(), message, "the message is relayed byte for byte");
    router.shutdown().await;
}
