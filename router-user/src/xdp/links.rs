//! The front's attachments as pinned `bpf_link`s, so that the datapath (and every steered flow in
//! it) outlives the process: `<pin_dir>/link_xdp_<iface>` for `xdp_front` on each interface,
//! `<pin_dir>/link_tcx_<iface>` for `nat_reverse` on tc egress and `<pin_dir>/link_tci_<iface>` for
//! `steer_ingress` on tc ingress (the NIC and each pod-facing interface, when steering). A SIGKILLed router leaves them (and
//! the maps) in place; the next router on the same pin dir adopts them by replacing the program in
//! each link atomically (`bpf_link_update`), with no moment where the interface has no program.
//! Removing a link's pin (with no fd open on it) detaches it.
//!
//! Kernels without the link kind (XDP links need 5.9, tcx 6.6) attach over netlink as before: such an
//! attachment stays in the `Ebpf` and goes with the process.

use std::{io, path::Path};

use aya::{
    programs::{
        links::{FdLink, PinnedLink},
        tc::{SchedClassifierLink, SchedClassifierLinkId},
        xdp::{XdpLink, XdpLinkId},
        ProgramError, SchedClassifier, Xdp,
    },
    util::KernelVersion,
};

use super::XdpError;

/// Which program a link attaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkKind {
    /// `xdp_front` on an interface's XDP hook.
    Xdp,
    /// `nat_reverse` on an interface's tcx egress hook.
    TcxEgress,
    /// `steer_ingress` on an interface's tcx ingress hook.
    TcxIngress,
}

impl LinkKind {
    fn tag(self) -> &'static str {
        match self {
            LinkKind::Xdp => "xdp",
            LinkKind::TcxEgress => "tcx",
            LinkKind::TcxIngress => "tci",
        }
    }

    /// The program this kind of link runs.
    pub(crate) fn program(self) -> &'static str {
        match self {
            LinkKind::Xdp => super::object::PROGRAM,
            LinkKind::TcxEgress => super::object::TC_PROGRAM,
            LinkKind::TcxIngress => super::object::STEER_TC_PROGRAM,
        }
    }

    /// Whether this kernel attaches this kind through a `bpf_link` (which can be pinned).
    fn pinnable(self) -> bool {
        let needed = match self {
            LinkKind::Xdp => KernelVersion::new(5, 9, 0),
            LinkKind::TcxEgress | LinkKind::TcxIngress => KernelVersion::new(6, 6, 0),
        };
        KernelVersion::current().is_ok_and(|current| current >= needed)
    }
}

/// The pin file name of the `kind` link on `iface`. bpffs refuses names with a dot (VLAN interfaces
/// have one), so dots become underscores.
pub(crate) fn pin_name(kind: LinkKind, iface: &str) -> String {
    format!("link_{}_{}", kind.tag(), iface.replace('.', "_"))
}

/// Whether a pin file name is one of the front's links.
pub(crate) fn is_link_pin(name: &str) -> bool {
    ["link_xdp_", "link_tcx_", "link_tci_"].iter().any(|prefix| name.starts_with(prefix))
}

/// How the front holds one attachment.
#[derive(Debug)]
pub(crate) enum Held {
    /// Pinned: survives the process; detached by [`FrontLink::detach`] (removing the pin).
    Pinned(PinnedLink),
    /// A netlink attachment kept by the program in the `Ebpf`.
    Xdp(XdpLinkId),
    Tc(SchedClassifierLinkId),
}

/// One attachment of the front.
#[derive(Debug)]
pub(crate) struct FrontLink {
    pub iface: String,
    pub if_index: u32,
    pub kind: LinkKind,
    /// `"driver"`, `"skb"` (XDP), `"tcx egress"` or `"tcx ingress"`.
    pub mode: &'static str,
    pub held: Held,
    /// Whether the link was adopted from a previous router (its program replaced in place).
    pub adopted: bool,
}

/// Pins a fresh XDP attachment at `path` (or leaves it with the program on kernels without XDP links).
pub(crate) fn pin_xdp(program: &mut Xdp, id: XdpLinkId, path: &Path) -> Result<Held, XdpError> {
    if !LinkKind::Xdp.pinnable() {
        return Ok(Held::Xdp(id));
    }
    let link = program.take_link(id).map_err(|cause| XdpError::Program { name: super::object::PROGRAM, cause })?;
    let fd = FdLink::try_from(link).map_err(|cause| link_error(path, cause))?;
    pin(fd, path)
}

