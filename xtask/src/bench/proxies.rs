//! The two proxies under test, pinned to the proxy CPU: Debian's HAProxy with the generated OpenShift-style
//! configuration (reloaded the way the OpenShift router does: a new process takes the listening sockets over the
//! stats socket, `-x`, and tells the old one to finish, `-sf`), and our router on a manifest directory; with the
//! HAProxy options every run uses (the same work as the router does).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::haproxy::{self, Layout, Options};
use super::process::{free_port, http_status, log_tail, wait_until, Proc};
use super::routes::{BenchRoute, RouteSet, DOMAIN};

/// CPU of the proxy under test.
pub const PROXY_CPU: u32 = 1;
/// CPUs of a proxy running more than one worker thread (the two-thread scenario): every CPU of the machine.
pub const ALL_CPUS: &str = "0,1";

/// `taskset -c` CPUs of a proxy with `threads` workers.
fn proxy_cpus(threads: u32) -> String {
    if threads > 1 {
        ALL_CPUS.to_string()
    } else {
        PROXY_CPU.to_string()
    }
}
/// Longest a proxy may take to serve its first request after a start.
const START_LIMIT: Duration = Duration::from_secs(90);

/// Serves `route` with 200 at `addr` now.
pub fn serves(addr: SocketAddr, route: &BenchRoute) -> bool {
    http_status(addr, &route.host, "/", Duration::from_secs(2)).is_ok_and(|code| code == 200)
}

/// The route a start waits for: the set's target.
fn start_target(set: &RouteSet) -> anyhow::Result<&BenchRoute> {
    set.target().context("an empty route set has no route to wait for")
}

/// The HAProxy options of every run: the same work as the router does.
pub fn haproxy_options(cookies: bool) -> haproxy::Options {
    haproxy::Options {
        // The sticky cookie when the router inserts one; else `disable_cookies` on every route.
        cookies,
        // No active health checks on either (the router's are set to a day, see `proxies::ROUTER_ENV`): with
        // OpenShift's `check inter 5000ms`, 10,000 routes x 4 pods would be 8,000 connects/s per proxy, on the
        // same nginx as the load.
        health_checks: false,
        // docs/benchmarking.md §1: one worker thread.
        threads: 1,
        maxconn: haproxy_maxconn(),
        ..haproxy::Options::default()
    }
}

/// OpenShift's 50,000, or less when the open-files limit cannot hold it (HAProxy needs ~2 descriptors per connection
/// and refuses to start otherwise); far above the bench's few hundred connections either way.
fn haproxy_maxconn() -> u32 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct we pass.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    let hard = if ok { limit.rlim_max } else { 1024 };
    let fits = hard.saturating_sub(200) / 2;
    u32::try_from(fits.min(50_000)).unwrap_or(50_000).max(1000)
}

pub struct Haproxy {
    pub layout: Layout,
    pub options: Options,
    pub current: Proc,
    /// Processes replaced by a reload that have not exited yet.
    old: Vec<Proc>,
    log_dir: PathBuf,
    starts: u32,
}

