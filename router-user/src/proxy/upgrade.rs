//! An upgraded exchange (WebSocket, `101 Switching Protocols`): both sides' upgrades completed, the pod's
//! bytes already read past its response head put back in front, then the two streams handed to the byte
//! tunnel (`relay::tunnel`).

use std::time::Duration;

use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tracing::debug;

use tokio::sync::oneshot;

use super::h1::{UpgradeSlot, UpgradedClient};
use super::pod::PodUpgrade;
use crate::listen::Prefixed;
use crate::relay::{tunnel, FinTimeouts};

/// The pod side of an upgraded exchange: from hyper's client, or the router's own HTTP/1.1 client.
pub enum PodSide {
    Hyper(OnUpgrade),
    Direct(PodUpgrade),
}

/// The client side of an upgraded exchange: from the router's own HTTP/1.1 loop, or hyper's server.
pub enum ClientSide {
    Own(oneshot::Receiver<UpgradedClient>),
    Hyper(OnUpgrade),
}

impl ClientSide {
    /// Where the client connection of an upgrade `request` will come from.
    pub fn of<B>(request: &mut http::Request<B>) -> ClientSide {
        match request.extensions().get::<UpgradeSlot>().and_then(UpgradeSlot::take) {
            Some(receiver) => ClientSide::Own(receiver),
            None => ClientSide::Hyper(hyper::upgrade::on(request)),
        }
    }
}

/// Waits for both upgrades, then tunnels bytes between them until both close or `idle_limit` passes idle
/// (after a side's FIN: the other side's `fin` timeout).
pub async fn tunnel_upgraded(client: ClientSide, pod: PodSide, idle_limit: Duration, fin: Option<FinTimeouts>) {
    match client {
        ClientSide::Own(receiver) => match receiver.await {
            Ok(client) => tunnel_to_pod(client, pod, idle_limit, fin).await,
            Err(_) => debug!("client upgrade did not complete"),
        },
        ClientSide::Hyper(upgrade) => match upgrade.await {
            Ok(client) => tunnel_to_pod(TokioIo::new(client), pod, idle_limit, fin).await,
            Err(error) => debug!(%error, "client upgrade did not complete"),
        },
    }
}

async fn tunnel_to_pod<C>(client: C, pod: PodSide, idle_limit: Duration, fin: Option<FinTimeouts>)
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
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