/// Pins a fresh tcx attachment of `kind` at `path` (or leaves it with the program on kernels before 6.6).
pub(crate) fn pin_tc(
    program: &mut SchedClassifier,
    kind: LinkKind,
    id: SchedClassifierLinkId,
    path: &Path,
) -> Result<Held, XdpError> {
    if !kind.pinnable() {
        return Ok(Held::Tc(id));
    }
    let link = program.take_link(id).map_err(|cause| XdpError::Program { name: kind.program(), cause })?;
    let fd = FdLink::try_from(link).map_err(|cause| link_error(path, cause))?;
    pin(fd, path)
}

fn pin(fd: FdLink, path: &Path) -> Result<Held, XdpError> {
    fd.pin(path).map(Held::Pinned).map_err(|cause| XdpError::Pin { path: path.to_path_buf(), cause })
}

/// The id of the program the link pinned at `path` runs, or `None` when there is no such pin.
pub(crate) fn pinned_program(path: &Path) -> Result<Option<u32>, XdpError> {
    match PinnedLink::from_pin(path) {
        Ok(link) => {
            let fd = FdLink::from(link);
            let info = fd.info().map_err(|cause| link_error(path, cause))?;
            Ok(Some(info.program_id()))
        }
        Err(aya::programs::links::LinkError::SyscallError(err)) if err.io_error.kind() == io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(cause) => Err(link_error(path, cause)),
    }
}

/// Replaces the program of the XDP link pinned at `path` with `program` (`bpf_link_update`).
pub(crate) fn adopt_xdp(program: &mut Xdp, path: &Path) -> Result<Held, XdpError> {
    let fd = FdLink::from(PinnedLink::from_pin(path).map_err(|cause| link_error(path, cause))?);
    let link = XdpLink::try_from(fd).map_err(|cause| link_error(path, cause))?;
    let id = program.attach_to_link(link).map_err(|cause| update_error(path, cause))?;
    // The program now owns an fd on the link; the pin keeps the link, so that fd can go.
    drop(program.take_link(id).map_err(|cause| update_error(path, cause))?);
    reopen(path)
}

/// Replaces the program of the tcx link pinned at `path` with `program`.
pub(crate) fn adopt_tc(program: &mut SchedClassifier, path: &Path) -> Result<Held, XdpError> {
    let fd = FdLink::from(PinnedLink::from_pin(path).map_err(|cause| link_error(path, cause))?);
    let link = SchedClassifierLink::try_from(fd).map_err(|cause| link_error(path, cause))?;
    let id = program.attach_to_link(link).map_err(|cause| update_error(path, cause))?;
    drop(program.take_link(id).map_err(|cause| update_error(path, cause))?);
    reopen(path)
}

fn reopen(path: &Path) -> Result<Held, XdpError> {
    PinnedLink::from_pin(path).map(Held::Pinned).map_err(|cause| link_error(path, cause))
}

/// Removes the pin at `path` (detaching the link once no fd holds it); a missing pin is fine.
pub(crate) fn remove_pin(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

fn link_error(path: &Path, cause: aya::programs::links::LinkError) -> XdpError {
    XdpError::Link { path: path.to_path_buf(), cause: cause.to_string() }
}

fn update_error(path: &Path, cause: ProgramError) -> XdpError {
    XdpError::Link { path: path.to_path_buf(), cause: cause.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_names_carry_kind_and_interface_without_dots() {
        assert_eq!(pin_name(LinkKind::Xdp, "eth0"), "link_xdp_eth0");
        assert_eq!(pin_name(LinkKind::TcxEgress, "eth0.100"), "link_tcx_eth0_100");
        assert_eq!(pin_name(LinkKind::TcxIngress, "veth-pa"), "link_tci_veth-pa");
        assert!(is_link_pin("link_xdp_veth-n"));
        assert!(is_link_pin("link_tci_veth-pa"));
        assert!(!is_link_pin("STEER_FLOWS"));
    }
}
