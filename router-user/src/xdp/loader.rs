//! Loading and attaching the XDP front: refuse when the interface (or a pod-facing one) already has
//! an XDP program or the pin dir belongs to a live router, then load the embedded object
//! (conntrack sized from the options), attach `xdp_front` in the requested mode to the interface
//! and to each pod-facing interface, `nat_reverse` on the interface's TC egress, and pin every map
//! as `<pin_dir>/<MAP_NAME>`.

#![allow(unsafe_code)]

use std::{
    ffi::CString,
    time::{Duration, Instant},
};

use aya::{
    maps::{Map, MapData},
    programs::{self, tc::SchedClassifierLinkId, xdp::XdpLinkId, ProgramError, SchedClassifier, TcAttachType, Xdp},
    Ebpf, EbpfLoader,
};
use router_common::maps::{CONNTRACK, CONNTRACK_REV, PINNED_MAPS, XDP_STATS};

use super::{
    bpffs::{self, PinDir},
    counters::StatsMap,
    maps::NatMaps,
    netlink,
    object::{OBJECT, PROGRAM, TC_PROGRAM},
    steer_maps::SteerMaps,
    XdpError, XdpMode, XdpOptions,
};

/// How long `detach` waits for the kernel to drop the program from the interface, and how often it
/// looks.
const DETACH_WAIT: Duration = Duration::from_secs(3);
const DETACH_POLL: Duration = Duration::from_millis(10);

/// `xdp_front` on one pod-facing interface (`--xdp-pod-interfaces`).
pub(crate) struct PodAttachment {
    pub iface: String,
    pub if_index: u32,
    pub link: XdpLinkId,
    /// `"driver"` or `"skb"`.
    pub mode: &'static str,
}

/// Everything an attached front owns, handed to `XdpFront`. Dropping it detaches (with the `Ebpf`)
/// and unpins (with the `PinDir`).
pub(crate) struct Attached {
    pub ebpf: Ebpf,
    pub link: XdpLinkId,
    pub if_index: u32,
    /// Kernel id of the loaded `xdp_front`.
    pub prog_id: u32,
    pub mode: &'static str,
    /// The `nat_reverse` TC egress link.
    pub tc_link: SchedClassifierLinkId,
    /// `xdp_front` on each pod-facing interface.
    pub pod_links: Vec<PodAttachment>,
    pub stats: StatsMap,
    pub nat: NatMaps,
    pub steer: SteerMaps,
    pub pins: PinDir,
}

pub(crate) fn attach(opts: &XdpOptions) -> Result<Attached, XdpError> {
    let iface = opts.iface.as_str();
    let if_index = if_index(iface)?;
    refuse_if_attached(iface, if_index)?;
    let mut pod_ifaces = Vec::new();
    for pod_iface in pod_interfaces(opts) {
        let pod_index = self::if_index(pod_iface)?;
        refuse_if_attached(pod_iface, pod_index)?;
        pod_ifaces.push((pod_iface, pod_index));
    }

    bpffs::ensure_mounted()?;
    let pins = PinDir::create(&opts.pin_dir)?;
    load_and_attach(opts, if_index, &pod_ifaces, pins)
}