impl Haproxy {
    /// A layout in `dir` with fresh ports and the default certificate.
    pub fn layout(dir: &Path, default_certificate: &Path) -> anyhow::Result<Layout> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Layout {
            dir: dir.to_path_buf(),
            listen: Ipv4Addr::LOCALHOST,
            http_port: free_port(&[Ipv4Addr::LOCALHOST])?,
            https_port: free_port(&[Ipv4Addr::LOCALHOST])?,
            default_certificate: default_certificate.to_path_buf(),
        })
    }

    /// Writes the configuration for `set` and starts HAProxy; returns it with the time from the start of writing
    /// until `set`'s target route answered 200.
    pub fn start(set: &RouteSet, layout: Layout, options: Options) -> anyhow::Result<(Haproxy, Duration)> {
        let begin = Instant::now();
        let target = start_target(set)?;
        let config = haproxy::write(set, &layout, &options)?;
        let log_dir = layout.dir.clone();
        let current = Proc::spawn_pinned(
            "haproxy",
            &proxy_cpus(options.threads),
            Path::new("haproxy"),
            &base_args(&config),
            &log_dir.join("haproxy-0.log"),
            &[],
        )?;
        let mut haproxy = Haproxy { layout, options, current, old: Vec::new(), log_dir, starts: 1 };
        let addr = haproxy.http_addr();
        let up = wait_until(START_LIMIT, Duration::from_millis(10), || serves(addr, target));
        let running = haproxy.current.running();
        let up = up.with_context(|| {
            format!(
                "haproxy does not serve (running: {running}); {}",
                log_tail(&haproxy.log_dir.join("haproxy-0.log"), 20)
            )
        })?;
        Ok((haproxy, up.max(begin.elapsed())))
    }

    pub fn http_addr(&self) -> SocketAddr {
        SocketAddr::from((self.layout.listen, self.layout.http_port))
    }

    pub fn https_addr(&self) -> SocketAddr {
        SocketAddr::from((self.layout.listen, self.layout.https_port))
    }

    /// Rewrites the configuration for `set` and reloads: a new process takes the listeners over (`-x`) and
    /// soft-stops the old one (`-sf`).
    pub fn reload(&mut self, set: &RouteSet) -> anyhow::Result<()> {
        let config = haproxy::write(set, &self.layout, &self.options)?;
        let mut args = base_args(&config);
        args.extend(["-x".into(), self.layout.stats_socket().display().to_string()]);
        args.extend(["-sf".into(), self.current.pid().to_string()]);
        let log = self.log_dir.join(format!("haproxy-{}.log", self.starts));
        self.starts += 1;
        let next =
            Proc::spawn_pinned("haproxy", &proxy_cpus(self.options.threads), Path::new("haproxy"), &args, &log, &[])?;
        let previous = std::mem::replace(&mut self.current, next);
        self.old.push(previous);
        self.old.retain_mut(Proc::running);
        Ok(())
    }

    /// Processes still alive (the current one and old ones still finishing) and their RSS in total (KiB).
    pub fn alive(&mut self) -> (usize, u64) {
        self.old.retain_mut(Proc::running);
        let rss = std::iter::once(&self.current).chain(&self.old).map(|p| p.rss_kib().unwrap_or(0)).sum();
        (1 + self.old.len(), rss)
    }

    /// The command line of a start, for the results.
    pub fn command_line(&self) -> String {
        let cpus = proxy_cpus(self.options.threads);
        format!("taskset -c {cpus} haproxy -f {} -db", self.layout.config_path().display())
    }
}

fn base_args(config: &Path) -> Vec<String> {
    vec!["-f".into(), config.display().to_string(), "-db".into()]
}

/// The router's environment: warnings and the line of each published table (its build time, read beside the
/// route churn figures in the router's log), and active health checks effectively off (one round at start, then
/// one a day), as HAProxy runs without `check` (see `haproxy_options`). ROUTER_THREADS follows HAProxy's
/// `nbthread` (`router_env`; the router's own default is 4, the ingress operator's value).
const ROUTER_ENV: [(&str, &str); 2] =
    [("RUST_LOG", "warn,router::publish=info"), ("ROUTER_BACKEND_CHECK_INTERVAL", "24h")];

/// The rustls crypto provider of a router process (`ROUTER_TLS_PROVIDER`): both are in the one binary, so one run
/// measures both side by side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsProvider {
    #[default]
    Ring,
    AwsLcRs,
}

impl TlsProvider {
    pub fn as_str(self) -> &'static str {
        match self {
            TlsProvider::Ring => "ring",
            TlsProvider::AwsLcRs => "aws-lc-rs",
        }
    }
}

/// How a router process runs, beyond its routes and ports.
#[derive(Clone, Copy, Debug)]
pub struct RouterRun {
    /// `ROUTER_TLS_SESSION_RESUMPTION` (off like HAProxy's `no-tls-tickets` in the full-handshake scenario).
    pub tls_resumption: bool,
    /// `ROUTER_PASSTHROUGH_SOCKMAP`: relay passthrough bytes in the kernel (the XDP group's passthrough runs).
    pub passthrough_sockmap: bool,
    /// `ROUTER_THREADS` (1 but in the two-thread scenario, like HAProxy's `nbthread`).
    pub threads: u32,
    /// ROUTER_SYSLOG_ADDRESS (with ROUTER_LOG_LEVEL=info): the access log goes there.
    pub access_log: Option<SocketAddr>,
    /// `ROUTER_TLS_PROVIDER`.
    pub tls_provider: TlsProvider,
    /// `ROUTER_ENABLE_HTTP3`: QUIC on UDP at the HTTPS port's number (groups with an HTTP/3 scenario).
    pub http3: bool,
}

impl Default for RouterRun {
    fn default() -> RouterRun {
        RouterRun {
            tls_resumption: true,
            passthrough_sockmap: false,
            threads: 1,
            access_log: None,
            tls_provider: TlsProvider::Ring,
            http3: false,
        }
    }
}

pub struct Router {
    pub manifests: PathBuf,
    pub http_port: u16,
    pub https_port: u16,
    pub stats_port: u16,
    /// `DEFAULT_CERTIFICATE_PATH`: the PEM file HAProxy has as its default certificate.
    pub default_certificate: PathBuf,
    pub run: RouterRun,
    pub proc: Proc,
    pub binary: PathBuf,
}

