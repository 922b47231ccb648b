//! Reading the `XDP_STATS` per-CPU array: each counter's per-CPU slots summed into one snapshot.

use aya::maps::{MapData, PerCpuArray};
use router_common::{
    maps::XDP_STATS,
    stats::{PacketCounter, STATS_IPV4, STATS_IPV6, STATS_OTHER, STATS_TCP, STATS_TOTAL, STATS_UNPARSED},
};

use super::XdpError;

/// Packet counts of the XDP front since it was attached, summed over CPUs. Layout and meaning of
/// each counter: `router_common::stats` (`total = ipv4 + ipv6 + other + unparsed`, `tcp <= ipv4 +
/// ipv6`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XdpCounters {
    /// Every packet the program saw.
    pub total: u64,
    /// IPv4 packets that parsed completely.
    pub ipv4: u64,
    /// IPv6 packets that parsed completely.
    pub ipv6: u64,
    /// IPv4/IPv6 packets with a complete TCP header.
    pub tcp: u64,
    /// Packets of another EtherType (ARP, VLAN-tagged, ...).
    pub other: u64,
    /// Packets cut short or malformed in a header the program read.
    pub unparsed: u64,
    /// Bytes of all packets (`total`'s byte count, Ethernet header included).
    pub total_bytes: u64,
}

/// The stats map, owned by the loader.
pub(crate) struct StatsMap(PerCpuArray<MapData, PacketCounter>);

impl StatsMap {
    pub(crate) fn new(map: aya::maps::Map) -> Result<StatsMap, XdpError> {
        PerCpuArray::try_from(map).map(StatsMap).map_err(|cause| XdpError::Map { name: XDP_STATS, cause })
    }

    /// Reads every counter once and sums its per-CPU slots.
    pub(crate) fn read(&self) -> Result<XdpCounters, XdpError> {
        let counter = |index: u32| -> Result<PacketCounter, XdpError> {
            let per_cpu = self.0.get(&index, 0).map_err(|cause| XdpError::Map { name: XDP_STATS, cause })?;
            Ok(sum(&per_cpu))
        };
        let total = counter(STATS_TOTAL)?;
        Ok(XdpCounters {
            total: total.packets,
            ipv4: counter(STATS_IPV4)?.packets,
            ipv6: counter(STATS_IPV6)?.packets,
            tcp: counter(STATS_TCP)?.packets,
            other: counter(STATS_OTHER)?.packets,
            unparsed: counter(STATS_UNPARSED)?.packets,
            total_bytes: total.bytes,
        })
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
}