/// The pod-facing interfaces to attach to: `opts.pod_interfaces` in order, without repeats,
/// empty names, or the main interface (`xdp_front` runs there already).
pub(crate) fn pod_interfaces(opts: &XdpOptions) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for name in &opts.pod_interfaces {
        let name = name.trim();
        if !name.is_empty() && name != opts.iface && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// On error, the `Ebpf` (with any link) is dropped first, detaching, then `pins` removes whatever
/// was pinned.
fn load_and_attach(
    opts: &XdpOptions,
    if_index: u32,
    pod_ifaces: &[(&str, u32)],
    mut pins: PinDir,
) -> Result<Attached, XdpError> {
    let iface = opts.iface.as_str();
    clear_stale_pins(iface, &pins)?;

    let mut ebpf = load(opts.conntrack_size)?;
    let program = xdp_program(&mut ebpf)?;
    let prog_id = program.info().map_err(|cause| XdpError::Program { name: PROGRAM, cause })?.id();
    let (link, mode) = attach_in_mode(program, iface, if_index, opts.mode)?;
    // The same program (and so the same maps) on each pod-facing interface, in the same --xdp-mode.
    let mut pod_links = Vec::new();
    for &(pod_iface, pod_index) in pod_ifaces {
        let (link, mode) = attach_in_mode(program, pod_iface, pod_index, opts.mode)?;
        pod_links.push(PodAttachment { iface: pod_iface.to_owned(), if_index: pod_index, link, mode });
    }
    let tc_link = tc_program(&mut ebpf)?.attach(iface, TcAttachType::Egress).map_err(|cause| XdpError::Attach {
        iface: iface.to_owned(),
        mode: "tc egress",
        cause,
    })?;

    // Pin after attaching: a pin under the pin dir means "attached and counting".
    let mut maps: Vec<(&'static str, Map)> = Vec::new();
    for &name in PINNED_MAPS {
        let map = ebpf.take_map(name).ok_or(XdpError::Missing { kind: "map", name })?;
        let path = pins.pin_path(name);
        map.pin(&path).map_err(|cause| XdpError::Pin { path: path.clone(), cause })?;
        pins.record_pin(path);
        maps.push((name, map));
    }
    let mut take = |name: &'static str| {
        let at = maps.iter().position(|(n, _)| *n == name).ok_or(XdpError::Missing { kind: "map", name })?;
        Ok(maps.swap_remove(at).1)
    };
    let stats = StatsMap::new(take(XDP_STATS)?)?;
    let nat = NatMaps::new(&mut take)?;
    let steer = SteerMaps::new(&mut take)?;
    Ok(Attached { ebpf, link, if_index, prog_id, mode, tc_link, pod_links, stats, nat, steer, pins })
}

/// Loads the embedded object with both conntrack maps sized `conntrack_size`, and both programs
/// into the kernel (the verifier runs here); attaches nothing.
pub(crate) fn load(conntrack_size: u32) -> Result<Ebpf, XdpError> {
    let mut ebpf = EbpfLoader::new()
        .map_max_entries(CONNTRACK, conntrack_size)
        .map_max_entries(CONNTRACK_REV, conntrack_size)
        .load(OBJECT)
        .map_err(XdpError::Object)?;
    xdp_program(&mut ebpf)?.load().map_err(|cause| XdpError::Program { name: PROGRAM, cause })?;
    tc_program(&mut ebpf)?.load().map_err(|cause| XdpError::Program { name: TC_PROGRAM, cause })?;
    Ok(ebpf)
}

pub(crate) fn tc_program(ebpf: &mut Ebpf) -> Result<&mut SchedClassifier, XdpError> {
    let program = ebpf.program_mut(TC_PROGRAM).ok_or(XdpError::Missing { kind: "program", name: TC_PROGRAM })?;
    program.try_into().map_err(|cause| XdpError::Program { name: TC_PROGRAM, cause })
}

pub(crate) fn xdp_program(ebpf: &mut Ebpf) -> Result<&mut Xdp, XdpError> {
    let program = ebpf.program_mut(PROGRAM).ok_or(XdpError::Missing { kind: "program", name: PROGRAM })?;
    program.try_into().map_err(|cause| XdpError::Program { name: PROGRAM, cause })
}

/// A concrete attach mode (what `XdpMode::Auto` resolves to).
#[derive(Clone, Copy)]
enum AttachMode {
    Driver,
    Skb,
}

impl AttachMode {
    const fn name(self) -> &'static str {
        match self {
            AttachMode::Driver => "driver",
            AttachMode::Skb => "skb",
        }
    }

    const fn flags(self) -> programs::XdpMode {
        match self {
            AttachMode::Driver => programs::XdpMode::Driver,
            AttachMode::Skb => programs::XdpMode::Skb,
        }
    }
}

/// Attaches in `mode`; `Auto` tries driver (native) mode and falls back to generic (skb) mode when
/// the driver refuses. Returns the link and the name of the mode it attached in.
fn attach_in_mode(
    program: &mut Xdp,
    iface: &str,
    if_index: u32,
    mode: XdpMode,
) -> Result<(XdpLinkId, &'static str), XdpError> {
    let attach = |program: &mut Xdp, mode: AttachMode| {
        program
            .attach_to_if_index(if_index, mode.flags())
            .map(|link| (link, mode.name()))
            .map_err(|cause| attach_error(iface, if_index, mode.name(), cause))
    };
    match mode {
        XdpMode::Driver => attach(program, AttachMode::Driver),
        XdpMode::Skb => attach(program, AttachMode::Skb),
        XdpMode::Auto => match attach(program, AttachMode::Driver) {
            Ok(attached) => Ok(attached),
            Err(err @ XdpError::AlreadyAttached { .. }) => Err(err),
            Err(err) => {
                tracing::info!(
                    iface,
                    %err,
                    "driver-mode XDP refused; falling back to generic (skb) mode"
                );
                attach(program, AttachMode::Skb)
            }
        },
    }
}

/// Turns an attach failure into `AlreadyAttached` when the kernel refused because another program
/// got there first (EBUSY/EEXIST: a race with the check in `refuse_if_attached`).
fn attach_error(iface: &str, if_index: u32, mode: &'static str, cause: ProgramError) -> XdpError {
    let errno = match &cause {
        ProgramError::SyscallError(err) => err.io_error.raw_os_error(),
        _ => None,
    };
    if matches!(errno, Some(libc::EBUSY | libc::EEXIST)) {
        if let Ok(Some(existing)) = netlink::xdp_attachments(if_index).map(|a| a.first().copied()) {
            return XdpError::AlreadyAttached {
                iface: iface.to_owned(),
                prog_id: existing.prog_id,
                prog_name: program_name(existing.prog_id),
                mode: existing.mode.name(),
            };
        }
    }
    XdpError::Attach { iface: iface.to_owned(), mode, cause }
}

