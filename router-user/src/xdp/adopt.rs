//! What a starting router makes of a previous front's pins in its pin dir. Pinned links mean a
//! front whose datapath is still running (its router was SIGKILLed or crashed, or is still alive):
//! - a live process still holds the program (another router on this pin dir): refuse;
//! - the pinned `LAYOUT` fingerprint is this build's ([`super::layout`]): adopt: reuse the pinned
//!   maps (flows, counters, steering entries) and replace the program in each link in place;
//! - otherwise (a build with another map layout, or pins from before fingerprints): say why, remove
//!   the old links and maps (the old datapath stops; its steered flows break), and start clean.

use std::{fs, path::Path};

use router_common::maps::PINNED_MAPS;

use super::{
    bpffs::PinDir,
    layout,
    links::{self, LinkKind},
    steer_fallbacks::STEER_FALLBACKS,
    XdpError,
};

/// What the pin dir holds from a previous front.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Previous {
    /// No pinned link: nothing to adopt (stale map pins are cleared as before).
    Nothing,
    /// Same layout, nobody alive holding it: adopt.
    Adopt,
    /// Pinned links that cannot be adopted: remove them and start clean. `prog_id` is the program
    /// they ran, to wait for its detach.
    StartClean { prog_id: u32, reason: String },
}

/// Looks at the link pins of `pins` for a front on `iface` built with the layout `fingerprint`. The router
/// `handing_over` (a process id), which gives its front up to this one, does not count as a live holder.
pub(crate) fn previous(
    pins: &PinDir,
    iface: &str,
    fingerprint: u64,
    handing_over: Option<u32>,
) -> Result<Previous, XdpError> {
    let link_pins = link_pins(pins.path());
    let main = pins.pin_path(&links::pin_name(LinkKind::Xdp, iface));
    let prog_id = match links::pinned_program(&main)? {
        Some(prog_id) => prog_id,
        None => {
            let mut other = None;
            for name in &link_pins {
                if let Some(prog_id) = links::pinned_program(&pins.pin_path(name))? {
                    other = Some(prog_id);
                    break;
                }
            }
            return Ok(match other {
                None => Previous::Nothing,
                Some(prog_id) => Previous::StartClean {
                    prog_id,
                    reason: format!("the pinned front ran on other interfaces ({})", link_pins.join(", ")),
                },
            });
        }
    };
    if let Some(pid) = live_holder(prog_id, handing_over) {
        return Err(XdpError::PinsInUse {
            iface: iface.to_owned(),
            pin_dir: pins.path().to_path_buf(),
            prog_id,
            prog_name: format!("held by live process {pid}"),
        });
    }
    Ok(match layout::pinned(pins.path()) {
        Some(pinned) if pinned == fingerprint => Previous::Adopt,
        Some(pinned) => Previous::StartClean {
            prog_id,
            reason: format!(
                "its map layout {pinned:016x} is not this build's {fingerprint:016x} (another router version, or another --xdp-conntrack-size)"
            ),
        },
        None => Previous::StartClean { prog_id, reason: "it has no LAYOUT pin".to_owned() },
    })
}

/// Names of the link pins in `dir`.
pub(crate) fn link_pins(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| links::is_link_pin(name))
        .collect();
    names.sort();
    names
}

/// Removes every pin of a previous front: its links (detaching them) and its maps.
pub(crate) fn clear(pins: &PinDir) {
    let maps = PINNED_MAPS.iter().copied().chain([layout::LAYOUT, STEER_FALLBACKS]).map(str::to_owned);
    for name in link_pins(pins.path()).into_iter().chain(maps) {
        let path = pins.pin_path(&name);
        if let Err(err) = links::remove_pin(&path) {
            tracing::warn!(pin = %path.display(), %err, "removing a previous front's pin");
        }
    }
}

/// A process other than this one with a file descriptor on BPF program `prog_id` (the program
/// itself or a link to it: `/proc/<pid>/fdinfo` says `prog_id:`). A SIGKILLed router holds none;
/// its program lives on through the pinned links alone.
fn live_holder(prog_id: u32, handing_over: Option<u32>) -> Option<u32> {
    let me = std::process::id();
    let wanted = format!("prog_id:\t{prog_id}");
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me || Some(pid) == handing_over {
            continue;
        }
        let Ok(fds) = fs::read_dir(entry.path().join("fdinfo")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(info) = fs::read_to_string(fd.path()) else {
                continue;
            };
            if info.lines().any(|line| line == wanted) {
                return Some(pid);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_process_holds_a_program_that_does_not_exist() {
        assert_eq!(live_holder(u32::MAX, None), None);
    }
}
