//! `h3load`: HTTP/3 load for `cargo xtask bench` (Debian's h2load is built without HTTP/3). One thread, `-c`
//! connections with `-m` requests in flight on each, for `--warm-up-time` then `-D` seconds (or until `-n`
//! requests have started); every request of the measured window goes to `--log-file` in h2load's format, and the
//! summary line is h2load's `requests:` line.

mod connection;
mod record;
mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;

use connection::Plan;

/// Longest run allowed: every load of the bench is bounded in time.
const MAX_SECONDS: u64 = 600;

#[derive(Parser, Debug)]
#[command(about = "HTTP/3 load: connections x streams for a bounded time, a log per request")]
struct Args {
    /// `https://<host>[:port]/path`: the host is the SNI and `:authority`.
    url: http::Uri,
    /// Send the datagrams here whatever the URL's host resolves to.
    #[arg(long)]
    connect_to: SocketAddr,
    /// PEM file of the CA the server's certificate chains to.
    #[arg(long)]
    ca: PathBuf,
    /// Connections.
    #[arg(short = 'c', default_value_t = 1)]
    clients: u32,
    /// Requests in flight per connection.
    #[arg(short = 'm', default_value_t = 1)]
    streams: u32,
    /// Seconds measured, after the warm-up.
    #[arg(short = 'D', default_value_t = 5)]
    duration: u64,
    #[arg(long, default_value_t = 0)]
    warm_up_time: u64,
    /// At most this many requests in all.
    #[arg(short = 'n')]
    requests: Option<u32>,
    #[arg(long)]
    log_file: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.duration + args.warm_up_time <= MAX_SECONDS, "a run is at most {MAX_SECONDS} s");
    let sni = args.url.host().context("the URL has no host")?.to_string();
    // `:authority` without the port, as the bench gives h2load (routes are matched by host).
    let uri: http::Uri = format!("https://{sni}{}", args.url.path_and_query().map_or("/", |p| p.as_str())).parse()?;
    let now = Instant::now();
    let measured_from = now + Duration::from_secs(args.warm_up_time);
    let plan = Arc::new(Plan {
        connect: args.connect_to,
        sni,
        uri,
        client: tls::quic_client_config(&args.ca)?,
        measured_from,
        deadline: measured_from + Duration::from_secs(args.duration),
        budget: AtomicI64::new(args.requests.map_or(i64::MAX, i64::from)),
    });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let records = runtime.block_on(async {
        let tasks: Vec<_> =
            (0..args.clients).map(|_| tokio::spawn(connection::run(plan.clone(), args.streams))).collect();
        let mut records = Vec::new();
        for task in tasks {
            records.extend(task.await.unwrap_or_default());
        }
        records
    });
    let measured = plan.deadline.min(Instant::now()).saturating_duration_since(measured_from);
    let succeeded = records.iter().filter(|r| r.succeeded()).count();
    let failed = records.len() - succeeded;
    if let Some(path) = &args.log_file {
        std::fs::write(path, record::log_text(&records)).with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "finished in {:.2}s, {:.2} req/s\nrequests: {} total, {} started, {} done, {succeeded} succeeded, {failed} failed, \
         {failed} errored, 0 timeout",
        measured.as_secs_f64(),
        succeeded as f64 / measured.as_secs_f64().max(1e-9),
        records.len(),
        records.len(),
        records.len(),
    );
    anyhow::ensure!(succeeded > 0, "no request succeeded");
    Ok(())
}