/// Detaches `link` and waits (bounded) until the kernel no longer lists program `prog_id` on the
/// interface: closing a `bpf_link` detaches asynchronously, and callers (shutdown, tests, a restart)
/// should see the interface free when this returns.
pub(crate) fn detach(ebpf: &mut Ebpf, link: XdpLinkId, if_index: u32, prog_id: u32) -> Result<(), XdpError> {
    xdp_program(ebpf)?.detach(link).map_err(|cause| XdpError::Program { name: PROGRAM, cause })?;
    wait_detached(if_index, prog_id);
    Ok(())
}

/// Detaches `nat_reverse` from TC egress (closing its tcx link).
pub(crate) fn detach_tc(ebpf: &mut Ebpf, link: SchedClassifierLinkId) -> Result<(), XdpError> {
    tc_program(ebpf)?.detach(link).map_err(|cause| XdpError::Program { name: TC_PROGRAM, cause })
}

fn wait_detached(if_index: u32, prog_id: u32) {
    let deadline = Instant::now() + DETACH_WAIT;
    loop {
        let still_attached = match netlink::xdp_attachments(if_index) {
            Ok(attached) => attached.iter().any(|a| a.prog_id == prog_id),
            // The interface is gone (or cannot be queried): nothing left to wait for.
            Err(_) => false,
        };
        if !still_attached {
            return;
        }
        if Instant::now() >= deadline {
            tracing::warn!(if_index, prog_id, "XDP program still listed on the interface after detach");
            return;
        }
        std::thread::sleep(DETACH_POLL);
    }
}

fn if_index(iface: &str) -> Result<u32, XdpError> {
    let unknown = || XdpError::UnknownInterface { iface: iface.to_owned() };
    let c_iface = CString::new(iface).map_err(|_| unknown())?;
    // SAFETY: `c_iface` is a valid NUL-terminated string for the duration of the call.
    let index = unsafe { libc::if_nametoindex(c_iface.as_ptr()) };
    if index == 0 {
        return Err(unknown());
    }
    Ok(index)
}

/// Fails when any XDP program (ours from another router, or anyone's) is attached to the interface:
/// attaching must never silently replace it.
fn refuse_if_attached(iface: &str, if_index: u32) -> Result<(), XdpError> {
    let attached =
        netlink::xdp_attachments(if_index).map_err(|cause| XdpError::Query { iface: iface.to_owned(), cause })?;
    match attached.first() {
        None => Ok(()),
        Some(existing) => Err(XdpError::AlreadyAttached {
            iface: iface.to_owned(),
            prog_id: existing.prog_id,
            prog_name: program_name(existing.prog_id),
            mode: existing.mode.name(),
        }),
    }
}

/// Removes pins left by a router that died without cleaning up; fails if a live program still uses
/// a pinned map (another router using the same pin dir, possibly on another interface).
fn clear_stale_pins(iface: &str, pins: &PinDir) -> Result<(), XdpError> {
    for name in PINNED_MAPS {
        let path = pins.pin_path(name);
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        let occupied = |reason: String| XdpError::PinOccupied { path: path.clone(), reason };
        let map = MapData::from_pin(&path).map_err(|err| occupied(err.to_string()))?;
        let map_id = map.info().map_err(|err| occupied(err.to_string()))?.id();
        if let Some((prog_id, prog_name)) = program_using_map(map_id) {
            return Err(XdpError::PinsInUse {
                iface: iface.to_owned(),
                pin_dir: pins.path().to_path_buf(),
                prog_id,
                prog_name,
            });
        }
        tracing::warn!(pin = %path.display(), "removing stale BPF pin left by a router that did not shut down cleanly");
        std::fs::remove_file(&path).map_err(|err| occupied(err.to_string()))?;
    }
    Ok(())
}

/// The first loaded BPF program that uses map `map_id`, if any.
fn program_using_map(map_id: u32) -> Option<(u32, String)> {
    programs::loaded_programs()
        .filter_map(Result::ok)
        .find(|info| matches!(info.map_ids(), Ok(Some(ids)) if ids.contains(&map_id)))
        .map(|info| (info.id(), info.name_as_str().unwrap_or("?").to_owned()))
}

/// The name of loaded BPF program `prog_id`, or `"?"`.
fn program_name(prog_id: u32) -> String {
    programs::loaded_programs()
        .filter_map(Result::ok)
        .find(|info| info.id() == prog_id)
        .and_then(|info| info.name_as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}
