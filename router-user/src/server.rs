//! Starting and stopping a whole router: listeners, admin, source, table publisher, graceful shutdown.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::info;

use crate::admin::{serve_admin, AdminState, Readiness};
use crate::config::{RoutingError, Settings};
use crate::https::{serve_https, HttpsContext, TlsSetup, TlsSetupError};
use crate::listen::ConnectionLimit;
use crate::metrics::Metrics;
use crate::model::{LocalService, Snapshot};
use crate::proxy::{serve_http, HttpProxy, Upstream};
use crate::publish::Publisher;
use crate::relay::PassthroughRelay;
use crate::router_service::{follow, node_name_or_hostname};
use crate::source::kube::{KubeError, KubeOptions, SkippedObjects};
use crate::source::manifest::{spawn_watch, ManifestSource};
use crate::source::{SourceChoice, SourceChoiceError};
use crate::table::{BuildOptions, RouteTable, TableHandle, TlsBuild};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr} ({what}): {source}")]
    Bind { what: &'static str, addr: SocketAddr, source: io::Error },
    #[error(transparent)]
    Source(#[from] SourceChoiceError),
    #[error("Kubernetes source: {0}")]
    Kube(#[from] KubeError),
    #[error("settings: {0}")]
    Routing(#[from] RoutingError),
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
}

/// A router that is serving. Dropping it without `shutdown` leaves its tasks running until the runtime ends.
pub struct RunningRouter {
    pub http_addr: SocketAddr,
    pub https_addr: SocketAddr,
    pub stats_addr: SocketAddr,
    pub table: TableHandle,
    pub readiness: Arc<Readiness>,
    pub metrics: Arc<Metrics>,
    /// The router's own Service as this node sees it (`--router-service`), updated with every snapshot.
    pub local_service: Option<watch::Receiver<Option<LocalService>>>,
    settings: Settings,
    stop: watch::Sender<bool>,
    http_task: JoinHandle<()>,
    https_task: JoinHandle<()>,
    background: Vec<JoinHandle<()>>,
}

/// Binds the listeners and starts every task. Readiness follows once the first table is published.
pub async fn start(settings: Settings) -> Result<RunningRouter, StartError> {
    let source = settings.source_choice()?;
    let tls = TlsSetup::from_args(&settings.tls)?;
    let mut defaults = settings.routing.defaults(settings.server_timeout)?;
    defaults.tcp_balance = settings.tcp_balance()?;
    let build_options = BuildOptions {
        allow_loopback_endpoints: settings.allow_loopback_endpoints,
        admission: settings.routing.admission()?,
        defaults,
        tls: TlsBuild::new(
            Some(tls.default_certificate.clone()),
            tls.default_destination_ca.clone(),
            settings.connect_timeout,
        ),
    };
    let mut proxy_options = settings.routing.proxy_options(settings.connect_timeout)?;
    proxy_options.request_head_limit = settings.limits.request_head_limit()?;
    let fin_timeouts = settings.limits.timeouts.fin_timeouts();
    proxy_options.fin_timeouts = Some(fin_timeouts);
    let max_connections = settings.limits.connection_limit()?;
    // Connections past ROUTER_MAX_CONNECTIONS wait in the backlog: as long as the limit, as HAProxy's default
    // (the kernel caps it at net.core.somaxconn).
    let backlog = u32::try_from(max_connections).unwrap_or(u32::MAX).max(ADMIN_BACKLOG);
    let http_listener = bind("http", settings.http_addr(), backlog)?;
    let https_listener = bind("https", settings.https_addr(), backlog)?;
    let admin_listener = bind("admin", settings.stats_addr(), ADMIN_BACKLOG)?;
    let http_addr = local_addr(&http_listener, settings.http_addr());
    let https_addr = local_addr(&https_listener, settings.https_addr());
    let stats_addr = local_addr(&admin_listener, settings.stats_addr());

    let table: TableHandle = Arc::new(ArcSwap::from_pointee(RouteTable::default()));
    let metrics = Arc::new(Metrics::default());
    let connection_limit = ConnectionLimit::new(max_connections, &metrics);
    metrics.worker_threads.set(i64::try_from(tokio::runtime::Handle::current().metrics().num_workers()).unwrap_or(0));
    let readiness = Arc::new(Readiness::default());
    let (stop, stopped) = watch::channel(false);

    let skipped = Arc::new(SkippedObjects::default());
    let admin = AdminState {
        readiness: readiness.clone(),
        metrics: metrics.clone(),
        table: table.clone(),
        skipped: skipped.clone(),
    };
    let admin_task = tokio::spawn(serve_admin(admin_listener, Arc::new(admin), stopped.clone()));

    // The Kubernetes source's snapshots are whole-cluster sized: at most one waits while the publisher builds.
    let queued_updates = if matches!(source, SourceChoice::Kube(_)) { 1 } else { 16 };
    let (updates_tx, updates_rx) = mpsc::channel(queued_updates);
    let (snapshots_tx, snapshots_rx) = watch::channel(Arc::new(Snapshot::default()));
    let (published_tx, published_rx) = watch::channel(table.load_full());
    let watch_task = match &source {
        SourceChoice::Manifests(path) => spawn_watch(ManifestSource::new(path.clone()), updates_tx),
        SourceChoice::Kube(kubeconfig) => {
            let options = kube_options(&settings, kubeconfig.clone());
            match crate::source::kube::start(&options, updates_tx, published_rx, skipped, metrics.clone()).await {
                Ok(task) => task,
                Err(error) => {
                    admin_task.abort();
                    return Err(error.into());
                }
            }
        }
    };
    let publisher = Publisher {
        table: table.clone(),
        options: build_options,
        metrics: metrics.clone(),
        readiness: readiness.clone(),
        published: Some(published_tx),
        snapshots: Some(snapshots_tx),
    };
    let publish_task = tokio::spawn(publisher.run(updates_rx));
    let mut background = vec![admin_task, watch_task, publish_task];
    let local_service = settings.router_service.as_ref().map(|service| {
        let node = node_name_or_hostname(settings.node_name.as_deref());
        let (local_tx, local_rx) = watch::channel(None);
        background.push(tokio::spawn(follow(snapshots_rx, service.0.clone(), node, local_tx)));
        let probe = crate::load_balancer_probe::serve(
            local_rx.clone(),
            readiness.clone(),
            settings.listen_addr,
            stopped.clone(),
        );
        background.push(tokio::spawn(probe));
        local_rx
    });

    let upstream = Upstream::new(settings.connect_timeout);
    let proxy = Arc::new(HttpProxy::new(table.clone(), upstream, metrics.clone(), proxy_options));
    let timeouts = settings.routing.client_timeouts(
        settings.http_request_timeout,
        settings.limits.timeouts.client_timeout,
        settings.tls.use_proxy_protocol,
    );
    let https = HttpsContext {
        table: table.clone(),
        proxy: proxy.clone(),
        configs: tls.configs,
        metrics: metrics.clone(),
        timeouts,
        inspect_delay: settings.tls.inspect_delay,
        connect_timeout: settings.connect_timeout,
        client_cert_headers: tls.client_cert_headers,
        passthrough_relay: PassthroughRelay::start(settings.tls.passthrough_sockmap).with_fin_timeouts(fin_timeouts),
    };
    let drain = settings.hard_stop_after;
    let https_task =
        tokio::spawn(serve_https(https_listener, Arc::new(https), stopped.clone(), drain, connection_limit.clone()));
    let http_task = tokio::spawn(serve_http(http_listener, proxy, timeouts, stopped, drain, connection_limit));
    info!(%http_addr, %https_addr, %stats_addr, source = ?source, "router started");

    Ok(RunningRouter {
        http_addr,
        https_addr,
        stats_addr,
        table,
        readiness,
        metrics,
        local_service,
        settings,
        stop,
        http_task,
        https_task,
        background,
    })
}

impl RunningRouter {
    /// Graceful stop: readiness fails at once, serving goes on for the graceful-shutdown delay, then the
    /// listeners close and in-flight requests get up to the hard-stop period to finish.
    pub async fn shutdown(self) {
        self.readiness.mark_draining();
        info!(delay = ?self.settings.graceful_shutdown_delay, "draining: readiness now fails");
        tokio::time::sleep(self.settings.graceful_shutdown_delay).await;
        let _ = self.stop.send(true);
        let _ = tokio::join!(self.http_task, self.https_task);
        for task in self.background {
            task.abort();
        }
        info!("router stopped");
    }
}

fn kube_options(settings: &Settings, kubeconfig: Option<std::path::PathBuf>) -> KubeOptions {
    KubeOptions {
        kubeconfig,
        reload_interval: settings.reload_interval,
        watch_endpoints: settings.watch_endpoints,
        update_status: settings.update_status,
        router_name: settings.router_name.clone(),
        canonical_hostname: settings.router_canonical_hostname.clone(),
    }
}

/// The listen backlog of the admin listener (tokio's default for every listener).
const ADMIN_BACKLOG: u32 = 1024;

/// A listener on `addr` with address reuse (restarts while old connections linger) and `backlog`.
fn bind(what: &'static str, addr: SocketAddr, backlog: u32) -> Result<TcpListener, StartError> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4(),
        SocketAddr::V6(_) => TcpSocket::new_v6(),
    };
    socket
        .and_then(|socket| {
            socket.set_reuseaddr(true)?;
            socket.bind(addr)?;
            socket.listen(backlog)
        })
        .map_err(|source| StartError::Bind { what, addr, source })
}

fn local_addr(listener: &TcpListener, requested: SocketAddr) -> SocketAddr {
    listener.local_addr().unwrap_or(requested)
}
