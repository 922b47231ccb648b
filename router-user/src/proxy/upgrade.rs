//! An upgraded exchange (WebSocket, `101 Switching Protocols`): both sides' upgrades completed, the pod's
//! bytes already read past its response head put back in front, then the two streams handed to the byte
//! tunnel (`relay::tunnel`).

use std::time::Duration;

use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tracing::debug;

use super::pod::PodUpgrade;
use crate::listen::Prefixed;
use crate::relay::{tunnel, FinTimeouts};

/// The pod side of an upgraded exchange: from hyper's client, or the router's own HTTP/1.1 client.
pub enum PodSide {
    Hyper(OnUpgrade),
    Direct(PodUpgrade),
}

/// Waits for both upgrades, then tunnels bytes between them until both close or `idle_limit` passes idle
/// (after a side's FIN: the other side's `fin` timeout).
pub async fn tunnel_upgraded(client: OnUpgrade, pod: PodSide, idle_limit: Duration, fin: Option<FinTimeouts>) {
    let client = match client.await {
        Ok(client) => TokioIo::new(client),
        Err(error) => {
            debug!(%error, "client upgrade did not complete");
            return;
        }
    };
    match pod {
        PodSide::Hyper(pod) => match pod.await {
            Ok(pod) => tunnel(client, TokioIo::new(pod), idle_limit, fin).await,
            Err(error) => debug!(%error, "pod upgrade did not complete"),
        },
        PodSide::Direct(upgrade) => match upgrade.take() {
            Some((stream, leftover)) => tunnel(client, Prefixed::new(leftover, stream), idle_limit, fin).await,
            None => debug!("pod connection of the upgrade already taken"),
        },
    }
}
