//! `<pin_dir>/STEER_FALLBACKS`: how many passthrough connections stayed on the userspace relay, per
//! reason (index = the reason's position in `SteerFallback::ALL`, xdp/steer_fallback.rs). A plain array created by
//! the loader (no eBPF program uses it), pinned beside the datapath's maps so that `router xdp
//! status` reads the counts from a running router and from the pins a SIGKILLed one left, and a
//! router that adopts the pins counts on from there (`/metrics` starts from zero in each process).

use aya::maps::{Array, MapData};

use super::XdpError;

/// Pin name of the array.
pub const STEER_FALLBACKS: &str = "STEER_FALLBACKS";
/// Slots in the array: room for reasons added later without a layout change.
pub const STEER_FALLBACK_SLOTS: u32 = 32;

/// Creates the array and pins it at `<pin_dir>/STEER_FALLBACKS`.
pub(crate) fn pin(pin_dir: &std::path::Path) -> Result<(), XdpError> {
    let array = Array::<MapData, u64>::create(STEER_FALLBACK_SLOTS, 0)
        .map_err(|cause| XdpError::Map { name: STEER_FALLBACKS, cause })?;
    let path = pin_dir.join(STEER_FALLBACKS);
    array.pin(&path).map_err(|cause| XdpError::Pin { path, cause })
}

/// The counts, slot by slot.
pub(crate) fn read(array: &Array<MapData, u64>) -> Result<Vec<u64>, XdpError> {
    (0..STEER_FALLBACK_SLOTS)
        .map(|index| array.get(&index, 0).map_err(|cause| XdpError::Map { name: STEER_FALLBACKS, cause }))
        .collect()
}
