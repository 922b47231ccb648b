//! The checked endpoints of the live table by pod address, kept across tables: a new table's shards that the
//! previous one shared are skipped, so a route change costs the checker the endpoints of the shards it
//! touched, not every endpoint of the table (400,000 at 100,000 routes of four pods).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;

use crate::table::{Backend, Endpoint, RouteTable, Shard};

/// One endpoint of a route: its backend and its index there.
pub type Member = (Arc<Backend>, usize);

/// One shard's checked endpoints (those of routes with two or more) by address.
struct ShardTargets {
    /// The shard they were read from (held, so that a later shard is never mistaken for it).
    shard: Arc<Shard>,
    by_addr: HashMap<SocketAddr, Vec<Member>>,
}

#[derive(Default)]
pub struct Targets {
    shards: Vec<Option<ShardTargets>>,
    /// Which shards have endpoints of each address.
    addrs: HashMap<SocketAddr, HashSet<usize>>,
}

impl Targets {
    /// Follows `table`; returns the addresses that gained endpoints (to schedule).
    pub fn follow(&mut self, table: &RouteTable) -> Vec<SocketAddr> {
        let shards = table.shards();
        self.shards.resize_with(shards.len().max(self.shards.len()), || None);
        let mut arrived = Vec::new();
        for (at, slot) in self.shards.iter_mut().enumerate() {
            let shard = shards.get(at);
            if let (Some(seen), Some(shard)) = (slot.as_ref(), shard) {
                if Arc::ptr_eq(&seen.shard, shard) {
                    continue;
                }
            }
            let before = slot.take().map(|seen| seen.by_addr).unwrap_or_default();
            let now = shard.map(|shard| ShardTargets { shard: shard.clone(), by_addr: checked(shard) });
            for addr in before.keys().filter(|addr| !now.as_ref().is_some_and(|now| now.by_addr.contains_key(*addr))) {
                if let Some(holders) = self.addrs.get_mut(addr) {
                    holders.remove(&at);
                    if holders.is_empty() {
                        self.addrs.remove(addr);
                    }
                }
            }
            for addr in now.iter().flat_map(|now| now.by_addr.keys()) {
                let holders = self.addrs.entry(*addr).or_default();
                if holders.is_empty() {
                    arrived.push(*addr);
                }
                holders.insert(at);
            }
            *slot = now;
        }
        arrived
    }

    /// Every endpoint checked through `addr`.
    pub fn members<'t>(&'t self, addr: &SocketAddr) -> impl Iterator<Item = &'t Member> + 't {
        let addr = *addr;
        let holders = self.addrs.get(&addr).into_iter().flatten();
        holders.filter_map(move |&at| self.shards[at].as_ref()?.by_addr.get(&addr)).flatten()
    }

    pub fn is_checked(&self, addr: &SocketAddr) -> bool {
        self.addrs.contains_key(addr)
    }

    /// Addresses checked.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.addrs.len()
    }
}

/// The endpoint of a member.
pub fn endpoint(member: &Member) -> &Endpoint {
    &member.0.endpoints[member.1]
}

fn checked(shard: &Shard) -> HashMap<SocketAddr, Vec<Member>> {
    let mut by_addr: HashMap<SocketAddr, Vec<Member>> = HashMap::new();
    for backend in shard.http.backends().filter(|backend| backend.endpoints.len() >= 2) {
        for (index, endpoint) in backend.endpoints.iter().enumerate() {
            by_addr.entry(endpoint.addr).or_default().push((backend.clone(), index));
        }
    }
    by_addr
}
