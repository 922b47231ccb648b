//! Consistent hashing of the client address (`balance source` with `hash-type consistent`): each endpoint
//! owns points on a ring derived from its server id, so adding or removing one endpoint only moves the
//! clients that hashed to it.

use std::net::IpAddr;

/// Ring points of the heaviest endpoint; lighter ones get proportionally fewer (at least one).
const MAX_POINTS: u64 = 160;

/// Endpoints a ring can tell apart: their index fills a point's low bits.
const INDEX_BITS: u32 = 20;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;

#[derive(Debug)]
pub struct HashRing {
    /// Sorted points, each the ring position in its high bits and its endpoint's index in the low
    /// `INDEX_BITS` (8 bytes a point: a 4-endpoint ring is 5 KB).
    points: Box<[u64]>,
}

impl HashRing {
    /// Endpoints past the `INDEX_BITS` limit (a million) get no points.
    pub fn new(endpoints: &[(&str, u32)]) -> HashRing {
        let max_weight = endpoints.iter().map(|(_, w)| *w).max().unwrap_or(0).max(1);
        let count = |weight: u32| (u64::from(weight) * MAX_POINTS / u64::from(max_weight)).max(1);
        let indexed = endpoints.iter().enumerate().take(1 << INDEX_BITS).filter(|(_, (_, weight))| *weight > 0);
        let total: u64 = indexed.clone().map(|(_, (_, weight))| count(*weight)).sum();
        let mut points = Vec::with_capacity(total as usize);
        for (index, (id, weight)) in indexed {
            for replica in 0..count(*weight) {
                points.push((fnv1a(id.as_bytes(), replica) & !INDEX_MASK) | index as u64);
            }
        }
        points.sort_unstable();
        HashRing { points: points.into_boxed_slice() }
    }

    /// The endpoint owning the first point at or after `hash` that is eligible.
    pub fn pick(&self, hash: u64, eligible: &dyn Fn(usize) -> bool) -> Option<usize> {
        if self.points.is_empty() {
            return None;
        }
        let start = self.points.partition_point(|point| *point & !INDEX_MASK < hash & !INDEX_MASK);
        let len = self.points.len();
        (0..len).map(|offset| (self.points[(start + offset) % len] & INDEX_MASK) as usize).find(|&i| eligible(i))
    }
}

/// The ring position of a client address.
pub fn flow_hash(client: &IpAddr) -> u64 {
    match client {
        IpAddr::V4(v4) => fnv1a(&v4.octets(), 0),
        IpAddr::V6(v6) => fnv1a(&v6.octets(), 0),
    }
}

/// FNV-1a over `bytes` and `salt`, finished with a 64-bit mixer so nearby inputs spread over the ring.
fn fnv1a(bytes: &[u8], salt: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes.iter().copied().chain(salt.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clients() -> Vec<IpAddr> {
        (0..2000u32).map(|i| IpAddr::from([10, (i >> 16) as u8, (i >> 8) as u8, i as u8])).collect()
    }

    #[test]
    fn clients_stay_put_when_an_unrelated_endpoint_changes() {
        let three = HashRing::new(&[("a", 1), ("b", 1), ("c", 1)]);
        let four = HashRing::new(&[("a", 1), ("b", 1), ("c", 1), ("d", 1)]);
        let all = |_: usize| true;
        let mut moved_elsewhere = 0;
        for client in clients() {
            let before = three.pick(flow_hash(&client), &all).expect("pick");
            let after = four.pick(flow_hash(&client), &all).expect("pick");
            if after != before && after != 3 {
                moved_elsewhere += 1;
            }
        }
        assert_eq!(moved_elsewhere, 0, "only clients that now hash to the new endpoint may move");
    }

    #[test]
    fn spread_is_roughly_even_and_skips_ineligible() {
        let ring = HashRing::new(&[("a", 1), ("b", 1), ("c", 1)]);
        let mut counts = [0usize; 3];
        for client in clients() {
            counts[ring.pick(flow_hash(&client), &|_| true).expect("pick")] += 1;
        }
        assert!(counts.iter().all(|&n| n > 400), "{counts:?}");
        for client in clients().into_iter().take(100) {
            assert_ne!(ring.pick(flow_hash(&client), &|i| i != 1), Some(1));
        }
    }

    #[test]
    fn points_follow_weights_and_a_weightless_endpoint_owns_none() {
        let ring = HashRing::new(&[("a", 2), ("b", 1), ("c", 0)]);
        let owned = |index: u64| ring.points.iter().filter(|point| *point & INDEX_MASK == index).count();
        assert_eq!((owned(0), owned(1), owned(2)), (160, 80, 0));
        assert!(ring.points.windows(2).all(|pair| pair[0] <= pair[1]), "points are sorted");
    }
}
