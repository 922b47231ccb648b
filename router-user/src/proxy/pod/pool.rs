//! Idle keep-alive connections to pods, by pod address: the most recently used is taken first; connections
//! the pod closed are dropped on the way out; a reaper closes those idle longer than the pool timeout.
//! Idle time is counted in reaper rounds, not read from the clock, to keep clock reads off the request path.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::conn::PodConn;

/// Idle connections kept per pod address at most (the rest are closed when they come back).
const MAX_IDLE_PER_POD: usize = 1024;
/// Reaper rounds per idle timeout: a connection goes after idling between `ROUNDS - 1` and `ROUNDS` rounds.
const ROUNDS: u64 = 4;

#[derive(Debug)]
pub struct PodPool {
    /// Each idle connection with the reaper round it was put back in.
    idle: Mutex<HashMap<SocketAddr, Vec<(PodConn, u64)>>>,
    round: AtomicU64,
}

impl PodPool {
    /// A pool whose idle connections live at most `idle_timeout`; a reaper task on the current runtime
    /// closes expired ones until the pool is dropped.
    pub fn new(idle_timeout: Duration) -> Arc<PodPool> {
        let pool = Arc::new(PodPool { idle: Mutex::new(HashMap::new()), round: AtomicU64::new(0) });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(reap(Arc::downgrade(&pool), idle_timeout / ROUNDS as u32));
        }
        pool
    }

    /// An open idle connection to `addr`, marked reused.
    pub fn take(&self, addr: SocketAddr) -> Option<PodConn> {
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let conns = idle.get_mut(&addr)?;
        while let Some((mut conn, _)) = conns.pop() {
            if conn.idle_and_open() {
                conn.reused = true;
                return Some(conn);
            }
        }
        None
    }

    /// Keeps `conn` for the next request to its pod.
    pub fn put(&self, conn: PodConn) {
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let conns = idle.entry(conn.addr).or_default();
        if conns.len() < MAX_IDLE_PER_POD {
            conns.push((conn, self.round.load(Ordering::Relaxed)));
        }
    }

    /// Starts a new round and closes expired and closed idle connections.
    fn sweep(&self) {
        let round = self.round.fetch_add(1, Ordering::Relaxed) + 1;
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for conns in idle.values_mut() {
            conns.retain(|(conn, since)| round - since < ROUNDS && conn.idle_and_open());
        }
        idle.retain(|_, conns| !conns.is_empty());
    }

    #[cfg(test)]
    pub fn idle_count(&self) -> usize {
        self.idle.lock().map(|idle| idle.values().map(Vec::len).sum()).unwrap_or_default()
    }
}

async fn reap(pool: Weak<PodPool>, every: Duration) {
    let mut ticks = tokio::time::interval(every.max(Duration::from_millis(100)));
    ticks.tick().await;
    loop {
        ticks.tick().await;
        match pool.upgrade() {
            Some(pool) => pool.sweep(),
            None => return,
        }
    }
}
