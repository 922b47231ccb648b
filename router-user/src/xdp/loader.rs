//! Loading and attaching the XDP front: adopt a previous front's pinned links and maps when its
//! layout is this build's ([`super::adopt`]), else refuse when the interface already has an XDP
//! program or the pin dir belongs to a live router, then load the embedded object
//! (conntrack sized from the options), attach `xdp_front` in the requested mode to the interface,
//! `nat_reverse` on its TC egress, and `steer_ingress` on the TC ingress of the interface and of each
//! pod-facing one (when there are any; the pod-facing interfaces get no XDP program), pin each link
//! ([`super::links`]) and every map as `<pin_dir>/<MAP_NAME>`, with `LAYOUT` and `STEER_FALLBACKS`.

#![allow(unsafe_code)]

use std::{
    ffi::CString,
    path::Path,
    time::{Duration, Instant},
};

use aya::{
    maps::{Map, MapData},
    programs::{self, ProgramError, SchedClassifier, TcAttachType, Xdp},
    Ebpf, EbpfLoader,
};
use router_common::maps::{CONNTRACK, CONNTRACK_REV, PINNED_MAPS, XDP_STATS};

use super::{
    adopt::{self, Previous},
    bpffs::{self, PinDir},
    counters::StatsMap,
    ebpf_log, layout,
    links::{self, FrontLink, Held, LinkKind},
    maps::{open_pin, NatMaps},
    netlink,
    object::{OBJECT, PROGRAM},
    steer_fallbacks::{self, STEER_FALLBACKS},
    steer_maps::SteerMaps,
    XdpError, XdpMode, XdpOptions,
};

/// How long `detach` waits for the kernel to drop the program from the interface, and how often it
/// looks.
const DETACH_WAIT: Duration = Duration::from_secs(3);
const DETACH_POLL: Duration = Duration::from_millis(10);

/// Everything an attached front owns, handed to `XdpFront`. Dropping it detaches (with the `Ebpf`
/// and the links) and unpins (with the `PinDir`).
pub(crate) struct Attached {
    pub ebpf: Ebpf,
    pub if_index: u32,
    /// Kernel id of the loaded `xdp_front`.
    pub prog_id: u32,
    /// `xdp_front` on the interface first, then `nat_reverse`, then `steer_ingress` on the interface
    /// and on each pod-facing one.
    pub links: Vec<FrontLink>,
    pub stats: StatsMap,
    pub nat: NatMaps,
    pub steer: SteerMaps,
    pub pins: PinDir,
    /// Whether the maps (and links) of a previous router were adopted.
    pub adopted: bool,
}

