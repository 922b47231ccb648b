//! Reading the `XDP_STATS` per-CPU array: each counter's per-CPU slots summed into one snapshot.

use std::path::Path;

use aya::maps::{Map, MapData, PerCpuArray};
use router_common::{
    maps::XDP_STATS,
    stats::{PacketCounter, STATS_INDICES, STATS_LEN, STATS_NAMES},
};

use super::XdpError;

const LEN: usize = STATS_LEN as usize;

/// Packet counts of the XDP front (and its TC egress half) since it was attached, summed over
/// CPUs, indexed by the `router_common::stats` constants (meaning and invariants there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XdpCounters {
    /// Packets per counter index.
    pub packets: [u64; LEN],
    /// Bytes per counter index.
    pub bytes: [u64; LEN],
}

impl XdpCounters {
    /// Packets of counter `index` (a `router_common::stats::STATS_*` constant); 0 when out of range.
    pub fn get(&self, index: u32) -> u64 {
        self.packets.get(index as usize).copied().unwrap_or(0)
    }

    /// `(name, packets, bytes)` for every counter, in index order.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64, u64)> + '_ {
        STATS_NAMES.iter().enumerate().map(|(i, name)| (*name, self.packets[i], self.bytes[i]))
    }

    /// Reads the counters of the front whose maps are pinned in `pin_dir` (for `/metrics`).
    pub fn read_pinned(pin_dir: &Path) -> Result<XdpCounters, XdpError> {
        StatsMap::open_pinned(pin_dir)?.read()
    }

    /// `self - earlier`, counter by counter (wrapping).
    pub fn since(&self, earlier: &XdpCounters) -> XdpCounters {
        let mut out = XdpCounters::default();
        for i in 0..LEN {
            out.packets[i] = self.packets[i].wrapping_sub(earlier.packets[i]);
            out.bytes[i] = self.bytes[i].wrapping_sub(earlier.bytes[i]);
        }
        out
    }
}

/// The stats map, owned by the loader (or opened from its pin by `router xdp status`).
pub(crate) struct StatsMap(PerCpuArray<MapData, PacketCounter>);

impl StatsMap {
    pub(crate) fn new(map: Map) -> Result<StatsMap, XdpError> {
        PerCpuArray::try_from(map).map(StatsMap).map_err(|cause| XdpError::Map { name: XDP_STATS, cause })
    }

    /// Opens `<pin_dir>/XDP_STATS`.
    pub(crate) fn open_pinned(pin_dir: &Path) -> Result<StatsMap, XdpError> {
        let data =
            MapData::from_pin(pin_dir.join(XDP_STATS)).map_err(|cause| XdpError::Map { name: XDP_STATS, cause })?;
        StatsMap::new(Map::from_map_data(data).map_err(|cause| XdpError::Map { name: XDP_STATS, cause })?)
    }

    /// Reads every counter once and sums its per-CPU slots.
    pub(crate) fn read(&self) -> Result<XdpCounters, XdpError> {
        let mut counters = XdpCounters::default();
        for index in STATS_INDICES {
            let per_cpu = self.0.get(&index, 0).map_err(|cause| XdpError::Map { name: XDP_STATS, cause })?;
            let total = sum(&per_cpu);
            counters.packets[index as usize] = total.packets;
            counters.bytes[index as usize] = total.bytes;
        }
        Ok(counters)
    }
}

/// Sums per-CPU slots (wrapping, like the kernel-side counters themselves).
fn sum(per_cpu: &[PacketCounter]) -> PacketCounter {
    per_cpu.iter().fold(PacketCounter::default(), |acc, slot| PacketCounter {
        packets: acc.packets.wrapping_add(slot.packets),
        bytes: acc.bytes.wrapping_add(slot.bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_every_cpu_slot() {
        let slots = [
            PacketCounter { packets: 2, bytes: 120 },
            PacketCounter::default(),
            PacketCounter { packets: 3, bytes: 200 },
        ];
        assert_eq!(sum(&slots), PacketCounter { packets: 5, bytes: 320 });
    }

    #[test]
    fn names_follow_the_index_layout() {
        let mut counters = XdpCounters::default();
        counters.packets[router_common::stats::STATS_NAT as usize] = 7;
        let nat = counters.named().find(|(name, _, _)| *name == "nat").expect("nat counter");
        assert_eq!(nat.1, 7);
        assert_eq!(counters.get(router_common::stats::STATS_NAT), 7);
        assert_eq!(counters.get(99), 0);
    }
}
