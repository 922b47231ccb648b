//! The XDP front's packet and byte counters (the pinned `XDP_STATS` map, summed over CPUs) as
//! `router_xdp_packets_total{counter}` and `router_xdp_bytes_total{counter}`, read at each scrape. The caller
//! reads the map (the `xdp` module owns it); nothing is published when no front is attached.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CounterLabels {
    counter: &'static str,
}

/// `(counter name, packets, bytes)` rows, as `xdp::XdpCounters::named` gives them.
pub type XdpRows = Vec<(&'static str, u64, u64)>;

pub fn scrape(rows: &[(&'static str, u64, u64)]) -> Registry {
    let mut registry = Registry::default();
    let packets = Family::<CounterLabels, Counter>::default();
    let bytes = Family::<CounterLabels, Counter>::default();
    for (counter, packet_count, byte_count) in rows {
        packets.get_or_create(&CounterLabels { counter }).inc_by(*packet_count);
        bytes.get_or_create(&CounterLabels { counter }).inc_by(*byte_count);
    }
    registry.register(
        "router_xdp_packets",
        "Packets seen by the XDP front, by counter (router xdp status names them)",
        packets,
    );
    registry.register("router_xdp_bytes", "Bytes of those packets, by counter", bytes);
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_counters_by_name() {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &scrape(&[("nat", 7, 700)])).expect("encode");
        assert!(
            text.contains("# TYPE router_xdp_packets counter\nrouter_xdp_packets_total{counter=\"nat\"} 7\n"),
            "{text}"
        );
        assert!(text.contains("router_xdp_bytes_total{counter=\"nat\"} 700\n"), "{text}");
    }
}
