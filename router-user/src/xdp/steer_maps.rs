//! The steering maps handed to userspace (stub by h11 to compile against; h10's datapath replaces this
//! file with the same struct and the real `XdpFront::take_steer_maps`).

use router_common::nat::FlowKey;
use router_common::steer::setup::{SteerAnswer, SteerPortKey, SteerSyn};
use router_common::steer::SteerFlow;

/// The maps the passthrough steering setup reads and writes, and the ring buffer of pod answers.
pub struct SteerMaps {
    pub ports: aya::maps::HashMap<aya::maps::MapData, SteerPortKey, u8>,
    pub syns: aya::maps::HashMap<aya::maps::MapData, FlowKey, SteerSyn>,
    pub answers: aya::maps::HashMap<aya::maps::MapData, FlowKey, SteerAnswer>,
    pub flows: aya::maps::HashMap<aya::maps::MapData, FlowKey, SteerFlow>,
    pub events: aya::maps::RingBuf<aya::maps::MapData>,
}

impl super::XdpFront {
    /// The steering maps, once (stub: the datapath that fills them is not in this build).
    pub fn take_steer_maps(&mut self) -> Option<SteerMaps> {
        None
    }
}
