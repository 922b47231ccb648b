//! Maglev lookup tables (Eisenbud et al., NSDI 2016): each of a nodePort's `RING_SIZE` slots
//! names one local endpoint, every endpoint gets an almost equal share, and adding or removing
//! one endpoint moves few slots of the others. Computed here; the kernel only reads a slot.
//!
//! Each endpoint's preference list is `offset + j * skip (mod size)`, with `offset` and `skip`
//! from two FNV-1a hashes of its address bytes, port (big endian) and family; endpoints take
//! turns claiming their next free preferred slot until the table is full. The result depends only
//! on the set of endpoints (callers pass them sorted), so every router computes the same table.

use router_common::nat::Endpoint;

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// Second basis for the `skip` hash (any value other than the first).
const SKIP_BASIS: u64 = 0x84222325_cbf29ce4;

fn fnv1a(basis: u64, endpoint: &Endpoint) -> u64 {
    let port = endpoint.port.to_be_bytes();
    endpoint
        .addr
        .iter()
        .chain(port.iter())
        .chain(std::iter::once(&endpoint.family))
        .fold(basis, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(FNV_PRIME))
}

/// The table: entry `slot` is an index into `endpoints`. `size` must be prime; empty when there
/// are no endpoints.
pub(crate) fn table(endpoints: &[Endpoint], size: u32) -> Vec<usize> {
    if endpoints.is_empty() || size == 0 {
        return Vec::new();
    }
    let m = u64::from(size);
    let prefs: Vec<(u64, u64)> =
        endpoints.iter().map(|e| (fnv1a(OFFSET_BASIS, e) % m, fnv1a(SKIP_BASIS, e) % (m - 1).max(1) + 1)).collect();
    let mut next = vec![0u64; endpoints.len()];
    let mut table = vec![usize::MAX; size as usize];
    let mut filled = 0usize;
    'fill: loop {
        for (i, &(offset, skip)) in prefs.iter().enumerate() {
            let mut slot = ((offset + next[i] * skip) % m) as usize;
            while table[slot] != usize::MAX {
                next[i] += 1;
                slot = ((offset + next[i] * skip) % m) as usize;
            }
            table[slot] = i;
            next[i] += 1;
            filled += 1;
            if filled == table.len() {
                break 'fill;
            }
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;

    fn endpoints(n: u8) -> Vec<Endpoint> {
        (1..=n).map(|i| Endpoint::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, i)), 80)).collect()
    }

    #[test]
    fn every_slot_is_filled_and_shares_are_even() {
        for n in 1..=7u8 {
            let eps = endpoints(n);
            let t = table(&eps, 257);
            assert_eq!(t.len(), 257);
            let mut share = vec![0usize; eps.len()];
            for &i in &t {
                share[i] += 1;
            }
            let (min, max) = (share.iter().min().copied(), share.iter().max().copied());
            assert!(max.zip(min).is_some_and(|(max, min)| max - min <= 1), "n={n}: {share:?}");
        }
    }

    #[test]
    fn removing_one_endpoint_keeps_most_slots_of_the_others() {
        let four = endpoints(4);
        let three = &four[..3];
        let before = table(&four, 257);
        let after = table(three, 257);
        let kept = before.iter().zip(&after).filter(|(b, a)| **b < 3 && b == a).count();
        let owned = before.iter().filter(|b| **b < 3).count();
        assert!(kept * 10 >= owned * 8, "only {kept} of {owned} slots kept");
    }

    #[test]
    fn no_endpoints_no_table() {
        assert!(table(&[], 257).is_empty());
    }
}