impl Router {
    /// Starts the router on `manifests` (the directory `set` was written to), HTTPS on a free port with
    /// `default_certificate`; returns it with the time from the start of the process until `set`'s target route
    /// answered 200.
    pub fn start(
        binary: &Path,
        manifests: &Path,
        set: &RouteSet,
        log: &Path,
        default_certificate: &Path,
        run: RouterRun,
    ) -> anyhow::Result<(Router, Duration)> {
        let target = start_target(set)?;
        let http_port = free_port(&[Ipv4Addr::LOCALHOST])?;
        let https_port = free_port(&[Ipv4Addr::LOCALHOST])?;
        let stats_port = free_port(&[Ipv4Addr::LOCALHOST])?;
        let args = router_args(manifests, http_port, https_port, stats_port);
        let env = router_env(default_certificate, &run);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let begin = Instant::now();
        let proc = Proc::spawn_pinned("router", &proxy_cpus(run.threads), binary, &args, log, &env)?;
        let mut router = Router {
            manifests: manifests.to_path_buf(),
            http_port,
            https_port,
            stats_port,
            default_certificate: default_certificate.to_path_buf(),
            run,
            proc,
            binary: binary.into(),
        };
        let addr = router.http_addr();
        let up = wait_until(START_LIMIT, Duration::from_millis(10), || serves(addr, target));
        let running = router.proc.running();
        up.with_context(|| format!("router does not serve (running: {running}); {}", log_tail(log, 20)))?;
        Ok((router, begin.elapsed()))
    }

    pub fn http_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.http_port))
    }

    pub fn https_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.https_port))
    }

    pub fn command_line(&self) -> String {
        let args = router_args(&self.manifests, self.http_port, self.https_port, self.stats_port).join(" ");
        let env: Vec<String> =
            router_env(&self.default_certificate, &self.run).iter().map(|(k, v)| format!("{k}={v}")).collect();
        let cpus = proxy_cpus(self.run.threads);
        format!("{} taskset -c {cpus} {} {args}", env.join(" "), self.binary.display())
    }
}

fn router_env(default_certificate: &Path, run: &RouterRun) -> Vec<(&'static str, String)> {
    let mut env: Vec<(&str, String)> = ROUTER_ENV.iter().map(|(k, v)| (*k, (*v).to_string())).collect();
    env.push(("ROUTER_THREADS", run.threads.to_string()));
    if let Some(addr) = run.access_log {
        // As the ingress operator turns the access log on: the address, and level info (access lines' level).
        env.push(("ROUTER_SYSLOG_ADDRESS", addr.to_string()));
        env.push(("ROUTER_LOG_LEVEL", "info".into()));
    }
    env.push(("DEFAULT_CERTIFICATE_PATH", default_certificate.display().to_string()));
    env.push(("ROUTER_TLS_SESSION_RESUMPTION", run.tls_resumption.to_string()));
    if run.tls_provider != TlsProvider::Ring {
        env.push(("ROUTER_TLS_PROVIDER", run.tls_provider.as_str().into()));
    }
    if run.http3 {
        env.push(("ROUTER_ENABLE_HTTP3", "true".into()));
    }
    if run.passthrough_sockmap {
        env.push(("ROUTER_PASSTHROUGH_SOCKMAP", "true".into()));
        // Its one line saying whether the splice loaded (info), beside the warnings.
        for (name, value) in &mut env {
            if *name == "RUST_LOG" {
                *value = format!("warn,{SOCKMAP_LOG_TARGET}=info");
            }
        }
    }
    env
}

/// The router's log target of the sockmap relay (`router::relay::sockmap`), whose start line says whether it loaded.
const SOCKMAP_LOG_TARGET: &str = "router::relay::sockmap";
/// What that line says when the sockmap relay is on.
pub const SOCKMAP_LOADED: &str = "passthrough sockmap relay loaded";

fn router_args(manifests: &Path, http_port: u16, https_port: u16, stats_port: u16) -> Vec<String> {
    vec![
        "--manifests".into(),
        manifests.display().to_string(),
        "--allow-loopback-endpoints".into(),
        "--listen-addr".into(),
        "127.0.0.1".into(),
        "--http-port".into(),
        http_port.to_string(),
        "--https-port".into(),
        https_port.to_string(),
        "--stats-port".into(),
        stats_port.to_string(),
    ]
}

/// The default certificate (and key) in one PEM file under `dir`.
pub fn default_certificate(dir: &Path) -> anyhow::Result<PathBuf> {
    let (certificate, key) = super::pki::self_signed_certificate(&dir.join("tls"), DOMAIN)?;
    let path = dir.join("tls").join("default.pem");
    std::fs::write(&path, format!("{certificate}{key}")).context("writing the default certificate")?;
    Ok(path)
}
