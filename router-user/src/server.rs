//! Starting and stopping a whole router: listeners, admin, source, table publisher, graceful shutdown.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd as _;
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::info;

use crate::access_log::AccessLog;
use crate::admin::{serve_admin, AdminGuard, AdminState, KubeReviewer, Readiness};
use crate::config::{AccessLogError, RoutingError, Settings, StatsAuthError};
use crate::handover::{self, Inherited, Offered, Role};
use crate::http3::{alt_svc_value, bind_udp, serve_http3, Http3Endpoints, Http3Error};
use crate::https::{serve_https, start_stapling, HttpsContext, TlsSetup, TlsSetupError};
use crate::listen::{bind_listeners, ConnectionLimit, IpMode};
use crate::metrics::Metrics;
use crate::model::{LocalService, Snapshot};
use crate::proxy::{serve_http, HttpProxy, Upstream};
use crate::publish::Publisher;
use crate::relay::steer::{PodInterfaces, SteerConfig, Steering};
use crate::relay::PassthroughRelay;
use crate::router_service::{follow, node_name_or_hostname};
use crate::source::kube::{KubeError, KubeOptions, SkippedObjects};
use crate::source::manifest::{spawn_watch, ManifestSource};
use crate::source::{SourceChoice, SourceChoiceError};
use crate::table::{BuildOptions, RouteTable, TableHandle, TlsBuild};
use crate::tls::{choose_provider, ProviderAlreadyChosen};
use crate::xdp::SteerMaps;

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
    #[error("access log: {0}")]
    AccessLog(#[from] AccessLogError),
    #[error("access log: cannot open the destination: {0}")]
    AccessLogSink(io::Error),
    #[error("admin listener: {0}")]
    StatsAuth(#[from] StatsAuthError),
    #[error(transparent)]
    TlsProvider(#[from] ProviderAlreadyChosen),
    #[error(transparent)]
    Http3(#[from] Http3Error),
}

/// A router that is serving. Dropping it without `shutdown` leaves its tasks running until the runtime ends.
pub struct RunningRouter {
    pub http_addr: SocketAddr,
    pub https_addr: SocketAddr,
    pub stats_addr: SocketAddr,
    /// The HTTP/3 (QUIC) listener's UDP address, with ROUTER_ENABLE_HTTP3: the HTTPS port's number.
    pub http3_addr: Option<SocketAddr>,
    pub table: TableHandle,
    pub readiness: Arc<Readiness>,
    pub metrics: Arc<Metrics>,
    /// The router's own Service as this node sees it (`--router-service`), updated with every snapshot.
    pub local_service: Option<watch::Receiver<Option<LocalService>>>,
    settings: Settings,
    stop: watch::Sender<bool>,
    http_task: JoinHandle<()>,
    https_task: JoinHandle<()>,
    http3_task: Option<JoinHandle<()>>,
    background: Vec<JoinHandle<()>>,
    proxy: Arc<HttpProxy>,
    steering: Option<Arc<Steering>>,
    /// Duplicates of the listening sockets, for a hand-over to the next router (ROUTER_HANDOVER_SOCKET).
    offered: Vec<Offered>,
}

/// Binds the listeners and starts every task. Readiness follows once the first table is published. With
/// ROUTER_BIND_PORTS_AFTER_SYNC the HTTP and HTTPS ports are bound (and this returns) only after that, the
/// admin port answering (not ready) meanwhile.
pub async fn start(settings: Settings) -> Result<RunningRouter, StartError> {
    start_from(settings, StartFrom::default()).await
}

/// What passthrough steering takes from the XDP front: its steering maps, and the front itself to attach
/// `steer_ingress` to the pod-facing interfaces the FIB names.
pub struct SteerFront {
    pub maps: SteerMaps,
    pub pod_interfaces: Arc<dyn PodInterfaces>,
}

/// What the router starts with beside its settings.
#[derive(Default)]
pub struct StartFrom<'a> {
    /// The XDP front's steering side, for ROUTER_XDP_STEER_PASSTHROUGH.
    pub steer_front: Option<SteerFront>,
    /// Listeners handed over by the router running before this one (ROUTER_HANDOVER_SOCKET): the admin port
    /// is served on them at once, :80 and :443 once the first table is live.
    pub inherited: Option<&'a mut Inherited>,
}

/// [`start`], with the XDP front's steering side and the listeners of a hand-over.
pub async fn start_from(settings: Settings, from: StartFrom<'_>) -> Result<RunningRouter, StartError> {
    let StartFrom { steer_front, mut inherited } = from;
    let source = settings.source_choice()?;
    choose_provider(settings.tls.tls_provider)?;
    let mut tls = TlsSetup::from_args(&settings.tls)?;
    let mut defaults = settings.routing.defaults(settings.server_timeout)?;
    defaults.tcp_balance = settings.tcp_balance()?;
    let mut tls_build = TlsBuild::new(
        Some(tls.default_certificate.clone()),
        tls.default_destination_ca.clone(),
        settings.connect_timeout,
    );
    // ROUTER_MUTUAL_TLS_AUTH set: the routes' own client certificate annotations are not used.
    tls_build.global_client_auth = tls.client_cert_headers;
    let build_options = BuildOptions {
        allow_loopback_endpoints: settings.allow_loopback_endpoints,
        admission: settings.routing.admission()?,
        defaults,
        tls: tls_build,
    };
    let mut proxy_options = settings.routing.proxy_options(settings.connect_timeout)?;
    proxy_options.request_head_limit = settings.limits.request_head_limit()?;
    proxy_options.compression = settings.http.compression()?;
    proxy_options.h1_case_adjust = settings.http.h1_case_adjust()?;
    let fin_timeouts = settings.limits.timeouts.fin_timeouts();
    proxy_options.fin_timeouts = Some(fin_timeouts);
    let max_connections = settings.limits.connection_limit()?;
    // Connections past ROUTER_MAX_CONNECTIONS wait in the backlog: as long as the limit, as HAProxy's default
    // (the kernel caps it at net.core.somaxconn).
    let backlog = u32::try_from(max_connections).unwrap_or(u32::MAX).max(ADMIN_BACKLOG);
    let mode = settings.listeners.ip_v4_v6_mode;
    let after_sync = settings.listeners.bind_ports_after_sync;
    let admin_listeners = listen(Role::Admin, settings.stats_addr(), mode, ADMIN_BACKLOG, &mut inherited)?;
    let stats_addr = local_addr(&admin_listeners, settings.stats_addr());
    // Inherited :80 and :443 are served only once the first table is live: the old router keeps serving them
    // meanwhile, and no connection meets an empty table.
    let mut client_listeners = match after_sync || inherited.is_some() {
        true => None,
        false => Some((
            listen(Role::Http, settings.http_addr(), mode, backlog, &mut inherited)?,
            listen(Role::Https, settings.https_addr(), mode, backlog, &mut inherited)?,
        )),
    };
    // Duplicates of the listening sockets, kept only to offer them to the next router.
    let offering = settings.handover_socket.is_some();
    let mut offered = if offering { offerable(Role::Admin, &admin_listeners) } else { Vec::new() };
    let access_log_options = settings.access_log.options()?;

    let table: TableHandle = Arc::new(ArcSwap::from_pointee(RouteTable::default()));
    let metrics = Arc::new(Metrics::default());
    let connection_limit = ConnectionLimit::new(max_connections, &metrics);
    metrics.worker_threads.set(i64::try_from(tokio::runtime::Handle::current().metrics().num_workers()).unwrap_or(0));
    let (access_log, access_log_task) = AccessLog::start(access_log_options, metrics.access_log_dropped_lines.clone())
        .await
        .map_err(StartError::AccessLogSink)?;
    proxy_options.access_log = access_log;
    metrics.haproxy.set_server_threshold(settings.metrics.metrics_server_threshold);
    let readiness = Arc::new(Readiness::default());
    readiness.set_ports_unbound(after_sync);
    let (stop, stopped) = watch::channel(false);

    let skipped = Arc::new(SkippedObjects::default());
    let admin = AdminState {
        readiness: readiness.clone(),
        metrics: metrics.clone(),
        table: table.clone(),
        skipped: skipped.clone(),
        guard: admin_guard(&settings, &source).await?,
        xdp_pin_dir: settings.xdp_iface.is_some().then(|| settings.bpf_pin_dir.clone()),
    };
    let admin = Arc::new(admin);
    let admin_tasks: Vec<JoinHandle<()>> = admin_listeners
        .into_iter()
        .map(|listener| tokio::spawn(serve_admin(listener, admin.clone(), stopped.clone())))
        .collect();

    // The Kubernetes source's snapshots are whole-cluster sized: at most one waits while the publisher builds.
    let queued_updates = if matches!(source, SourceChoice::Kube(_)) { 1 } else { 16 };
    let (updates_tx, updates_rx) = mpsc::channel(queued_updates);
    let (snapshots_tx, snapshots_rx) = watch::channel(Arc::new(Snapshot::default()));
    let (published_tx, published_rx) = watch::channel(table.load_full());
    let mut first_table = published_rx.clone();
    if settings.tls.ocsp_stapling {
        let refresh = settings.tls.ocsp_refresh_interval;
        start_stapling(&mut tls.configs, metrics.ocsp.clone(), refresh, published_rx.clone());
    }
    let watch_task = match &source {
        SourceChoice::Manifests(path) => {
            let source = ManifestSource::new(path.clone()).with_gateway_class(&settings.gateway_class);
            spawn_watch(source, updates_tx)
        }
        SourceChoice::Kube(kubeconfig) => {
            let options = kube_options(&settings, kubeconfig.clone());
            match crate::source::kube::start(&options, updates_tx, published_rx, skipped, metrics.clone()).await {
                Ok(task) => task,
                Err(error) => {
                    admin_tasks.iter().for_each(JoinHandle::abort);
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
    let mut background = admin_tasks;
    background.extend([watch_task, publish_task]);
    background.extend(access_log_task);
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

    let (http_listeners, https_listeners) = match client_listeners.take() {
        Some(bound) => bound,
        None => {
            // ROUTER_BIND_PORTS_AFTER_SYNC: the first complete table is live before :80 and :443 listen.
            let _ = first_table.changed().await;
            match listen(Role::Http, settings.http_addr(), mode, backlog, &mut inherited)
                .and_then(|http| Ok((http, listen(Role::Https, settings.https_addr(), mode, backlog, &mut inherited)?)))
            {
                Ok(bound) => bound,
                Err(error) => {
                    background.iter().for_each(JoinHandle::abort);
                    return Err(error);
                }
            }
        }
    };
    readiness.set_ports_unbound(false);
    if offering {
        offered.extend(offerable(Role::Http, &http_listeners));
        offered.extend(offerable(Role::Https, &https_listeners));
    }
    let http_addr = local_addr(&http_listeners, settings.http_addr());
    let https_addr = local_addr(&https_listeners, settings.https_addr());
    // ROUTER_ENABLE_HTTP3: UDP on the HTTPS port's number (the bound one, when the setting asked for any).
    let http3_sockets = match settings.http3.enable_http3 {
        true => {
            let mut udp = settings.https_addr();
            udp.set_port(https_addr.port());
            match bind_udp(udp, mode, offering) {
                Ok(sockets) => Some(sockets),
                Err(error) => {
                    background.iter().for_each(JoinHandle::abort);
                    return Err(error.into());
                }
            }
        }
        false => None,
    };
    if http3_sockets.is_some() {
        proxy_options.alt_svc = Some(alt_svc_value(https_addr.port(), settings.http3.http3_alt_svc_max_age));
    }

    let upstream = Upstream::new(settings.connect_timeout);
    let proxy = Arc::new(HttpProxy::new(table.clone(), upstream, metrics.clone(), proxy_options));
    let timeouts = settings.routing.client_timeouts(
        settings.http_request_timeout,
        settings.limits.timeouts.client_timeout,
        settings.tls.use_proxy_protocol,
    );
    let steering = start_steering(steer_front, &settings, https_addr, &metrics);
    let https = HttpsContext {
        table: table.clone(),
        proxy: proxy.clone(),
        configs: tls.configs,
        metrics: metrics.clone(),
        timeouts,
        inspect_delay: settings.tls.inspect_delay,
        connect_timeout: settings.connect_timeout,
        client_cert_headers: tls.client_cert_headers,
        passthrough_relay: PassthroughRelay::start(settings.tls.passthrough_sockmap)
            .with_fin_timeouts(fin_timeouts)
            .with_steering(steering.clone()),
    };
    let drain = settings.hard_stop_after;
    let https = Arc::new(https);
    let http3 = match http3_sockets.map(|s| Http3Endpoints::start(s, &https, settings.http3.http3_max_streams)) {
        Some(Ok(endpoints)) => Some(endpoints),
        Some(Err(error)) => {
            background.iter().for_each(JoinHandle::abort);
            return Err(error.into());
        }
        None => None,
    };
    let http3_addr = http3.as_ref().and_then(Http3Endpoints::local_addr);
    let http3_task = http3.map(|endpoints| tokio::spawn(serve_http3(endpoints, https.clone(), stopped.clone(), drain)));
    let https_serving: Vec<_> = https_listeners
        .into_iter()
        .map(|l| serve_https(l, https.clone(), stopped.clone(), drain, connection_limit.clone()))
        .collect();
    let https_task = tokio::spawn(async move {
        futures_util::future::join_all(https_serving).await;
    });
    let http_serving: Vec<_> = http_listeners
        .into_iter()
        .map(|l| serve_http(l, proxy.clone(), timeouts, stopped.clone(), drain, connection_limit.clone()))
        .collect();
    let http_task = tokio::spawn(async move {
        futures_util::future::join_all(http_serving).await;
    });
    info!(%http_addr, %https_addr, ?http3_addr, %stats_addr, source = ?source, "router started");

    Ok(RunningRouter {
        http_addr,
        https_addr,
        stats_addr,
        http3_addr,
        table,
        readiness,
        metrics,
        local_service,
        settings,
        stop,
        http_task,
        https_task,
        http3_task,
        background,
        proxy,
        steering,
        offered,
    })
}

impl RunningRouter {
    /// The listening sockets (duplicates) to offer to the next router; empty after the first call.
    pub fn take_offered_listeners(&mut self) -> Vec<Offered> {
        std::mem::take(&mut self.offered)
    }

    /// Stop after handing the listeners over: the next router accepts on them already, so there is no
    /// graceful delay. Accepting stops at once; requests in flight finish, HTTP/1.1 connections close with
    /// their next response (or after a second idle), HTTP/2 ones get GOAWAY, tunnels get up to the hard-stop
    /// period.
    pub async fn drain_after_handover(self) {
        self.readiness.mark_draining();
        self.proxy.close_connections_on_next_response();
        if let Some(steering) = &self.steering {
            steering.hand_over();
        }
        info!("handed over: no longer accepting, draining the open connections");
        self.stop_and_drain().await;
    }

    /// Graceful stop: readiness fails at once, serving goes on for the graceful-shutdown delay, then the
    /// listeners close and in-flight requests get up to the hard-stop period to finish.
    pub async fn shutdown(self) {
        self.readiness.mark_draining();
        info!(delay = ?self.settings.graceful_shutdown_delay, "draining: readiness now fails");
        tokio::time::sleep(self.settings.graceful_shutdown_delay).await;
        self.stop_and_drain().await;
    }

    /// Stops accepting, waits for the open connections and the WebSocket tunnels (each listener waits up to the
    /// hard-stop period for its connections, the tunnels get what is left of it), then stops the rest.
    async fn stop_and_drain(mut self) {
        let deadline = tokio::time::Instant::now() + self.settings.hard_stop_after;
        // The listening sockets close with the accept loops' copies.
        self.offered.clear();
        let _ = self.stop.send(true);
        let http3 = async {
            if let Some(task) = self.http3_task {
                let _ = task.await;
            }
        };
        let _ = tokio::join!(self.http_task, self.https_task, http3);
        let tunnels = self.proxy.tunnels();
        tunnels.close();
        if tokio::time::timeout_at(deadline, tunnels.wait()).await.is_err() {
            info!(open = tunnels.len(), "hard stop: closing the tunnels still open");
        }
        for task in self.background {
            task.abort();
        }
        info!("router stopped");
    }
}

/// The passthrough steering setup, when asked for and the XDP front handed over its maps; a failure to
/// start leaves passthrough on the userspace relay (logged).
fn start_steering(
    front: Option<SteerFront>,
    settings: &Settings,
    https_addr: SocketAddr,
    metrics: &Arc<Metrics>,
) -> Option<Arc<Steering>> {
    if !settings.steer.xdp_steer_passthrough {
        return None;
    }
    let SteerFront { maps, pod_interfaces } = front?;
    let config = SteerConfig {
        ports: settings.steer.xdp_steer_ports.clone(),
        https_port: https_addr.port(),
        proxy_protocol: settings.tls.use_proxy_protocol,
    };
    match Steering::start(maps, pod_interfaces, &config, metrics.clone(), settings.routing.tunnel_timeout) {
        Ok(steering) => Some(steering),
        Err(error) => {
            tracing::warn!(%error, "passthrough steering not started; passthrough stays on the userspace relay");
            None
        }
    }
}

/// Basic credentials when configured; with the Kubernetes source, bearer tokens reviewed by its API server.
async fn admin_guard(settings: &Settings, source: &SourceChoice) -> Result<AdminGuard, StartError> {
    let basic = settings.stats_auth.credentials()?;
    let kube = match source {
        SourceChoice::Kube(kubeconfig) => {
            let client = crate::source::kube::connect(kubeconfig.as_deref()).await?;
            Some(KubeReviewer::new(client, settings.router_name.clone()))
        }
        SourceChoice::Manifests(_) => None,
    };
    Ok(AdminGuard { basic, kube })
}

fn kube_options(settings: &Settings, kubeconfig: Option<std::path::PathBuf>) -> KubeOptions {
    KubeOptions {
        kubeconfig,
        reload_interval: settings.reload_interval,
        watch_endpoints: settings.watch_endpoints,
        update_status: settings.update_status,
        router_name: settings.router_name.clone(),
        canonical_hostname: settings.router_canonical_hostname.clone(),
        gateway_class: settings.gateway_class.clone(),
    }
}

/// The listeners of `role`: handed over by the previous router when it had them, else bound.
fn listen(
    role: Role,
    addr: SocketAddr,
    mode: IpMode,
    backlog: u32,
    inherited: &mut Option<&mut Inherited>,
) -> Result<Vec<TcpListener>, StartError> {
    let what = match role {
        Role::Admin => "admin",
        Role::Http => "http",
        Role::Https => "https",
    };
    let Some(taken) = inherited.as_mut().and_then(|inherited| inherited.take_role(role, addr)) else {
        return bind(what, addr, mode, backlog);
    };
    let registered: std::io::Result<Vec<TcpListener>> = taken
        .into_iter()
        .map(|listener| listener.set_nonblocking(true).and_then(|()| TcpListener::from_std(listener)))
        .collect();
    info!(listener = what, "serving on the listener handed over by the previous router");
    registered.map_err(|source| StartError::Bind { what, addr, source })
}

/// Duplicates of `listeners`' descriptors with what they are, for the next router's hand-over.
fn offerable(role: Role, listeners: &[TcpListener]) -> Vec<Offered> {
    listeners
        .iter()
        .filter_map(|listener| {
            let addr = listener.local_addr().ok()?;
            let fd = listener.as_fd().try_clone_to_owned().ok()?;
            Some(Offered { listener: handover::message::Listener { role, addr }, fd })
        })
        .collect()
}

/// The listen backlog of the admin listener (tokio's default for every listener).
const ADMIN_BACKLOG: u32 = 1024;

/// The sockets of one listener: one, or one per address family (ROUTER_IP_V4_V6_MODE `v4v6`), with `backlog`.
fn bind(what: &'static str, addr: SocketAddr, mode: IpMode, backlog: u32) -> Result<Vec<TcpListener>, StartError> {
    bind_listeners(addr, mode, backlog).map_err(|(addr, source)| StartError::Bind { what, addr, source })
}

/// The address of a listener's first socket (its port is every socket's).
fn local_addr(listeners: &[TcpListener], requested: SocketAddr) -> SocketAddr {
    listeners.first().and_then(|listener| listener.local_addr().ok()).unwrap_or(requested)
}
