//! The admin listener (STATS_PORT, 1936): `/healthz`, `/healthz/ready`, `/metrics`, `/debug/routes` and
//! `/debug/skipped`. `/metrics` and `/debug/*` are guarded as openshift/router guards them (`auth`); the
//! health pages are open. `/metrics` reads the live table (`topology`) and, when the XDP front is attached, its
//! pinned counters at each scrape.

pub mod auth;
mod readiness;
mod routes;
mod skipped;
mod topology;

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{debug, warn};

pub use auth::{AdminGuard, BasicCredentials, Decision, KubeReviewer};
pub use readiness::Readiness;

use crate::listen::stop_requested;
use crate::metrics::{Metrics, ScrapeInputs};
use crate::source::kube::SkippedObjects;
use crate::table::TableHandle;

pub struct AdminState {
    pub readiness: Arc<Readiness>,
    pub metrics: Arc<Metrics>,
    pub table: TableHandle,
    /// Objects the Kubernetes source leaves out.
    pub skipped: Arc<SkippedObjects>,
    /// Who may read `/metrics` and `/debug/*`.
    pub guard: AdminGuard,
    /// Where the XDP front's maps are pinned, when it is attached: its counters are published.
    pub xdp_pin_dir: Option<PathBuf>,
}

/// Serves admin requests until `shutdown` turns true.
pub async fn serve_admin(listener: TcpListener, state: Arc<AdminState>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop_requested(&mut shutdown) => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    warn!(%error, "admin accept failed");
                    continue;
                }
            },
        };
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(answer(&state, &request).await) }
            });
            if let Err(error) = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await {
                debug!(%peer, %error, "admin connection ended with an error");
            }
        });
    }
}

async fn answer(state: &AdminState, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    }
    let path = request.uri().path();
    match path {
        "/healthz" => return text(StatusCode::OK, "ok\n"),
        "/healthz/ready" => {
            return match state.readiness.not_ready_reason() {
                None => text(StatusCode::OK, "ok\n"),
                Some(reason) => text(StatusCode::SERVICE_UNAVAILABLE, &format!("not ready: {reason}\n")),
            }
        }
        _ => {}
    }
    match state.guard.check(request).await {
        Decision::Allow => guarded(state, path),
        Decision::Unauthenticated => {
            let mut response = text(StatusCode::UNAUTHORIZED, "Unauthorized\n");
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"router\""));
            response
        }
        Decision::Forbidden => text(StatusCode::FORBIDDEN, "Forbidden\n"),
        Decision::Failed => text(StatusCode::INTERNAL_SERVER_ERROR, "Unable to check the credentials\n"),
    }
}

/// The pages behind the guard.
fn guarded(state: &AdminState, path: &str) -> Response<Full<Bytes>> {
    match path {
        "/metrics" => {
            let inputs = ScrapeInputs { topology: topology::topology(&state.table.load()), xdp: xdp_rows(state) };
            let mut response = text(StatusCode::OK, &state.metrics.render_with(&inputs));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            );
            response
        }
        "/debug/routes" => {
            let mut response = text(StatusCode::OK, &routes::render(&state.table.load()));
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
        "/debug/skipped" => {
            let mut response = text(StatusCode::OK, &skipped::render(&state.skipped.list()));
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

/// The XDP front's counters, when it is attached and its pinned map can be read.
fn xdp_rows(state: &AdminState) -> Option<crate::metrics::XdpRows> {
    let pin_dir = state.xdp_pin_dir.as_ref()?;
    match crate::xdp::XdpCounters::read_pinned(pin_dir) {
        Ok(counters) => Some(counters.named().collect()),
        Err(error) => {
            debug!(%error, "XDP counters not readable for /metrics");
            None
        }
    }
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::copy_from_slice(body.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}
