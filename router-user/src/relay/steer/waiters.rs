//! Connections waiting for their pod's answer to leg B's SYN, woken by the reader of the
//! `STEER_EVENTS` ring buffer (the datapath pushes the key of each `STEER_ANSWERS` entry it writes).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use aya::maps::{MapData, RingBuf};
use router_common::nat::FlowKey;
use tokio::sync::oneshot;
use tracing::warn;

/// Pod-side keys (P -> Q) with the connection waiting on each.
#[derive(Default)]
pub struct AnswerWaiters {
    waiting: Mutex<HashMap<FlowKey, oneshot::Sender<()>>>,
}

impl AnswerWaiters {
    /// Registers a wait for `key` (before the SYN goes out, so no answer is missed).
    pub fn wait(&self, key: FlowKey) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).insert(key, tx);
        rx
    }

    /// Wakes the connection waiting for `key`, if any.
    pub fn wake(&self, key: &FlowKey) {
        let waiter = self.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
        if let Some(tx) = waiter {
            let _ = tx.send(());
        }
    }

    /// Forgets the wait for `key` (the connection gave up).
    pub fn cancel(&self, key: &FlowKey) {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
    }
}

/// Reads `STEER_EVENTS` until the runtime stops, waking the connection named by each record.
pub async fn read_events(events: RingBuf<MapData>, waiters: std::sync::Arc<AnswerWaiters>) {
    let mut ring = match super::sys::watch_ring(events) {
        Ok(ring) => ring,
        Err(error) => {
            warn!(%error, "cannot watch STEER_EVENTS; steered connections will wait out their timeout");
            return;
        }
    };
    loop {
        let mut guard = match ring.readable_mut().await {
            Ok(guard) => guard,
            Err(error) => {
                warn!(%error, "watching STEER_EVENTS failed");
                return;
            }
        };
        let ring = guard.get_inner_mut();
        while let Some(record) = ring.next() {
            if let Some(key) = parse_key(&record) {
                waiters.wake(&key);
            }
        }
        guard.clear_ready();
    }
}

/// A [`FlowKey`] from a record's bytes; `None` for a record of another size.
fn parse_key(bytes: &[u8]) -> Option<FlowKey> {
    if bytes.len() < size_of::<FlowKey>() {
        return None;
    }
    let src_addr = bytes[0..16].try_into().ok()?;
    let dst_addr = bytes[16..32].try_into().ok()?;
    Some(FlowKey {
        src_addr,
        dst_addr,
        src_port: u16::from_ne_bytes([bytes[32], bytes[33]]),
        dst_port: u16::from_ne_bytes([bytes[34], bytes[35]]),
        family: bytes[36],
        protocol: bytes[37],
        _pad: [0; 2],
    })
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;

    #[test]
    fn records_parse_as_the_flow_key_layout() {
        let key =
            FlowKey::tcp(IpAddr::V4(Ipv4Addr::new(10, 1, 0, 2)), 8443, IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1)), 61_000);
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&key.src_addr);
        bytes.extend_from_slice(&key.dst_addr);
        bytes.extend_from_slice(&key.src_port.to_ne_bytes());
        bytes.extend_from_slice(&key.dst_port.to_ne_bytes());
        bytes.extend_from_slice(&[key.family, key.protocol, 0, 0]);
        assert_eq!(parse_key(&bytes), Some(key));
        assert_eq!(parse_key(&bytes[..39]), None, "a short record is ignored");
    }

    #[tokio::test]
    async fn wake_reaches_only_the_registered_key() {
        let waiters = AnswerWaiters::default();
        let key = FlowKey::tcp(IpAddr::V4(Ipv4Addr::LOCALHOST), 1, IpAddr::V4(Ipv4Addr::LOCALHOST), 2);
        let other = key.reversed();
        let mut rx = waiters.wait(key);
        waiters.wake(&other);
        assert!(rx.try_recv().is_err(), "another key's event does not wake it");
        waiters.wake(&key);
        assert!(rx.await.is_ok(), "its own event does");
    }
}
