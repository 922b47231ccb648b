//! Reencrypt pods are offered ALPN `h2, http/1.1`: one that picks h2 is spoken to over HTTP/2 (curl's HTTP/1.1
//! request too) with the client's host as `:authority` and no Host header, gRPC calls over a reencrypt route
//! keep their trailers, unary and bidirectional streaming (each message echoed before the client has finished
//! sending), a WebSocket upgrade still works (over HTTP/1.1 to the pod), a pod offering only http/1.1 gets
//! HTTP/1.1 with the client's Host; and an Ingress's `route.openshift.io/destination-ca-certificate-secret`
//! verifies its reencrypt pods.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use router::config::Settings;
use router_tests::backend::{tls_server_config, TestBackend};
use router_tests::cli::curl_https;
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{Leaf, PemDir, TestCa};
use router_tests::start_tls_router;
use router_tests::tls_client::{client_config, negotiated_alpn, tls_connect, websocket_echo, Trust};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// A reencrypt route `host` to `service`, served with `front`, verifying pods with `pod_ca`.
fn reencrypt_route(host: &'static str, service: &'static str, front: &Leaf, pod_ca: &TestCa) -> String {
    RouteSpec {
        tls: Some(
            RouteTls::reencrypt()
                .with_certificate(&front.cert_pem, &front.key_pem)
                .with_destination_ca(&pod_ca.cert_pem),
        ),
        ..RouteSpec::new("ns", service, host, service)
    }
    .yaml()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_that_pick_h2_get_http2_and_websocket_upgrades_still_work() {
    let (pod_ca, front_ca) = (TestCa::new("pod-ca"), TestCa::new("front-ca"));
    let pod_leaf = pod_ca.leaf(&["pod.internal"]);
    let h2_pod = TestBackend::start_tls("h2-pod", &pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let h1_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let h1_config = tls_server_config(&pod_leaf.chain_pem(), &pod_leaf.key_pem, &["http/1.1"]);
    let h1_pod = TestBackend::serve_tls("h1-pod", h1_listener, h1_config);
    let (front_h2, front_h1) = (front_ca.leaf(&["h2.example.com"]), front_ca.leaf(&["h1.example.com"]));
    let files = PemDir::new();
    let ca_file = files.write("front-ca.pem", &front_ca.cert_pem);
    let dir = ManifestDir::new();
    let yaml = [
        service("ns", "h2pod", &[h2_pod.addr]),
        service("ns", "h1pod", &[h1_pod.addr]),
        reencrypt_route("h2.example.com", "h2pod", &front_h2, &pod_ca),
        reencrypt_route("h1.example.com", "h1pod", &front_h1, &pod_ca),
    ];
    dir.write("all.yaml", &yaml.concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;
    let ca_arg = ca_file.to_str().expect("path");

    for client_version in ["--http1.1", "--http2"] {
        let reply = curl_https(https, "h2.example.com", "/x?y=1", &["--cacert", ca_arg, client_version]).await;
        assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
        let report = reply.report();
        assert_eq!(report["tls"]["alpn"], "h2", "{client_version}: the pod picked h2: {report}");
        assert_eq!(report["version"], "HTTP/2.0", "{client_version}: {report}");
        assert_eq!(report["path"], "/x?y=1");
        // As HAProxy: the client's host is the `:authority`, and no Host header goes along (nginx refuses both).
        let client_host = format!("h2.example.com:{}", https.port());
        assert_eq!(report["authority"], client_host.as_str(), "{client_version}: {report}");
        assert_eq!(reply.seen_header("host"), Vec::<String>::new(), "{client_version}: {report}");
    }
    let reply = curl_https(https, "h1.example.com", "/", &["--cacert", ca_arg, "--http2"]).await;
    assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
    assert_eq!(reply.report()["tls"]["alpn"], "http/1.1");
    assert_eq!(reply.report()["version"], "HTTP/1.1");
    let client_host = format!("h1.example.com:{}", https.port());
    assert_eq!(reply.seen_header("host"), [client_host], "the client's Host reaches an HTTP/1.1 pod");

    // WebSocket: the pod offers h2 too, but the upgrade goes over an HTTP/1.1 connection.
    let config = client_config(Trust::Ca(&front_ca.cert_pem), &["http/1.1"], None);
    let mut stream = tls_connect(https, Some("h2.example.com"), config).await.expect("handshake");
    let head = websocket_echo(&mut stream, "h2.example.com").await;
    assert!(head.to_ascii_lowercase().contains("x-backend: h2-pod"), "{head}");
    // Ended before the router stops, which would otherwise wait for the tunnel.
    drop(stream);
    router.shutdown().await;
}

type EchoBody = StreamBody<futures_util::stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

/// A TLS gRPC pod (ALPN h2 only) echoing every request data frame as soon as it arrives, then trailers
/// `grpc-status: 0`. It tells whether it saw `te: trailers` and which version it was spoken to in.
async fn grpc_tls_pod(leaf: &Leaf) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind pod");
    let addr = listener.local_addr().expect("pod addr");
    let acceptor = TlsAcceptor::from(tls_server_config(&leaf.chain_pem(), &leaf.key_pem, &["h2"]));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else { return };
                let service = service_fn(|request: Request<Incoming>| async move {
                    let saw_te = request.headers().get("te").cloned().unwrap_or(HeaderValue::from_static("none"));
                    let version = format!("{:?}", request.version());
                    let echo = futures_util::stream::unfold(Some(request.into_body()), |body| async move {
                        let mut body = body?;
                        loop {
                            match body.frame().await {
                                Some(Ok(frame)) if frame.is_data() => {
                                    let data = frame.into_data().unwrap_or_default();
                                    return Some((Ok(Frame::data(data)), Some(body)));
                                }
                                Some(Ok(_)) => continue,
                                _ => {
                                    let mut trailers = HeaderMap::new();
                                    trailers.insert("grpc-status", HeaderValue::from_static("0"));
                                    return Some((Ok(Frame::trailers(trailers)), None));
                                }
                            }
                        }
                    });
                    let body: EchoBody = StreamBody::new(Box::pin(echo));
                    let response = Response::builder()
                        .header("content-type", "application/grpc")
                        .header("x-saw-te", saw_te)
                        .header("x-pod-version", version)
                        .body(body)
                        .expect("pod response");
                    Ok::<_, Infallible>(response)
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    addr
}

/// One gRPC message: compressed flag 0, 4-byte length, payload.
fn grpc_message(payload: &[u8]) -> Bytes {
    let mut message = vec![0u8];
    message.extend_from_slice(&u32::try_from(payload.len()).expect("short payload").to_be_bytes());
    message.extend_from_slice(payload);
    Bytes::from(message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_unary_and_streaming_calls_keep_their_trailers_over_reencrypt() {
    let (pod_ca, front_ca) = (TestCa::new("pod-ca"), TestCa::new("front-ca"));
    let pod = grpc_tls_pod(&pod_ca.leaf(&["greeter.internal"])).await;
    let front = front_ca.leaf(&["grpc.example.com"]);
    let dir = ManifestDir::new();
    dir.write(
        "all.yaml",
        &[service("ns", "greeter", &[pod]), reencrypt_route("grpc.example.com", "greeter", &front, &pod_ca)].concat(),
    );
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;
    let tls = tls_connect(https, Some("grpc.example.com"), client_config(Trust::Ca(&front_ca.cert_pem), &["h2"], None))
        .await
        .expect("TLS to the router");
    assert_eq!(negotiated_alpn(&tls).as_deref(), Some("h2"));
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls)).await.expect("h2 handshake");
    tokio::spawn(connection);

    // Unary.
    let message = grpc_message(b"hello");
    let request = Request::post("https://grpc.example.com/helloworld.Greeter/SayHello")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Full::new(message.clone()).map_err(|never| match never {}).boxed())
        .expect("request");
    let response = sender.send_request(request).await.expect("unary response");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-saw-te"], "trailers", "te: trailers reaches the pod");
    assert_eq!(response.headers()["x-pod-version"], "HTTP/2.0", "the pod is spoken to over h2");
    let collected = response.into_body().collect().await.expect("body and trailers");
    assert_eq!(collected.trailers().expect("trailers reach the client")["grpc-status"], "0");
    assert_eq!(collected.to_bytes(), message);

    // Bidirectional streaming: each message comes back before the next is sent.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(4);
    let request_body =
        StreamBody::new(futures_util::stream::unfold(
            rx,
            |mut rx| async move { rx.recv().await.map(|frame| (frame, rx)) },
        ));
    let request = Request::post("https://grpc.example.com/helloworld.Greeter/Chat")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(request_body.boxed())
        .expect("request");
    let response = tokio::time::timeout(Duration::from_secs(15), async {
        let responding = sender.send_request(request);
        tx.send(Ok(Frame::data(grpc_message(b"one")))).await.expect("send first");
        responding.await
    })
    .await
    .expect("response head within 15 s")
    .expect("streaming response");
    let mut body = response.into_body();
    for (index, payload) in [&b"one"[..], b"two", b"three"].into_iter().enumerate() {
        if index > 0 {
            tx.send(Ok(Frame::data(grpc_message(payload)))).await.expect("send next");
        }
        let frame = tokio::time::timeout(Duration::from_secs(15), body.frame())
            .await
            .expect("echo within 15 s")
            .expect("a frame")
            .expect("frame ok");
        assert_eq!(frame.into_data().expect("data"), grpc_message(payload), "message {index} echoed while streaming");
    }
    drop(tx);
    let rest = tokio::time::timeout(Duration::from_secs(15), body.collect()).await.expect("end").expect("rest");
    assert_eq!(rest.trailers().expect("trailers after streaming")["grpc-status"], "0");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_destination_ca_secret_verifies_its_reencrypt_pods() {
    let (pod_ca, other_ca) = (TestCa::new("pod-ca"), TestCa::new("other-ca"));
    let leaf = pod_ca.leaf(&["pod.internal"]);
    let pod = TestBackend::start_tls("ingress-pod", &leaf.chain_pem(), &leaf.key_pem).await;
    let dir = ManifestDir::new();
    let indent = |pem: &str| pem.lines().map(|l| format!("      {l}\n")).collect::<String>();
    let ingress = |name: &str, host: &str, secret: &str| {
        format!(
            "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\n  namespace: ns\n  \
             annotations:\n    route.openshift.io/termination: reencrypt\n    \
             route.openshift.io/destination-ca-certificate-secret: {secret}\nspec:\n  rules:\n  - host: {host}\n    \
             http:\n      paths:\n      - path: /\n        pathType: Prefix\n        backend:\n          service:\n            \
             name: web\n            port:\n              name: http\n"
        )
    };
    let secret = |name: &str, pem: &str| {
        format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: ns\ntype: Opaque\nstringData:\n  \
             tls.crt: |\n{}",
            indent(pem)
        )
    };
    let yaml = [
        service("ns", "web", &[pod.addr]),
        ingress("good", "good.example.com", "pod-ca"),
        ingress("bad", "bad.example.com", "other-ca"),
        ingress("waiting", "waiting.example.com", "not-there"),
        secret("pod-ca", &pod_ca.cert_pem),
        secret("other-ca", &other_ca.cert_pem),
    ];
    dir.write("all.yaml", &yaml.concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let reply = curl_https(https, "good.example.com", "/", &["-k"]).await;
    assert_eq!((reply.exit_code, reply.status), (0, 200), "{} {}", reply.stderr, reply.body);
    assert_eq!(reply.report()["backend"], "ingress-pod");
    let reply = curl_https(https, "bad.example.com", "/", &["-k"]).await;
    assert_eq!(reply.status, 503, "the pod's certificate does not chain to the annotated CA");
    let reply = curl_https(https, "waiting.example.com", "/", &["-k"]).await;
    assert_eq!(reply.status, 503, "no route until its CA Secret exists");
    router.shutdown().await;
}
