//! Choosing an endpoint for a request: the HAProxy algorithms the OpenShift router offers (smooth weighted
//! round robin, least connections, weighted random with two draws, consistent source hash) over endpoints
//! whose weight and liveness the table carries, and the retries over other endpoints when one fails.

mod endpoint_health;
mod random;
mod retry;
mod round_robin;
mod source_hash;
mod weights;

use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

pub use endpoint_health::{now_ms, EndpointHealth};
pub use random::next_random;
pub use retry::{AttemptError, Attempts, EndpointTrial, GaveUp, PickedEndpoint, MAX_ATTEMPTS};
pub use round_robin::RoundRobin;
pub use source_hash::{flow_hash, HashRing};
pub use weights::{endpoint_weights, service_weight};

use crate::policy::BalanceAlgorithm;

/// What the balancer needs to know about an endpoint.
pub trait Candidate {
    fn weight(&self) -> u32;
    /// Requests in flight to it.
    fn active(&self) -> u32;
    fn id(&self) -> &str;
}

/// Per-backend balancing state, built with the table.
#[derive(Debug)]
pub enum Balancer {
    RoundRobin(RoundRobin),
    LeastConn(RoundRobin),
    Random,
    /// Built on the backend's first pick: most routes of a large table (passthrough ones balance by source by
    /// default) may never see a connection, and a ring is a few kilobytes.
    Source(OnceLock<HashRing>),
}

impl Balancer {
    pub fn new<C: Candidate>(algorithm: BalanceAlgorithm, endpoints: &[C]) -> Balancer {
        let weights: Vec<u32> = endpoints.iter().map(Candidate::weight).collect();
        match algorithm {
            BalanceAlgorithm::RoundRobin => Balancer::RoundRobin(RoundRobin::new(&weights)),
            BalanceAlgorithm::LeastConn => Balancer::LeastConn(RoundRobin::new(&weights)),
            BalanceAlgorithm::Random => Balancer::Random,
            BalanceAlgorithm::Source => Balancer::Source(OnceLock::new()),
        }
    }

    /// An endpoint with weight > 0 for which `usable` holds, or `None`.
    pub fn pick<C: Candidate>(&self, endpoints: &[C], client: IpAddr, usable: &dyn Fn(usize) -> bool) -> Option<usize> {
        let eligible = |i: usize| endpoints[i].weight() > 0 && usable(i);
        match self {
            Balancer::RoundRobin(rr) => rr.pick(&eligible),
            Balancer::LeastConn(rr) => least_connections(endpoints, rr, &eligible),
            Balancer::Random => random::pick_two(endpoints, &eligible),
            Balancer::Source(ring) => {
                let ring = ring.get_or_init(|| {
                    let ids: Vec<(&str, u32)> = endpoints.iter().map(|e| (e.id(), e.weight())).collect();
                    HashRing::new(&ids)
                });
                ring.pick(flow_hash(&client), &eligible)
            }
        }
    }
}

/// Fewest requests in flight relative to weight; ties broken in round-robin order.
fn least_connections<C: Candidate>(
    endpoints: &[C],
    rr: &RoundRobin,
    eligible: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    let start = rr.pick(eligible)?;
    let count = endpoints.len();
    let load = |i: usize| (u64::from(endpoints[i].active()) << 16) / u64::from(endpoints[i].weight().max(1));
    (0..count).map(|offset| (start + offset) % count).filter(|&i| eligible(i)).min_by_key(|&i| load(i))
}

/// A counter of requests in flight, decremented when the guard drops.
#[derive(Debug, Default)]
pub struct InFlight(AtomicU32);

impl InFlight {
    pub fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    /// Counts one more request; pair with [`InFlight::leave`].
    pub fn enter(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub fn leave(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
