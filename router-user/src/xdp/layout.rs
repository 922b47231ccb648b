//! The map layout a pinned front was built with, so that a restarted router adopts only maps its own
//! object reads the same way: a fingerprint (FNV-1a) over each pinned map's name and the sizes of
//! its key and value as `router_common` defines them, the conntrack size, and [`LAYOUT_REVISION`].
//! It is kept in the small pinned array `<pin_dir>/LAYOUT` (one `u64`, written by the loader at a
//! fresh attach). A router whose fingerprint differs from the pinned one (a new build that changed
//! a map), or that finds no `LAYOUT` pin, starts clean instead of adopting.
//!
//! What the fingerprint cannot see: a field moved inside a struct without changing its size.
//! Whoever does that bumps [`LAYOUT_REVISION`] (router-common's offset asserts flag such a change).

use std::path::Path;

use aya::maps::{Array, Map, MapData};
use router_common::{
    maps::{
        CONNTRACK, CONNTRACK_REV, EP_SLOTS, NODE_ADDRS, NODE_PORTS, STEER_ANSWERS, STEER_EVENTS, STEER_FLOWS,
        STEER_PORTS, STEER_SYNS, XDP_STATS,
    },
    nat::{CtEntry, Endpoint, FlowKey, NodeAddr, NodeAddrKey, NodePort, NodePortKey, SlotKey},
    stats::PacketCounter,
    steer::{
        setup::{SteerAnswer, SteerPortKey, SteerSyn},
        SteerFlow,
    },
};

use super::XdpError;

/// Pin name of the fingerprint map.
pub(crate) const LAYOUT: &str = "LAYOUT";

/// Bumped by hand when a map's meaning changes without any key or value size changing.
/// 2: `XDP_STATS` grew from 21 to 25 counters (the TC steering hand-off), a `max_entries` change.
pub(crate) const LAYOUT_REVISION: u64 = 2;

/// `(map, key size, value size)` of every pinned map of the object (the ring buffer has neither).
fn map_shapes() -> [(&'static str, usize, usize); 11] {
    [
        (XDP_STATS, size_of::<u32>(), size_of::<PacketCounter>()),
        (NODE_ADDRS, size_of::<NodeAddrKey>(), size_of::<NodeAddr>()),
        (NODE_PORTS, size_of::<NodePortKey>(), size_of::<NodePort>()),
        (EP_SLOTS, size_of::<SlotKey>(), size_of::<Endpoint>()),
        (CONNTRACK, size_of::<FlowKey>(), size_of::<CtEntry>()),
        (CONNTRACK_REV, size_of::<FlowKey>(), size_of::<CtEntry>()),
        (STEER_PORTS, size_of::<SteerPortKey>(), size_of::<u8>()),
        (STEER_SYNS, size_of::<FlowKey>(), size_of::<SteerSyn>()),
        (STEER_ANSWERS, size_of::<FlowKey>(), size_of::<SteerAnswer>()),
        (STEER_FLOWS, size_of::<FlowKey>(), size_of::<SteerFlow>()),
        (STEER_EVENTS, 0, size_of::<FlowKey>()),
    ]
}

/// The fingerprint of this build's layout with conntrack maps of `conntrack_size` entries.
pub(crate) fn fingerprint(conntrack_size: u32) -> u64 {
    let mut hash = Fnv::default();
    hash.write(&LAYOUT_REVISION.to_le_bytes());
    hash.write(&conntrack_size.to_le_bytes());
    for (name, key, value) in map_shapes() {
        hash.write(name.as_bytes());
        hash.write(&(key as u64).to_le_bytes());
        hash.write(&(value as u64).to_le_bytes());
    }
    hash.0
}

/// Creates `<pin_dir>/LAYOUT` holding `fingerprint`.
pub(crate) fn pin(pin_dir: &Path, fingerprint: u64) -> Result<(), XdpError> {
    let map_err = |cause| XdpError::Map { name: LAYOUT, cause };
    let mut array = Array::<MapData, u64>::create(1, 0).map_err(map_err)?;
    array.set(0, fingerprint, 0).map_err(map_err)?;
    let path = pin_dir.join(LAYOUT);
    array.pin(&path).map_err(|cause| XdpError::Pin { path, cause })
}

/// The fingerprint pinned under `pin_dir`, if any.
pub(crate) fn pinned(pin_dir: &Path) -> Option<u64> {
    let data = MapData::from_pin(pin_dir.join(LAYOUT)).ok()?;
    let array = Array::<MapData, u64>::try_from(Map::from_map_data(data).ok()?).ok()?;
    array.get(&0, 0).ok()
}

/// FNV-1a, 64 bits: stable across builds and Rust versions (unlike `std`'s hasher).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_follows_the_conntrack_size_and_is_stable() {
        assert_eq!(fingerprint(1024), fingerprint(1024));
        assert_ne!(fingerprint(1024), fingerprint(2048), "max_entries of a pinned map cannot change");
    }

    #[test]
    fn every_pinned_map_has_a_shape() {
        for name in router_common::maps::PINNED_MAPS {
            assert!(map_shapes().iter().any(|(n, _, _)| n == name), "{name} has no shape in the fingerprint");
        }
    }

    #[test]
    fn fnv_matches_the_reference_values() {
        let mut empty = Fnv::default();
        empty.write(b"");
        assert_eq!(empty.0, 0xcbf2_9ce4_8422_2325);
        let mut a = Fnv::default();
        a.write(b"a");
        assert_eq!(a.0, 0xaf63_dc4c_8601_ec8c);
    }
}
