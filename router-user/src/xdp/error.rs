//! Errors of the XDP loader, each with the interface or path it concerns.

use std::{io, path::PathBuf};

/// Why attaching the XDP front (or reading its counters) failed.
#[derive(Debug, thiserror::Error)]
pub enum XdpError {
    #[error("mounting bpffs at {path}: {source}")]
    MountBpffs {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("pin dir {path} is not on a bpf filesystem (use a directory under /sys/fs/bpf)")]
    NotBpffs { path: PathBuf },
    #[error("pin dir {path}: {source}")]
    PinDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("another router is live with pins in {pin_dir} (BPF program {prog_id} ({prog_name}) uses them); refusing to attach to {iface}: stop it or pick another pin dir")]
    PinsInUse {
        iface: String,
        pin_dir: PathBuf,
        prog_id: u32,
        prog_name: String,
    },
    #[error("pin {path} exists but is not a BPF map this loader can reuse or clear: {reason}")]
    PinOccupied { path: PathBuf, reason: String },
    #[error("interface {iface}: not found in this network namespace")]
    UnknownInterface { iface: String },
    #[error("interface {iface}: querying its XDP programs over netlink: {source}")]
    Query {
        iface: String,
        #[source]
        source: io::Error,
    },
    #[error("another router (or XDP program) is attached to {iface}: BPF program {prog_id} ({prog_name}) in {mode} mode; refusing to replace it")]
    AlreadyAttached {
        iface: String,
        prog_id: u32,
        prog_name: String,
        mode: &'static str,
    },
    #[error("loading the embedded eBPF object: {0}")]
    Object(#[source] aya::EbpfError),
    #[error("the embedded eBPF object has no {kind} named {name}")]
    Missing {
        kind: &'static str,
        name: &'static str,
    },
    #[error("program {name}: {source}")]
    Program {
        name: &'static str,
        #[source]
        source: aya::programs::ProgramError,
    },
    #[error("interface {iface}: attaching in {mode} mode: {source}")]
    Attach {
        iface: String,
        mode: &'static str,
        #[source]
        source: aya::programs::ProgramError,
    },
    #[error("pinning map at {path}: {source}")]
    Pin {
        path: PathBuf,
        #[source]
        source: aya::pin::PinError,
    },
    #[error("map {name}: {source}")]
    Map {
        name: &'static str,
        #[source]
        source: aya::maps::MapError,
    },
}
