//! The `router` binary: parse settings, start ROUTER_THREADS worker threads, attach the XDP front when asked,
//! serve until SIGTERM or Ctrl-C.

#![forbid(unsafe_code)]

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use router::config::Settings;
use router::handover::{Inherited, Offering};
use router::server::{start_from, StartFrom, SteerFront};
use router::xdp::{SyncOptions, XdpFront, XdpOptions};
use tokio::signal::unix::{signal, SignalKind};
use tracing_subscriber::EnvFilter;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .init();
    if std::env::args_os().nth(1).is_some_and(|arg| arg == "xdp") {
        return router::xdp::status::cli(std::env::args_os().skip(1)).context("router xdp");
    }
    let settings = Settings::parse();
    // HAProxy's nbthread: the worker threads that serve every listener.
    let threads = settings.limits.worker_threads()?;
    // One thread serves everything on tokio's current-thread scheduler (as `nbthread 1` does): no wake-ups
    // across threads and no run queues made for stealing.
    let mut builder = match threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        _ => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(threads);
            builder
        }
    };
    let runtime = builder.thread_name("router-worker").enable_all().build().context("starting the worker threads")?;
    runtime.block_on(serve(settings))
}

async fn serve(settings: Settings) -> anyhow::Result<()> {
    // An upgrade: the running router's listeners (and XDP front) are taken over, not bound anew.
    let handover_socket = settings.handover_socket.clone();
    let mut inherited = match &handover_socket {
        Some(path) => router::handover::take(path)?,
        None => None,
    };
    if let Some(inherited) = &inherited {
        tracing::info!(from_pid = inherited.from_pid(), "taking over from the running router");
    }
    let mut xdp = match &settings.xdp_iface {
        Some(iface) => {
            let options = XdpOptions {
                iface: iface.clone(),
                mode: settings.xdp_mode,
                pin_dir: settings.bpf_pin_dir.clone(),
                conntrack_size: settings.xdp_conntrack_size,
                steer: settings.steer.xdp_steer_passthrough,
                pod_interfaces: settings.xdp_pod_interfaces.clone(),
                handed_over_by: inherited.as_ref().map(Inherited::from_pid),
                debug_log: settings.xdp_debug_log,
            };
            Some(XdpFront::attach(&options).with_context(|| format!("attaching the XDP front to {iface}"))?)
        }
        None => None,
    };

    let sync_options = SyncOptions {
        node_addresses: settings.xdp_node_addresses.clone(),
        idle_timeout: settings.xdp_conntrack_idle_timeout,
        closing_timeout: settings.xdp_conntrack_closing_timeout,
    };
    let steer_maps = match (settings.steer.xdp_steer_passthrough, xdp.as_mut()) {
        (true, Some(front)) => {
            let maps = front.take_steer_maps();
            if maps.is_none() {
                tracing::warn!("the XDP front has no steering maps; passthrough stays on the userspace relay");
            }
            maps
        }
        (true, None) => {
            tracing::info!("no XDP front (--xdp-iface): passthrough stays on the userspace relay");
            None
        }
        (false, _) => None,
    };
    let xdp = xdp.map(Arc::new);
    // Steering attaches `steer_ingress` to the pod-facing interfaces through the front as it finds them.
    let steer_front = steer_maps.zip(xdp.clone()).map(|(maps, front)| SteerFront { maps, pod_interfaces: front });
    let mut router = start_from(settings, StartFrom { steer_front, inherited: inherited.as_mut() }).await?;
    if let Some(inherited) = inherited {
        // Serving on every listener now: the old router may stop accepting and drain.
        match tokio::task::spawn_blocking(move || inherited.confirm()).await? {
            Ok(()) => tracing::info!("the previous router released its listeners and is draining"),
            Err(error) => tracing::warn!(%error, "the previous router did not confirm the hand-over"),
        }
    }
    let mut offering = match &handover_socket {
        Some(path) => Some(
            router::handover::offer(path, router.take_offered_listeners())
                .with_context(|| format!("offering the listeners at {}", path.display()))?,
        ),
        None => None,
    };
    // The XDP front follows the router's own Service: nodePorts, local endpoints, node addresses.
    let sync = match (&xdp, &router.local_service) {
        (Some(front), Some(service)) => {
            Some(tokio::spawn(router::xdp::sync::run(front.clone(), service.clone(), sync_options)))
        }
        _ => None,
    };
    let mut terminate = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let upgraded = tokio::select! {
        _ = terminate.recv() => { tracing::info!("SIGTERM received"); false }
        _ = tokio::signal::ctrl_c() => { tracing::info!("interrupt received"); false }
        () = taken(offering.as_mut()) => true,
    };
    if upgraded {
        // The next router adopted the XDP front too: its links and maps stay.
        if let Some(front) = &xdp {
            front.leave_in_place();
        }
        router.drain_after_handover().await;
        // Exiting by itself would have a supervisor (the kubelet: the old pod still exists until the DaemonSet
        // controller deletes it) start this old version again, which would take the listeners back.
        tracing::info!("handed over and drained; exiting on SIGTERM");
        tokio::select! {
            _ = terminate.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    } else {
        if let Some(offering) = offering {
            offering.withdraw();
        }
        router.shutdown().await;
    }
    if let Some(sync) = sync {
        sync.abort();
        let _ = sync.await;
    }
    // Detaches the programs and removes their pins (the sync task held the only other reference), unless
    // handed over.
    drop(xdp);
    Ok(())
}

/// Resolves once a new router took the listeners on offer; never without an offer, or when offering failed.
async fn taken(offering: Option<&mut Offering>) {
    let handed_over = match offering {
        Some(offering) => (&mut offering.taken).await.is_ok(),
        None => false,
    };
    if !handed_over {
        std::future::pending::<()>().await;
    }
}
