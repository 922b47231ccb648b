//! Errors of the XDP loader, each with the interface or path it concerns.
//!
//! Each message carries its whole cause chain (`context: cause: cause's cause`), so logging the
//! error with `%err` or printing it once tells the full story; `source()` is therefore not set,
//! which keeps chain printers (anyhow's `{:?}`) from repeating it.

use std::{error::Error, fmt, io, path::PathBuf};

/// Why attaching the XDP front (or reading its counters) failed.
#[derive(Debug, thiserror::Error)]
pub enum XdpError {
    #[error("mounting bpffs at {path}: {cause}")]
    MountBpffs { path: PathBuf, cause: io::Error },
    #[error("pin dir {path} is not on a bpf filesystem (use a directory under /sys/fs/bpf)")]
    NotBpffs { path: PathBuf },
    #[error("pin dir {path}: {cause}")]
    PinDir { path: PathBuf, cause: io::Error },
    #[error("another router is live with pins in {pin_dir} (BPF program {prog_id} ({prog_name}) uses them); refusing to attach to {iface}: stop it or pick another pin dir")]
    PinsInUse { iface: String, pin_dir: PathBuf, prog_id: u32, prog_name: String },
    #[error("pin {path} exists but is not a BPF map this loader can reuse or clear: {reason}")]
    PinOccupied { path: PathBuf, reason: String },
    #[error("interface {iface}: not found in this network namespace")]
    UnknownInterface { iface: String },
    #[error("interface {iface}: querying its XDP programs over netlink: {cause}")]
    Query { iface: String, cause: io::Error },
    #[error("another router (or XDP program) is attached to {iface}: BPF program {prog_id} ({prog_name}) in {mode} mode; refusing to replace it")]
    AlreadyAttached { iface: String, prog_id: u32, prog_name: String, mode: &'static str },
    #[error("loading the embedded eBPF object: {}", Chain(.0))]
    Object(aya::EbpfError),
    #[error("this router was built without its eBPF object (AYA_BUILD_SKIP=1)")]
    NotBuilt,
    #[error("the embedded eBPF object has no {kind} named {name}")]
    Missing { kind: &'static str, name: &'static str },
    #[error("program {name}: {}", Chain(.cause))]
    Program { name: &'static str, cause: aya::programs::ProgramError },
    #[error("interface {iface}: attaching in {mode} mode: {}", Chain(.cause))]
    Attach { iface: String, mode: &'static str, cause: aya::programs::ProgramError },
    #[error("pinning map at {path}: {}", Chain(.cause))]
    Pin { path: PathBuf, cause: aya::pin::PinError },
    #[error("pinned link {path}: {cause}")]
    Link { path: PathBuf, cause: String },
    #[error("map {name}: {}", Chain(.cause))]
    Map { name: &'static str, cause: aya::maps::MapError },
    #[error("reading the eBPF programs' debug records: {}", Chain(.cause))]
    Log { cause: aya_log::Error },
    #[error("starting the reader of the eBPF programs' debug records: {cause}")]
    LogThread { cause: io::Error },
}

/// Displays an error followed by each of its sources: `a: b: c`.
struct Chain<'a>(&'a dyn Error);

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(err) = next {
            write!(f, ": {err}")?;
            next = err.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_carries_the_whole_cause_chain() {
        let err = XdpError::Attach {
            iface: "eth0".to_owned(),
            mode: "driver",
            cause: aya::programs::ProgramError::SyscallError(aya::sys::SyscallError {
                call: "bpf_link_create",
                io_error: io::Error::from_raw_os_error(libc::EOPNOTSUPP),
            }),
        };
        let message = err.to_string();
        assert!(
            message.starts_with("interface eth0: attaching in driver mode: `bpf_link_create` failed: "),
            "{message}"
        );
        assert!(message.contains("not supported"), "{message}");
        assert!(err.source().is_none());
    }
}
