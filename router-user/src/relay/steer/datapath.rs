//! The maps of the XDP datapath as the steering setup sees them, behind a trait so that the setup is
//! tested against an in-memory fake ([`fake`]) and runs against the kernel's maps (`aya_maps`).

use router_common::nat::FlowKey;
use router_common::steer::setup::{SteerAnswer, SteerPortKey, SteerSyn};
use router_common::steer::SteerFlow;

/// A map operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum DatapathError {
    /// The map has no room for another entry.
    #[error("{map} is full")]
    Full { map: &'static str },
    #[error("{map}: {cause}")]
    Map { map: &'static str, cause: String },
}

/// Reads and writes of `STEER_PORTS`, `STEER_SYNS`, `STEER_ANSWERS` and `STEER_FLOWS`. Removing a
/// missing entry is not an error.
pub trait SteerDatapath: Send + Sync {
    /// Records `port` as one of the router's TLS ports, whose client SYNs the datapath keeps.
    fn add_port(&self, port: SteerPortKey) -> Result<(), DatapathError>;
    fn syn(&self, key: &FlowKey) -> Result<Option<SteerSyn>, DatapathError>;
    fn remove_syn(&self, key: &FlowKey) -> Result<(), DatapathError>;
    fn answer(&self, key: &FlowKey) -> Result<Option<SteerAnswer>, DatapathError>;
    fn remove_answer(&self, key: &FlowKey) -> Result<(), DatapathError>;
    fn flow(&self, key: &FlowKey) -> Result<Option<SteerFlow>, DatapathError>;
    /// Writes (creates or replaces) the entry of `key`.
    fn write_flow(&self, key: &FlowKey, flow: &SteerFlow) -> Result<(), DatapathError>;
    fn remove_flow(&self, key: &FlowKey) -> Result<(), DatapathError>;
    /// Every `STEER_FLOWS` entry (for adopting the flows a previous router left).
    fn all_flows(&self) -> Result<Vec<(FlowKey, SteerFlow)>, DatapathError>;
    /// Counts one connection left on the userspace relay in the pinned per-reason array (slot
    /// `Fallback::slot`); a datapath without one counts nothing.
    fn count_fallback(&self, _slot: u32) {}
}

/// An in-memory datapath for the setup's unit tests: maps as hash maps with a flow-map capacity.
#[cfg(test)]
pub mod fake {
    use std::collections::{HashMap, HashSet};
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    pub struct FakeMaps {
        pub ports: HashSet<SteerPortKey>,
        pub syns: HashMap<FlowKey, SteerSyn>,
        pub answers: HashMap<FlowKey, SteerAnswer>,
        pub flows: HashMap<FlowKey, SteerFlow>,
        /// `STEER_FLOWS` refuses new keys beyond this many entries.
        pub flow_capacity: usize,
    }

    #[derive(Default)]
    pub struct FakeDatapath {
        pub maps: Mutex<FakeMaps>,
    }

    impl FakeDatapath {
        pub fn with_capacity(flow_capacity: usize) -> FakeDatapath {
            FakeDatapath { maps: Mutex::new(FakeMaps { flow_capacity, ..FakeMaps::default() }) }
        }

        pub fn lock(&self) -> std::sync::MutexGuard<'_, FakeMaps> {
            self.maps.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    }

    impl SteerDatapath for FakeDatapath {
        fn add_port(&self, port: SteerPortKey) -> Result<(), DatapathError> {
            self.lock().ports.insert(port);
            Ok(())
        }
        fn syn(&self, key: &FlowKey) -> Result<Option<SteerSyn>, DatapathError> {
            Ok(self.lock().syns.get(key).copied())
        }
        fn remove_syn(&self, key: &FlowKey) -> Result<(), DatapathError> {
            self.lock().syns.remove(key);
            Ok(())
        }
        fn answer(&self, key: &FlowKey) -> Result<Option<SteerAnswer>, DatapathError> {
            Ok(self.lock().answers.get(key).copied())
        }
        fn remove_answer(&self, key: &FlowKey) -> Result<(), DatapathError> {
            self.lock().answers.remove(key);
            Ok(())
        }
        fn flow(&self, key: &FlowKey) -> Result<Option<SteerFlow>, DatapathError> {
            Ok(self.lock().flows.get(key).copied())
        }
        fn write_flow(&self, key: &FlowKey, flow: &SteerFlow) -> Result<(), DatapathError> {
            let mut maps = self.lock();
            if !maps.flows.contains_key(key) && maps.flows.len() >= maps.flow_capacity {
                return Err(DatapathError::Full { map: "STEER_FLOWS" });
            }
            maps.flows.insert(*key, *flow);
            Ok(())
        }
        fn remove_flow(&self, key: &FlowKey) -> Result<(), DatapathError> {
            self.lock().flows.remove(key);
            Ok(())
        }
        fn all_flows(&self) -> Result<Vec<(FlowKey, SteerFlow)>, DatapathError> {
            Ok(self.lock().flows.iter().map(|(key, flow)| (*key, *flow)).collect())
        }
    }
}
