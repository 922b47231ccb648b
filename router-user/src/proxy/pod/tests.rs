//! The client against scripted pods on loopback sockets.

use std::time::Duration;

use http::Request;
use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;

/// A pod that, for each accepted connection, answers the requests on it with the next canned responses of
/// that connection (`None`: read the request, then close without answering), then closes it. Returns its address.
async fn scripted_pod(connections: Vec<Vec<Option<&'static str>>>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        for answers in connections {
            let (mut stream, _) = listener.accept().await.expect("accept");
            tokio::spawn(async move {
                for answer in answers {
                    read_head(&mut stream).await;
                    match answer {
                        Some(answer) => stream.write_all(answer.as_bytes()).await.expect("write"),
                        None => return,
                    }
                }
            });
        }
    });
    addr
}

/// Reads up to the end of a request head (bodiless requests only).
async fn read_head(stream: &mut TcpStream) -> Vec<u8> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if stream.read(&mut byte).await.expect("read") == 0 {
            break;
        }
        head.push(byte[0]);
    }
    head
}

fn get(path: &str) -> request::Parts {
    Request::get(path).header("host", "app.example.com").body(()).expect("request").into_parts().0
}

async fn body_text(response: Response<PodBody>) -> (String, Option<http::HeaderMap>) {
    let collected = response.into_body().collect().await.expect("body");
    let trailers = collected.trailers().cloned();
    (String::from_utf8(collected.to_bytes().to_vec()).expect("utf-8"), trailers)
}

fn client() -> PodClient {
    PodClient::new(Duration::from_secs(2), Duration::from_secs(30))
}

#[tokio::test]
async fn keeps_the_connection_for_the_next_request() {
    let ok = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let addr = scripted_pod(vec![vec![Some(ok), Some(ok)]]).await;
    let client = client();
    for _ in 0..2 {
        let response = client.send(addr, &get("/"), None).await.expect("response");
        assert_eq!(body_text(response).await.0, "hello");
    }
    // A single accepted connection answered both; it is back in the pool.
    assert_eq!(client.pool.idle_count(), 1);
}

#[tokio::test]
async fn chunked_bodies_are_decoded_with_their_trailers() {
    let chunked =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\ngrpc-status: 0\r\n\r\n";
    let addr = scripted_pod(vec![vec![Some(chunked)]]).await;
    let client = client();
    let response = client.send(addr, &get("/"), None).await.expect("response");
    let (text, trailers) = body_text(response).await;
    assert_eq!(text, "abcde");
    assert_eq!(trailers.expect("trailers")["grpc-status"], "0");
    assert_eq!(client.pool.idle_count(), 1);
}

#[tokio::test]
async fn close_delimited_bodies_end_with_the_connection() {
    let addr = scripted_pod(vec![vec![Some("HTTP/1.0 200 OK\r\n\r\nuntil close")]]).await;
    let client = client();
    let response = client.send(addr, &get("/"), None).await.expect("response");
    assert_eq!(body_text(response).await.0, "until close");
    assert_eq!(client.pool.idle_count(), 0);
}

#[tokio::test]
async fn interim_responses_are_skipped() {
    let answer = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Made\r\nContent-Length: 2\r\n\r\nok";
    let addr = scripted_pod(vec![vec![Some(answer)]]).await;
    let response = client().send(addr, &get("/"), None).await.expect("response");
    assert_eq!(response.status(), StatusCode::CREATED);
    let reason = response.extensions().get::<hyper::ext::ReasonPhrase>().expect("custom reason").as_bytes().to_vec();
    assert_eq!(reason, b"Made");
    assert_eq!(body_text(response).await.0, "ok");
}

#[tokio::test]
async fn a_kept_connection_closed_by_the_pod_is_replaced() {
    let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    // First connection: one answer, then it reads the second request and closes without answering.
    let addr = scripted_pod(vec![vec![Some(ok), None], vec![Some(ok)]]).await;
    let client = client();
    body_text(client.send(addr, &get("/"), None).await.expect("first")).await;
    let second = client.send(addr, &get("/"), None).await.expect("second, retried on a new connection");
    assert_eq!(body_text(second).await.0, "ok");
}

#[tokio::test]
async fn a_truncated_body_is_an_error_and_the_connection_is_dropped() {
    let addr = scripted_pod(vec![vec![Some("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")]]).await;
    let client = client();
    let response = client.send(addr, &get("/"), None).await.expect("head");
    assert!(response.into_body().collect().await.is_err());
    assert_eq!(client.pool.idle_count(), 0);
}

#[tokio::test]
async fn switching_protocols_hands_over_the_connection_and_early_bytes() {
    let answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nearly";
    let addr = scripted_pod(vec![vec![Some(answer)]]).await;
    let response = client().send(addr, &get("/ws"), None).await.expect("response");
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    let (_, leftover) = response.extensions().get::<PodUpgrade>().and_then(PodUpgrade::take).expect("upgrade");
    assert_eq!(&leftover[..], b"early");
}

#[tokio::test]
async fn refused_connections_are_connect_errors() {
    let unused = TcpListener::bind("127.0.0.1:0").await.expect("bind").local_addr().expect("addr");
    let error = client().send(unused, &get("/"), None).await.expect_err("refused");
    assert!(matches!(error, PodError::Connect { .. }), "{error}");
}

#[tokio::test]
async fn idle_connections_are_closed_after_the_idle_timeout() {
    let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let addr = scripted_pod(vec![vec![Some(ok), Some(ok)]]).await;
    let client = PodClient::new(Duration::from_secs(2), Duration::from_millis(400));
    body_text(client.send(addr, &get("/"), None).await.expect("response")).await;
    assert_eq!(client.pool.idle_count(), 1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(client.pool.idle_count(), 1, "still within the idle timeout");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(client.pool.idle_count(), 0, "closed by the reaper");
}

#[tokio::test]
async fn a_new_connection_closed_unanswered_is_unanswered_for_idempotent_methods_only() {
    // Each request goes on a new connection the pod reads and closes without answering (a pod killed mid-request).
    let addr = scripted_pod(vec![vec![None], vec![None]]).await;
    let client = client();
    let error = client.send(addr, &get("/"), None).await.expect_err("no answer");
    assert!(matches!(error, PodError::Unanswered(_)), "GET: {error:?}");
    let post = Request::post("/").header("host", "app.example.com").body(()).expect("request").into_parts().0;
    let error = client.send(addr, &post, None).await.expect_err("no answer");
    assert!(matches!(error, PodError::Exchange(_)), "POST is not idempotent: {error:?}");
}
