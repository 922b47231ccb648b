//! The client side of an upgraded HTTP/1.1 exchange: once the loop has written the `101 Switching
//! Protocols`, it hands the connection, with any bytes the client sent after its request head, to whoever
//! took the request's [`UpgradeSlot`] (the WebSocket tunnel).

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

use crate::listen::Prefixed;

pub trait ClientStream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> ClientStream for T {}

/// The client connection after its 101.
pub type UpgradedClient = Prefixed<Box<dyn ClientStream>>;

/// A request extension: where the upgraded connection will come from. Taken once.
#[derive(Clone)]
pub struct UpgradeSlot(Arc<Mutex<Option<oneshot::Receiver<UpgradedClient>>>>);

impl std::fmt::Debug for UpgradeSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UpgradeSlot")
    }
}

impl UpgradeSlot {
    /// The slot for a request, and the sender the loop keeps.
    pub fn new() -> (UpgradeSlot, oneshot::Sender<UpgradedClient>) {
        let (sender, receiver) = oneshot::channel();
        (UpgradeSlot(Arc::new(Mutex::new(Some(receiver)))), sender)
    }

    pub fn take(&self) -> Option<oneshot::Receiver<UpgradedClient>> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}
