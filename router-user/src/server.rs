//! Starting and stopping a whole router: listeners, admin, source, table publisher, graceful shutdown.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::info;

use crate::admin::{serve_admin, AdminState, Health};
use crate::config::Settings;
use crate::metrics::Metrics;
use crate::proxy::{serve_http, HttpProxy, Upstream};
use crate::publish::Publisher;
use crate::source::manifest::{spawn_watch, ManifestSource};
use crate::table::{BuildOptions, RouteTable, TableHandle};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr} ({what}): {source}")]
    Bind { what: &'static str, addr: SocketAddr, source: io::Error },
}

/// A router that is serving. Dropping it without `shutdown` leaves its tasks running until the runtime ends.
pub struct RunningRouter {
    pub http_addr: SocketAddr,
    pub stats_addr: SocketAddr,
    pub table: TableHandle,
    pub health: Arc<Health>,
    pub metrics: Arc<Metrics>,
    settings: Settings,
    stop: watch::Sender<bool>,
    http_task: JoinHandle<()>,
    background: Vec<JoinHandle<()>>,
}

/// Binds the listeners and starts every task. Readiness follows once the first table is published.
pub async fn start(settings: Settings) -> Result<RunningRouter, StartError> {
    let http_listener = bind("http", settings.http_addr()).await?;
    let admin_listener = bind("admin", settings.stats_addr()).await?;
    let http_addr = local_addr(&http_listener, settings.http_addr());
    let stats_addr = local_addr(&admin_listener, settings.stats_addr());

    let table: TableHandle = Arc::new(ArcSwap::from_pointee(RouteTable::default()));
    let metrics = Arc::new(Metrics::default());
    let health = Arc::new(Health::default());
    let (stop, stopped) = watch::channel(false);

    let admin = AdminState { health: health.clone(), metrics: metrics.clone() };
    let admin_task = tokio::spawn(serve_admin(admin_listener, Arc::new(admin), stopped.clone()));

    let (updates_tx, updates_rx) = mpsc::channel(16);
    let watch_task = spawn_watch(ManifestSource::new(settings.manifests.clone()), updates_tx);
    let publisher = Publisher {
        table: table.clone(),
        options: BuildOptions { allow_loopback_endpoints: settings.allow_loopback_endpoints },
        metrics: metrics.clone(),
        health: health.clone(),
    };
    let publish_task = tokio::spawn(publisher.run(updates_rx));

    let upstream = Upstream::new(settings.connect_timeout, settings.server_timeout);
    let proxy = Arc::new(HttpProxy::new(table.clone(), upstream, metrics.clone()));
    let http_task = tokio::spawn(serve_http(
        http_listener,
        proxy,
        settings.http_request_timeout,
        stopped,
        settings.hard_stop_after,
    ));
    info!(%http_addr, %stats_addr, manifests = %settings.manifests.display(), "router started");

    Ok(RunningRouter {
        http_addr,
        stats_addr,
        table,
        health,
        metrics,
        settings,
        stop,
        http_task,
        background: vec![admin_task, watch_task, publish_task],
    })
}

impl RunningRouter {
    /// Graceful stop: readiness fails at once, serving goes on for the graceful-shutdown delay, then the
    /// listeners close and in-flight requests get up to the hard-stop period to finish.
    pub async fn shutdown(self) {
        self.health.mark_draining();
        info!(delay = ?self.settings.graceful_shutdown_delay, "draining: readiness now fails");
        tokio::time::sleep(self.settings.graceful_shutdown_delay).await;
        let _ = self.stop.send(true);
        let _ = self.http_task.await;
        for task in self.background {
            task.abort();
        }
        info!("router stopped");
    }
}

async fn bind(what: &'static str, addr: SocketAddr) -> Result<TcpListener, StartError> {
    TcpListener::bind(addr).await.map_err(|source| StartError::Bind { what, addr, source })
}

fn local_addr(listener: &TcpListener, requested: SocketAddr) -> SocketAddr {
    listener.local_addr().unwrap_or(requested)
}