pub(crate) fn attach(opts: &XdpOptions) -> Result<Attached, XdpError> {
    let iface = opts.iface.as_str();
    let if_index = if_index(iface)?;
    let mut pod_ifaces = Vec::new();
    for pod_iface in pod_interfaces(opts) {
        pod_ifaces.push((pod_iface, self::if_index(pod_iface)?));
    }

    bpffs::ensure_mounted()?;
    let pins = PinDir::create(&opts.pin_dir)?;
    let fingerprint = layout::fingerprint(opts.conntrack_size);
    match adopt::previous(&pins, iface, fingerprint, opts.handed_over_by)? {
        Previous::Adopt => return adopt_and_attach(opts, if_index, &pod_ifaces, pins),
        Previous::StartClean { prog_id, reason } => {
            tracing::warn!(
                pin_dir = %pins.path().display(),
                %reason,
                "not adopting the pinned XDP front: removing its links and maps and starting clean (its steered flows break)"
            );
            adopt::clear(&pins);
            wait_detached(if_index, prog_id);
            for &(_, pod_index) in &pod_ifaces {
                wait_detached(pod_index, prog_id);
            }
        }
        Previous::Nothing => {}
    }
    refuse_if_attached(iface, if_index)?;
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
/// was pinned (links included).
fn load_and_attach(
    opts: &XdpOptions,
    if_index: u32,
    pod_ifaces: &[(&str, u32)],
    mut pins: PinDir,
) -> Result<Attached, XdpError> {
    let iface = opts.iface.as_str();
    clear_stale_pins(iface, &pins)?;

    let mut ebpf = load_with(opts.conntrack_size, None, opts.debug_log)?;
    let program = xdp_program(&mut ebpf)?;
    let prog_id = program.info().map_err(|cause| XdpError::Program { name: PROGRAM, cause })?.id();
    let mut links = vec![attach_xdp(program, iface, if_index, opts.mode, &mut pins)?];
    for (kind, name, index) in tc_links(iface, if_index, opts.steer, pod_ifaces) {
        links.push(attach_tc(&mut ebpf, kind, name, index, &mut pins)?);
    }

    // Pin after attaching: a map pin under the pin dir means "attached and counting".
    let mut maps: Vec<(&'static str, Map)> = Vec::new();
    for &name in PINNED_MAPS {
        let map = ebpf.take_map(name).ok_or(XdpError::Missing { kind: "map", name })?;
        let path = pins.pin_path(name);
        map.pin(&path).map_err(|cause| XdpError::Pin { path: path.clone(), cause })?;
        pins.record_pin(path);
        maps.push((name, map));
    }
    steer_fallbacks::pin(pins.path())?;
    pins.record_pin(pins.pin_path(STEER_FALLBACKS));
    layout::pin(pins.path(), layout::fingerprint(opts.conntrack_size))?;
    pins.record_pin(pins.pin_path(layout::LAYOUT));
    finish(ebpf, if_index, prog_id, links, maps, pins, false)
}

/// Loads the object over the pinned maps of a previous front (same layout) and replaces the program
/// of each of its links in place; interfaces it was not attached to get a fresh link, and its links
/// on interfaces no longer asked for are removed.
fn adopt_and_attach(
    opts: &XdpOptions,
    if_index: u32,
    pod_ifaces: &[(&str, u32)],
    mut pins: PinDir,
) -> Result<Attached, XdpError> {
    let iface = opts.iface.as_str();
    let mut ebpf = load_with(opts.conntrack_size, Some(pins.path()), opts.debug_log)?;
    for name in PINNED_MAPS.iter().copied().chain([STEER_FALLBACKS, layout::LAYOUT]) {
        pins.record_pin(pins.pin_path(name));
    }
    let program = xdp_program(&mut ebpf)?;
    let prog_id = program.info().map_err(|cause| XdpError::Program { name: PROGRAM, cause })?.id();
    let mut links = Vec::new();
    // XDP on the main interface only (a previous front's XDP links on pod-facing interfaces are
    // removed below, with every link this front does not want).
    let (name, index) = (iface, if_index);
    let path = pins.pin_path(&links::pin_name(LinkKind::Xdp, name));
    let adopted = if std::fs::symlink_metadata(&path).is_ok() {
        match links::adopt_xdp(program, &path) {
            Ok(held) => Some(held),
            Err(err) => {
                // The interface went away and came back, say: its old link is defunct.
                tracing::warn!(iface = name, %err, "the pinned XDP link cannot be updated; attaching anew");
                let _ = links::remove_pin(&path);
                None
            }
        }
    } else {
        None
    };
    match adopted {
        Some(held) => {
            pins.record_pin(path);
            let mode = attached_mode_name(index, prog_id);
            links.push(FrontLink {
                iface: name.to_owned(),
                if_index: index,
                kind: LinkKind::Xdp,
                mode,
                held,
                adopted: true,
            });
        }
        None => {
            refuse_if_attached(name, index)?;
            links.push(attach_xdp(program, name, index, opts.mode, &mut pins)?);
        }
    }
    let discovered = if opts.steer { discovered_pod_ifaces(&pins, iface, pod_ifaces) } else { Vec::new() };
    let mut pod_ifaces = pod_ifaces.to_vec();
    pod_ifaces.extend(discovered.iter().map(|(name, index)| (name.as_str(), *index)));
    for (kind, name, index) in tc_links(iface, if_index, opts.steer, &pod_ifaces) {
        links.push(adopt_or_attach_tc(&mut ebpf, kind, name, index, &mut pins)?);
    }
    // Links of the previous front on interfaces this router does not use: removed (detached).
    let wanted: Vec<String> = links.iter().map(|link| links::pin_name(link.kind, &link.iface)).collect();
    for name in adopt::link_pins(pins.path()) {
        if !wanted.contains(&name) {
            tracing::info!(pin = %name, "removing the previous front's link on an interface no longer asked for");
            let _ = links::remove_pin(&pins.pin_path(&name));
        }
    }

    let mut maps: Vec<(&'static str, Map)> = Vec::new();
    for &name in PINNED_MAPS {
        maps.push((name, ebpf.take_map(name).ok_or(XdpError::Missing { kind: "map", name })?));
    }
    finish(ebpf, if_index, prog_id, links, maps, pins, true)
}

fn finish(
    ebpf: Ebpf,
    if_index: u32,
    prog_id: u32,
    links: Vec<FrontLink>,
    mut maps: Vec<(&'static str, Map)>,
    pins: PinDir,
    adopted: bool,
) -> Result<Attached, XdpError> {
    let pin_dir = pins.path().to_path_buf();
    let mut take = |name: &'static str| {
        if name == STEER_FALLBACKS {
            return open_pin(&pin_dir, name);
        }
        let at = maps.iter().position(|(n, _)| *n == name).ok_or(XdpError::Missing { kind: "map", name })?;
        Ok(maps.swap_remove(at).1)
    };
    let stats = StatsMap::new(take(XDP_STATS)?)?;
    let nat = NatMaps::new(&mut take)?;
    let steer = SteerMaps::new(&mut take)?;
    Ok(Attached { ebpf, if_index, prog_id, links, stats, nat, steer, pins, adopted })
}

/// The TC links of a front on `iface` with `pod_ifaces`: `nat_reverse` on the interface's egress, and,
/// with steering, `steer_ingress` on the ingress of the interface and of each pod-facing one named at
/// start (more are attached as the FIB names them, [`attach_pod_facing`]).
fn tc_links<'a>(
    iface: &'a str,
    if_index: u32,
    steer: bool,
    pod_ifaces: &[(&'a str, u32)],
) -> Vec<(LinkKind, &'a str, u32)> {
    let mut out = vec![(LinkKind::TcxEgress, iface, if_index)];
    if steer {
        for (name, index) in std::iter::once((iface, if_index)).chain(pod_ifaces.iter().copied()) {
            out.push((LinkKind::TcxIngress, name, index));
        }
    }
    out
}

/// Attaches `steer_ingress` to the ingress of the pod-facing interface `iface` while the front runs,
/// and pins the link as at start. A pin left by an interface of the same name that went away is
/// replaced.
pub(crate) fn attach_pod_facing(
    ebpf: &mut Ebpf,
    iface: &str,
    if_index: u32,
    pins: &mut PinDir,
) -> Result<FrontLink, XdpError> {
    let _ = links::remove_pin(&pins.pin_path(&links::pin_name(LinkKind::TcxIngress, iface)));
    attach_tc(ebpf, LinkKind::TcxIngress, iface, if_index, pins)
}

/// The pod-facing interfaces a previous front attached `steer_ingress` to on its own (found from the
/// FIB) that still exist: their links are adopted, so that the flows steered through them go on.
fn discovered_pod_ifaces(pins: &PinDir, iface: &str, named: &[(&str, u32)]) -> Vec<(String, u32)> {
    let prefix = links::pin_name(LinkKind::TcxIngress, "");
    adopt::link_pins(pins.path())
        .into_iter()
        .filter_map(|pin| pin.strip_prefix(&prefix).map(str::to_owned))
        .filter(|name| name != iface && !named.iter().any(|(n, _)| n == name))
        // A name whose dots became underscores in the pin is not found: that link is removed.
        .filter_map(|name| self::if_index(&name).ok().map(|index| (name, index)))
        .collect()
}

/// The mode name of a tcx attachment.
fn tcx_mode(kind: LinkKind) -> &'static str {
    if kind == LinkKind::TcxIngress {
        "tcx ingress"
    } else {
        "tcx egress"
    }
}

/// Replaces the program of the previous front's `kind` link on `iface` in place, or attaches afresh
/// when there is none (or it cannot be updated).
fn adopt_or_attach_tc(
    ebpf: &mut Ebpf,
    kind: LinkKind,
    iface: &str,
    if_index: u32,
    pins: &mut PinDir,
) -> Result<FrontLink, XdpError> {
    let path = pins.pin_path(&links::pin_name(kind, iface));
    let adopted = if std::fs::symlink_metadata(&path).is_ok() {
        links::adopt_tc(tc_program(ebpf, kind)?, &path)
            .inspect_err(|err| tracing::warn!(iface, %err, "the pinned tcx link cannot be updated; attaching anew"))
            .ok()
    } else {
        None
    };
    match adopted {
        Some(held) => {
            pins.record_pin(path);
            Ok(FrontLink { iface: iface.to_owned(), if_index, kind, mode: tcx_mode(kind), held, adopted: true })
        }
        None => {
            let _ = links::remove_pin(&path);
            attach_tc(ebpf, kind, iface, if_index, pins)
        }
    }
}

/// Attaches `xdp_front` to `iface` afresh and pins the link.
fn attach_xdp(
    program: &mut Xdp,
    iface: &str,
    if_index: u32,
    mode: XdpMode,
    pins: &mut PinDir,
) -> Result<FrontLink, XdpError> {
    let (id, mode) = attach_in_mode(program, iface, if_index, mode)?;
    let path = pins.pin_path(&links::pin_name(LinkKind::Xdp, iface));
    let held = links::pin_xdp(program, id, &path)?;
    if matches!(held, Held::Pinned(_)) {
        pins.record_pin(path);
    }
    Ok(FrontLink { iface: iface.to_owned(), if_index, kind: LinkKind::Xdp, mode, held, adopted: false })
}

/// Attaches `kind`'s program to `iface`'s tc hook afresh and pins the link.
fn attach_tc(
    ebpf: &mut Ebpf,
    kind: LinkKind,
    iface: &str,
    if_index: u32,
    pins: &mut PinDir,
) -> Result<FrontLink, XdpError> {
    let program = tc_program(ebpf, kind)?;
    let hook = if kind == LinkKind::TcxIngress { TcAttachType::Ingress } else { TcAttachType::Egress };
    let mode = tcx_mode(kind);
    let id = program.attach(iface, hook).map_err(|cause| XdpError::Attach { iface: iface.to_owned(), mode, cause })?;
    let path = pins.pin_path(&links::pin_name(kind, iface));
    let held = links::pin_tc(program, kind, id, &path)?;
    if matches!(held, Held::Pinned(_)) {
        pins.record_pin(path);
    }
    Ok(FrontLink { iface: iface.to_owned(), if_index, kind, mode, held, adopted: false })
}

/// The mode `prog_id` runs in on `if_index`, as `--xdp-mode` names it (`"?"` when not found).
fn attached_mode_name(if_index: u32, prog_id: u32) -> &'static str {
    netlink::xdp_attachments(if_index)
        .ok()
        .and_then(|list| list.into_iter().find(|a| a.prog_id == prog_id))
        .map_or("?", |a| a.mode.name())
}

/// Loads the embedded object with both conntrack maps sized `conntrack_size` (or, with
/// `adopt_pins`, over the maps pinned there), and both programs into the kernel (the verifier runs
/// here); attaches nothing.
#[cfg(test)]
pub(crate) fn load(conntrack_size: u32) -> Result<Ebpf, XdpError> {
    load_with(conntrack_size, None, false)
}

/// Loads the object (not attached); `debug_log` turns on the programs' debug records
/// ([`super::ebpf_log`]).
pub(crate) fn load_with(conntrack_size: u32, adopt_pins: Option<&Path>, debug_log: bool) -> Result<Ebpf, XdpError> {
    let mut loader = EbpfLoader::new();
    loader.map_max_entries(CONNTRACK, conntrack_size).map_max_entries(CONNTRACK_REV, conntrack_size);
    let level = ebpf_log::level(debug_log);
    loader.override_global(ebpf_log::LEVEL_GLOBAL, &level, true);
    if let Some(dir) = adopt_pins {
        // The pinned maps are used as they are (aya opens a pin when one exists at the path).
        for &name in PINNED_MAPS {
            loader.map_pin_path(name, dir.join(name));
        }
    }
    if OBJECT.is_empty() {
        return Err(XdpError::NotBuilt);
    }
    let mut ebpf = loader.load(OBJECT).map_err(XdpError::Object)?;
    xdp_program(&mut ebpf)?.load().map_err(|cause| XdpError::Program { name: PROGRAM, cause })?;
    for kind in [LinkKind::TcxEgress, LinkKind::TcxIngress] {
        tc_program(&mut ebpf, kind)?.load().map_err(|cause| XdpError::Program { name: kind.program(), cause })?;
    }
    Ok(ebpf)
}

/// The TC program of `kind` (`nat_reverse` or `steer_ingress`).
pub(crate) fn tc_program(ebpf: &mut Ebpf, kind: LinkKind) -> Result<&mut SchedClassifier, XdpError> {
    let name = kind.program();
    let program = ebpf.program_mut(name).ok_or(XdpError::Missing { kind: "program", name })?;
    program.try_into().map_err(|cause| XdpError::Program { name, cause })
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
) -> Result<(programs::xdp::XdpLinkId, &'static str), XdpError> {
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
    if errno == Some(libc::ERANGE) && mode == AttachMode::Driver.name() {
        // veth and many drivers refuse a program without multi-buffer support above a page-sized MTU.
        tracing::warn!(
            iface,
            "driver-mode XDP refused the interface's MTU (too large for a program without multi-buffer \
             support): use --xdp-mode skb, or auto to fall back by itself"
        );
    }
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

/// Detaches one attachment of the front: a pinned link loses its pin and its last fd (the kernel
/// detaches it), a netlink one is detached through its program. For XDP, waits (bounded) until the
/// kernel no longer lists program `prog_id` on the interface: detaching is asynchronous, and callers
/// (shutdown, tests, a restart) should see the interface free when this returns.
pub(crate) fn detach(ebpf: &mut Ebpf, link: FrontLink, prog_id: u32) -> Result<(), XdpError> {
    let FrontLink { if_index, kind, held, .. } = link;
    match held {
        Held::Pinned(pinned) => {
            let fd = pinned.unpin().map_err(|cause| XdpError::PinDir { path: "(link pin)".into(), cause })?;
            drop(fd);
        }
        Held::Xdp(id) => xdp_program(ebpf)?.detach(id).map_err(|cause| XdpError::Program { name: PROGRAM, cause })?,
        Held::Tc(id) => {
            tc_program(ebpf, kind)?.detach(id).map_err(|cause| XdpError::Program { name: kind.program(), cause })?
        }
    }
    if kind == LinkKind::Xdp {
        wait_detached(if_index, prog_id);
    }
    Ok(())
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

/// The name of interface `if_index`, or `None` when there is none (it went away).
pub(crate) fn if_name(if_index: u32) -> Option<String> {
    let mut buf = [0u8; libc::IF_NAMESIZE];
    // SAFETY: `buf` is writable for IF_NAMESIZE bytes, the size if_indextoname(3) writes at most.
    let name = unsafe { libc::if_indextoname(if_index, buf.as_mut_ptr().cast()) };
    if name.is_null() {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..len]).into_owned())
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
    // The datapath's maps first: a live router's program uses them (the other two have no program).
    for name in PINNED_MAPS.iter().chain(&[STEER_FALLBACKS, layout::LAYOUT]) {
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
