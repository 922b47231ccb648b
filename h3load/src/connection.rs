//! One HTTP/3 connection of the load: connect, then `streams` requests at a time, each stream starting its next
//! request when its response has been read whole, until the end of the run or the request budget.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use http::Request;

use crate::record::{Record, FAILED};

/// What every connection shares: where to connect, what to ask, and the run's clock.
pub struct Plan {
    pub connect: SocketAddr,
    pub sni: String,
    pub uri: http::Uri,
    pub client: quinn::ClientConfig,
    /// Requests started before this are not recorded (the warm-up).
    pub measured_from: Instant,
    /// No request starts after this.
    pub deadline: Instant,
    /// Requests still allowed to start (all connections together).
    pub budget: AtomicI64,
}

/// No single request or handshake takes longer than this (then it is recorded as failed).
const REQUEST_LIMIT: Duration = Duration::from_secs(10);

/// Runs one connection: the records of its requests (one failed record when it could not connect).
pub async fn run(plan: Arc<Plan>, streams: u32) -> Vec<Record> {
    let started = Instant::now();
    let connection = match tokio::time::timeout(REQUEST_LIMIT, connect(&plan)).await {
        Ok(Ok(connection)) => connection,
        Ok(Err(error)) => {
            eprintln!("h3load: connection failed: {error:#}");
            return vec![Record::failed(&plan, started)];
        }
        Err(_) => {
            eprintln!("h3load: connection timed out");
            return vec![Record::failed(&plan, started)];
        }
    };
    let (quic, mut driver, send) = connection;
    let driving = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    let mut tasks = Vec::new();
    for _ in 0..streams {
        let (plan, send, quic) = (plan.clone(), send.clone(), quic.clone());
        tasks.push(tokio::spawn(async move { stream_loop(&plan, send, &quic).await }));
    }
    let mut records = Vec::new();
    for task in tasks {
        records.extend(task.await.unwrap_or_default());
    }
    quic.close(0u32.into(), b"done");
    driving.abort();
    records
}

type Connected = (
    quinn::Connection,
    h3::client::Connection<h3_quinn::Connection, Bytes>,
    h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
);

async fn connect(plan: &Plan) -> anyhow::Result<Connected> {
    let bind: SocketAddr = if plan.connect.is_ipv6() { "[::]:0" } else { "0.0.0.0:0" }.parse()?;
    let mut endpoint = quinn::Endpoint::client(bind)?;
    endpoint.set_default_client_config(plan.client.clone());
    let quic = endpoint.connect(plan.connect, &plan.sni)?.await?;
    let (driver, send) = h3::client::new(h3_quinn::Connection::new(quic.clone())).await?;
    Ok((quic, driver, send))
}

/// One stream's requests, one after another.
async fn stream_loop(
    plan: &Plan,
    mut send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    quic: &quinn::Connection,
) -> Vec<Record> {
    let mut records = Vec::new();
    while Instant::now() < plan.deadline && plan.budget.fetch_sub(1, Ordering::Relaxed) > 0 {
        let start = Instant::now();
        let status = match tokio::time::timeout(REQUEST_LIMIT, exchange(plan, &mut send)).await {
            Ok(Ok(status)) => i32::from(status),
            Ok(Err(error)) => {
                eprintln!("h3load: request failed: {error:#}");
                FAILED
            }
            Err(_) => FAILED,
        };
        if start >= plan.measured_from {
            records.push(Record::new(plan, start, status));
        }
        if status == FAILED && quic.close_reason().is_some() {
            break;
        }
    }
    records
}

/// One GET, its response body read and dropped: the status.
async fn exchange(
    plan: &Plan,
    send: &mut h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
) -> anyhow::Result<u16> {
    let request = Request::get(plan.uri.clone()).body(())?;
    let mut stream = send.send_request(request).await?;
    stream.finish().await?;
    let response = stream.recv_response().await?;
    while let Some(mut chunk) = stream.recv_data().await? {
        chunk.advance(chunk.remaining());
    }
    Ok(response.status().as_u16())
}
