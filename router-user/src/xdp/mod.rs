//! The XDP front's loader: attaches `xdp_front` (built from `router-ebpf`, embedded in this binary)
//! to one interface, pins its maps under a bpffs directory, reads its counters, and detaches and
//! unpins on drop.
//!
//! Pins: `<pin_dir>/XDP_STATS` (the per-CPU counter array, see `router_common::stats`), created
//! after the program is attached, so its presence means "attached and counting". The XDP link
//! itself is not pinned: if the router dies, the kernel detaches the program with the process.
//! Pins left by such a router are recognised as stale (no live program uses the map) and removed
//! on the next attach.

mod bpffs;
mod counters;
mod error;
mod loader;
mod netlink;
mod object;
#[cfg(test)]
mod packet_tests;

use std::path::PathBuf;

use aya::{programs::xdp::XdpLinkId, Ebpf};

pub use counters::XdpCounters;
pub use error::XdpError;

/// How to attach the program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum XdpMode {
    /// Native (driver) mode, falling back to generic (skb) mode when the driver has no XDP support.
    #[default]
    Auto,
    /// Native (driver) mode only.
    Driver,
    /// Generic (skb) mode: runs after the kernel allocated the skb; works on every interface.
    Skb,
}

/// Where and how to attach.
#[derive(Clone, Debug)]
pub struct XdpOptions {
    /// Interface name in the router's network namespace.
    pub iface: String,
    pub mode: XdpMode,
    /// A directory on bpffs (normally under `/sys/fs/bpf`) for this router's pins; created when
    /// missing and removed on drop if this router created it.
    pub pin_dir: PathBuf,
}

/// The attached XDP front. Dropping it detaches the program and removes the pins (and the pin
/// dir, if it created it).
///
/// Field order is drop order: after `drop` detaches, the stats map fd closes, `pins` unpins, and the
/// `Ebpf` (the program) goes last.
pub struct XdpFront {
    iface: String,
    if_index: u32,
    prog_id: u32,
    mode: &'static str,
    link: Option<XdpLinkId>,
    stats: counters::StatsMap,
    pins: bpffs::PinDir,
    /// Owns the loaded program; dropped last.
    ebpf: Ebpf,
}

impl XdpFront {
    /// Mounts bpffs at `/sys/fs/bpf` if needed, creates the pin dir, refuses if the interface
    /// already has an XDP program or the pins belong to a live router, then loads, attaches and
    /// pins.
    pub fn attach(opts: &XdpOptions) -> Result<XdpFront, XdpError> {
        let loader::Attached { ebpf, link, if_index, prog_id, mode, stats, pins } = loader::attach(opts)?;
        tracing::info!(
            iface = %opts.iface,
            mode,
            prog_id,
            pin_dir = %pins.path().display(),
            "XDP front attached"
        );
        Ok(XdpFront { iface: opts.iface.clone(), if_index, prog_id, mode, link: Some(link), stats, pins, ebpf })
    }

    /// The mode the program runs in: `"driver"` or `"skb"`.
    pub fn attached_mode(&self) -> &'static str {
        self.mode
    }

    /// The counters since attach, summed over CPUs.
    pub fn counters(&self) -> Result<XdpCounters, XdpError> {
        self.stats.read()
    }
}

impl Drop for XdpFront {
    fn drop(&mut self) {
        if let Some(link) = self.link.take() {
            if let Err(err) = loader::detach(&mut self.ebpf, link, self.if_index, self.prog_id) {
                tracing::warn!(iface = %self.iface, %err, "detaching the XDP front");
            }
        }
        tracing::info!(iface = %self.iface, mode = self.mode, "XDP front detached; unpinning");
    }
}

impl std::fmt::Debug for XdpFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpFront")
            .field("iface", &self.iface)
            .field("mode", &self.mode)
            .field("prog_id", &self.prog_id)
            .field("pin_dir", &self.pins.path())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<XdpFront>();
    }
}
