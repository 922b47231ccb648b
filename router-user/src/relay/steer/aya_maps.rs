//! [`SteerDatapath`] over the kernel's maps (`crate::xdp::SteerMaps`, handed over by the XDP front).

use std::sync::{Mutex, MutexGuard, PoisonError};

use aya::maps::{Array, HashMap, MapData, MapError};
use router_common::nat::FlowKey;
use router_common::steer::setup::{SteerAnswer, SteerPortKey, SteerSyn, STEER_ANSWERS, STEER_PORTS, STEER_SYNS};
use router_common::steer::{SteerFlow, STEER_FLOWS};

use super::datapath::{DatapathError, SteerDatapath};

/// The four hash maps of the steering datapath (the ring buffer goes to the event reader), and the
/// pinned fallback counts.
pub struct AyaMaps {
    pub ports: Mutex<HashMap<MapData, SteerPortKey, u8>>,
    pub syns: Mutex<HashMap<MapData, FlowKey, SteerSyn>>,
    pub answers: Mutex<HashMap<MapData, FlowKey, SteerAnswer>>,
    pub flows: Mutex<HashMap<MapData, FlowKey, SteerFlow>>,
    pub fallbacks: Mutex<Array<MapData, u64>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves the map as consistent as the kernel has it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn error(map: &'static str, cause: MapError) -> DatapathError {
    if let MapError::SyscallError(syscall) = &cause {
        if syscall.io_error.raw_os_error() == Some(libc::E2BIG) {
            return DatapathError::Full { map };
        }
    }
    DatapathError::Map { map, cause: cause.to_string() }
}

fn get<K: aya::Pod, V: aya::Pod>(
    map: &Mutex<HashMap<MapData, K, V>>,
    name: &'static str,
    key: &K,
) -> Result<Option<V>, DatapathError> {
    match lock(map).get(key, 0) {
        Ok(value) => Ok(Some(value)),
        Err(MapError::KeyNotFound) => Ok(None),
        Err(cause) => Err(error(name, cause)),
    }
}

fn remove<K: aya::Pod, V: aya::Pod>(
    map: &Mutex<HashMap<MapData, K, V>>,
    name: &'static str,
    key: &K,
) -> Result<(), DatapathError> {
    match lock(map).remove(key) {
        Ok(()) | Err(MapError::KeyNotFound) => Ok(()),
        Err(MapError::SyscallError(syscall)) if syscall.io_error.raw_os_error() == Some(libc::ENOENT) => Ok(()),
        Err(cause) => Err(error(name, cause)),
    }
}

impl SteerDatapath for AyaMaps {
    fn add_port(&self, port: SteerPortKey) -> Result<(), DatapathError> {
        lock(&self.ports).insert(port, 1, 0).map_err(|cause| error(STEER_PORTS, cause))
    }
    fn syn(&self, key: &FlowKey) -> Result<Option<SteerSyn>, DatapathError> {
        get(&self.syns, STEER_SYNS, key)
    }
    fn remove_syn(&self, key: &FlowKey) -> Result<(), DatapathError> {
        remove(&self.syns, STEER_SYNS, key)
    }
    fn answer(&self, key: &FlowKey) -> Result<Option<SteerAnswer>, DatapathError> {
        get(&self.answers, STEER_ANSWERS, key)
    }
    fn remove_answer(&self, key: &FlowKey) -> Result<(), DatapathError> {
        remove(&self.answers, STEER_ANSWERS, key)
    }
    fn flow(&self, key: &FlowKey) -> Result<Option<SteerFlow>, DatapathError> {
        get(&self.flows, STEER_FLOWS, key)
    }
    fn write_flow(&self, key: &FlowKey, flow: &SteerFlow) -> Result<(), DatapathError> {
        lock(&self.flows).insert(key, flow, 0).map_err(|cause| error(STEER_FLOWS, cause))
    }
    fn remove_flow(&self, key: &FlowKey) -> Result<(), DatapathError> {
        remove(&self.flows, STEER_FLOWS, key)
    }
    fn all_flows(&self) -> Result<Vec<(FlowKey, SteerFlow)>, DatapathError> {
        let flows = lock(&self.flows);
        let keys: Vec<FlowKey> = flows.keys().filter_map(Result::ok).collect();
        // An entry removed between the walk and the read is skipped.
        Ok(keys.into_iter().filter_map(|key| flows.get(&key, 0).ok().map(|flow| (key, flow))).collect())
    }
    fn count_fallback(&self, slot: u32) {
        // Only this process writes the array, under the lock: read, add, write back.
        let mut fallbacks = lock(&self.fallbacks);
        let count = fallbacks.get(&slot, 0).unwrap_or(0);
        if let Err(err) = fallbacks.set(slot, count.wrapping_add(1), 0) {
            tracing::debug!(slot, %err, "counting a steering fallback in STEER_FALLBACKS");
        }
    }
}
