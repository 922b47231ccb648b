//! The `router` binary: parse settings, attach the XDP front when asked, serve until SIGTERM or Ctrl-C.

use anyhow::Context;
use clap::Parser;
use router::config::Settings;
use router::xdp::{XdpFront, XdpOptions};
use tokio::signal::unix::{signal, SignalKind};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .init();
    let settings = Settings::parse();

    let xdp = match &settings.xdp_iface {
        Some(iface) => {
            let options =
                XdpOptions { iface: iface.clone(), mode: settings.xdp_mode, pin_dir: settings.bpf_pin_dir.clone() };
            Some(XdpFront::attach(&options).with_context(|| format!("attaching the XDP front to {iface}"))?)
        }
        None => None,
    };

    let router = router::server::start(settings).await?;
    let mut terminate = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM received"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupt received"),
    }
    router.shutdown().await;
    // Detaches the program and removes its pins.
    drop(xdp);
    Ok(())
}
