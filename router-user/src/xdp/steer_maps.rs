//! Typed handles on the steering maps (`STEER_PORTS`, `STEER_SYNS`, `STEER_ANSWERS`, `STEER_FLOWS`,
//! `STEER_EVENTS`, and userspace's own `STEER_FALLBACKS`), handed to the passthrough setup in userspace once
//! ([`super::XdpFront::take_steer_maps`]). Layouts and who writes what:
//! `router_common::steer::setup` and `router_common::steer::flow`.

use std::path::Path;

use aya::maps::{Array, HashMap, Map, MapData, RingBuf};
use router_common::{
    nat::FlowKey,
    steer::{
        setup::{SteerAnswer, SteerPortKey, SteerSyn, STEER_ANSWERS, STEER_EVENTS, STEER_PORTS, STEER_SYNS},
        SteerFlow, STEER_FLOWS,
    },
};

use super::{
    maps::{fill, open_pin},
    steer_fallbacks::{STEER_FALLBACKS, STEER_FALLBACK_SLOTS},
    MapFill, XdpError,
};

/// The steering maps of the loaded (and attached) `xdp_front`.
pub struct SteerMaps {
    /// The router's TLS ports whose client SYNs `xdp_front` records (value 1).
    pub ports: HashMap<MapData, SteerPortKey, u8>,
    /// Client SYNs by the 5-tuple R sees (LRU; userspace removes what it read).
    pub syns: HashMap<MapData, FlowKey, SteerSyn>,
    /// The pods' answers to leg B's SYN, keyed P -> Q.
    pub answers: HashMap<MapData, FlowKey, SteerAnswer>,
    /// Steered and connecting flows, one entry per direction.
    pub flows: HashMap<MapData, FlowKey, SteerFlow>,
    /// Keys of the answers just recorded.
    pub events: RingBuf<MapData>,
    /// Connections left on the userspace relay, per reason (`super::steer_fallbacks`).
    pub fallbacks: Array<MapData, u64>,
}

impl SteerMaps {
    /// Builds the handles from maps `take` hands out by name.
    pub(crate) fn new(mut take: impl FnMut(&'static str) -> Result<Map, XdpError>) -> Result<SteerMaps, XdpError> {
        let events = take(STEER_EVENTS)?;
        Ok(SteerMaps {
            ports: typed(STEER_PORTS, take(STEER_PORTS)?)?,
            syns: typed(STEER_SYNS, take(STEER_SYNS)?)?,
            answers: typed(STEER_ANSWERS, take(STEER_ANSWERS)?)?,
            flows: typed(STEER_FLOWS, take(STEER_FLOWS)?)?,
            events: RingBuf::try_from(events).map_err(|cause| XdpError::Map { name: STEER_EVENTS, cause })?,
            fallbacks: match take(STEER_FALLBACKS) {
                Ok(map) => Array::try_from(map).map_err(|cause| XdpError::Map { name: STEER_FALLBACKS, cause })?,
                // Not pinned (the object loaded alone, or pins from a router before the array):
                // counts go to a private array.
                Err(_) => Array::create(STEER_FALLBACK_SLOTS, 0)
                    .map_err(|cause| XdpError::Map { name: STEER_FALLBACKS, cause })?,
            },
        })
    }

    /// Opens the maps pinned under `pin_dir`.
    pub(crate) fn open_pinned(pin_dir: &Path) -> Result<SteerMaps, XdpError> {
        SteerMaps::new(|name| open_pin(pin_dir, name))
    }

    /// Entries and capacity of each hash map (the ring buffer has no entries to count).
    pub(crate) fn fill(&self) -> Result<Vec<MapFill>, XdpError> {
        Ok(vec![
            fill(STEER_PORTS, &self.ports)?,
            fill(STEER_SYNS, &self.syns)?,
            fill(STEER_ANSWERS, &self.answers)?,
            fill(STEER_FLOWS, &self.flows)?,
        ])
    }
}

fn typed<K: aya::Pod, V: aya::Pod>(name: &'static str, map: Map) -> Result<HashMap<MapData, K, V>, XdpError> {
    HashMap::try_from(map).map_err(|cause| XdpError::Map { name, cause })
}
