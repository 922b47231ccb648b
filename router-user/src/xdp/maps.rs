//! Typed handles on the nodePort and conntrack maps (`NODE_ADDRS`, `NODE_PORTS`, `EP_SLOTS`,
//! `CONNTRACK`, `CONNTRACK_REV`), from the loader or from their pins, with fill levels.

use std::path::Path;

use aya::maps::{HashMap, IterableMap as _, Map, MapData};
use router_common::{
    maps::{CONNTRACK, CONNTRACK_REV, EP_SLOTS, NODE_ADDRS, NODE_PORTS},
    nat::{CtEntry, Endpoint, FlowKey, NodeAddr, NodeAddrKey, NodePort, NodePortKey, SlotKey},
};

use super::XdpError;

/// How full one map is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MapFill {
    pub name: &'static str,
    pub entries: u32,
    pub max_entries: u32,
}

/// The maps userspace writes (and whose conntrack entries it expires).
pub(crate) struct NatMaps {
    pub node_addrs: HashMap<MapData, NodeAddrKey, NodeAddr>,
    pub node_ports: HashMap<MapData, NodePortKey, NodePort>,
    pub slots: HashMap<MapData, SlotKey, Endpoint>,
    pub conntrack: HashMap<MapData, FlowKey, CtEntry>,
    pub conntrack_rev: HashMap<MapData, FlowKey, CtEntry>,
}

impl NatMaps {
    /// Builds the handles from maps `take` hands out by name.
    pub(crate) fn new(mut take: impl FnMut(&'static str) -> Result<Map, XdpError>) -> Result<NatMaps, XdpError> {
        Ok(NatMaps {
            node_addrs: typed(NODE_ADDRS, take(NODE_ADDRS)?)?,
            node_ports: typed(NODE_PORTS, take(NODE_PORTS)?)?,
            slots: typed(EP_SLOTS, take(EP_SLOTS)?)?,
            conntrack: typed(CONNTRACK, take(CONNTRACK)?)?,
            conntrack_rev: typed(CONNTRACK_REV, take(CONNTRACK_REV)?)?,
        })
    }

    /// Opens the maps pinned under `pin_dir`.
    pub(crate) fn open_pinned(pin_dir: &Path) -> Result<NatMaps, XdpError> {
        NatMaps::new(|name| open_pin(pin_dir, name))
    }

    /// Entries and capacity of each map, in `PINNED_MAPS` order (after `XDP_STATS`).
    pub(crate) fn fill(&self) -> Result<Vec<MapFill>, XdpError> {
        Ok(vec![
            fill(NODE_ADDRS, &self.node_addrs)?,
            fill(NODE_PORTS, &self.node_ports)?,
            fill(EP_SLOTS, &self.slots)?,
            fill(CONNTRACK, &self.conntrack)?,
            fill(CONNTRACK_REV, &self.conntrack_rev)?,
        ])
    }
}

/// Opens `<pin_dir>/<name>` as an untyped map.
pub(crate) fn open_pin(pin_dir: &Path, name: &'static str) -> Result<Map, XdpError> {
    let data = MapData::from_pin(pin_dir.join(name)).map_err(|cause| XdpError::Map { name, cause })?;
    Map::from_map_data(data).map_err(|cause| XdpError::Map { name, cause })
}

fn typed<K: aya::Pod, V: aya::Pod>(name: &'static str, map: Map) -> Result<HashMap<MapData, K, V>, XdpError> {
    HashMap::try_from(map).map_err(|cause| XdpError::Map { name, cause })
}

pub(crate) fn fill<K: aya::Pod, V: aya::Pod>(
    name: &'static str,
    map: &HashMap<MapData, K, V>,
) -> Result<MapFill, XdpError> {
    let max_entries = map.map().info().map_err(|cause| XdpError::Map { name, cause })?.max_entries();
    let entries = map.keys().filter(Result::is_ok).count();
    Ok(MapFill { name, entries: u32::try_from(entries).unwrap_or(u32::MAX), max_entries })
}
