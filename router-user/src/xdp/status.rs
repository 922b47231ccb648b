//! `router xdp status`: what an operator asks of a running XDP front, read from its pins alone
//! (no connection to the router process, so it works as well after the router was SIGKILLed and
//! its pinned links keep the datapath running): where and in which mode the programs are attached,
//! the counters summed over CPUs, how full each map is, the steered flows (`STEER_FLOWS`) and the
//! connections left on the userspace relay by reason (`STEER_FALLBACKS`).
//!
//! The attachment is found from the pins: the programs that use the pinned `XDP_STATS` map are the
//! router's, and the interfaces of this network namespace are asked over rtnetlink which of them
//! run `xdp_front` (and in which mode, named as `ip link show` names it: one row per interface, the
//! pod-facing ones included) and over tcx which runs `nat_reverse` on egress.

#![allow(unsafe_code)]

use std::{
    ffi::{CStr, OsString},
    path::{Path, PathBuf},
};

use aya::programs::{self, SchedClassifier, TcAttachType};
use clap::Parser;
use router_common::maps::XDP_STATS;

use super::{
    counters::StatsMap, maps::NatMaps, netlink, steer_fallbacks, steer_flows, MapFill, SteerMaps, SteeredFlowRow,
    XdpCounters, XdpError,
};

/// `router xdp ...`.
#[derive(Parser, Debug)]
#[command(name = "router xdp", about = "Inspect the XDP front of a running router through its pinned maps")]
pub struct XdpCli {
    #[command(subcommand)]
    pub command: XdpCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum XdpCommand {
    /// Attach mode, summed counters, map fill levels, steered flows and steering fallbacks.
    Status {
        /// The router's bpffs pin directory.
        #[arg(long, env = "ROUTER_BPF_PIN_DIR", default_value = "/sys/fs/bpf/router")]
        bpf_pin_dir: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// One program of the front and where it runs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Attachment {
    pub program: String,
    pub prog_id: u32,
    pub iface: Option<String>,
    /// For XDP the word `ip link show` prints for the mode: `xdp` (driver), `xdpgeneric` (skb) or
    /// `xdpoffload`; `tcx egress` for the TC program; `None` when not found on any interface of
    /// this network namespace.
    pub mode: Option<String>,
}

/// Everything `router xdp status` prints.
#[derive(Clone, Debug)]
pub struct XdpStatus {
    pub pin_dir: PathBuf,
    pub attachments: Vec<Attachment>,
    pub counters: XdpCounters,
    pub maps: Vec<MapFill>,
    /// The steered flows (and any still connecting).
    pub flows: Vec<SteeredFlowRow>,
    /// Connections left on the userspace relay, `(reason, count)` for every reason.
    pub fallbacks: Vec<(&'static str, u64)>,
}

impl XdpStatus {
    /// Reads the status from the pins in `pin_dir`.
    pub fn read(pin_dir: &Path) -> Result<XdpStatus, XdpError> {
        let stats = StatsMap::open_pinned(pin_dir)?;
        let counters = stats.read()?;
        let nat = NatMaps::open_pinned(pin_dir)?;
        let mut maps = vec![MapFill {
            name: XDP_STATS,
            entries: router_common::stats::STATS_LEN,
            max_entries: router_common::stats::STATS_LEN,
        }];
        maps.extend(nat.fill()?);
        let steer = SteerMaps::open_pinned(pin_dir)?;
        maps.extend(steer.fill()?);
        let flows = steer_flows::rows(&steer.flows, super::conntrack::monotonic_ns());
        let counts = steer_fallbacks::read(&steer.fallbacks)?;
        let fallbacks = super::SteerFallback::ALL
            .iter()
            .map(|reason| (reason.label(), counts.get(reason.slot() as usize).copied().unwrap_or(0)))
            .collect();
        Ok(XdpStatus {
            pin_dir: pin_dir.to_path_buf(),
            attachments: attachments(pin_dir),
            counters,
            maps,
            flows,
            fallbacks,
        })
    }

    pub fn to_json(&self) -> serde_json::Value {
        let counters: serde_json::Map<String, serde_json::Value> = self
            .counters
            .named()
            .map(|(name, packets, bytes)| (name.to_owned(), serde_json::json!({"packets": packets, "bytes": bytes})))
            .collect();
        serde_json::json!({
            "pin_dir": self.pin_dir,
            "attachments": self.attachments,
            "counters": counters,
            "maps": self.maps,
            "steered_flows": {"count": self.flows.len(), "flows": self.flows},
            "steer_fallbacks": self.fallbacks.iter().copied().collect::<std::collections::BTreeMap<_, _>>(),
        })
    }

    pub fn to_text(&self) -> String {
        let mut out = format!("pin dir: {}\n", self.pin_dir.display());
        for a in &self.attachments {
            out += &format!(
                "program {} (id {}): {} on {}\n",
                a.program,
                a.prog_id,
                a.mode.as_deref().unwrap_or("not attached in this network namespace"),
                a.iface.as_deref().unwrap_or("-")
            );
        }
        out += "counters (packets, bytes; summed over CPUs):\n";
        for (name, packets, bytes) in self.counters.named() {
            out += &format!("  {name:<18} {packets:>14} {bytes:>16}\n");
        }
        out += "maps (entries / max_entries):\n";
        for fill in &self.maps {
            out += &format!("  {:<15} {:>9} / {}\n", fill.name, fill.entries, fill.max_entries);
        }
        out += &format!("steered flows: {}\n", self.flows.len());
        for flow in &self.flows {
            out += &format!(
                "  {} -> {} via {} (node leg {}): {}, to pod {} packets {} bytes, to client {} packets {} bytes, idle {} s{}{}\n",
                flow.client,
                flow.pod,
                flow.via,
                flow.node_leg,
                flow.state,
                flow.to_pod_packets,
                flow.to_pod_bytes,
                flow.to_client_packets,
                flow.to_client_bytes,
                flow.idle_seconds,
                if flow.fin { ", FIN" } else { "" },
                if flow.rst { ", RST" } else { "" },
            );
        }
        out += "steering fallbacks (connections left on the userspace relay):\n";
        for (reason, count) in &self.fallbacks {
            out += &format!("  {reason:<18} {count:>14}\n");
        }
        out
    }
}

/// Runs `router xdp <args>` (`args` starts with `xdp`); prints to stdout.
pub fn cli(args: impl IntoIterator<Item = OsString>) -> Result<(), XdpError> {
    let XdpCli { command } = XdpCli::parse_from(args);
    match command {
        XdpCommand::Status { bpf_pin_dir, json } => {
            let status = XdpStatus::read(&bpf_pin_dir)?;
            if json {
                println!("{}", status.to_json());
            } else {
                print!("{}", status.to_text());
            }
            Ok(())
        }
    }
}

/// The programs using the pinned stats map, one row per interface each is attached to
/// (`steer_ingress` runs on the main interface and on every pod-facing one), or one row without an
/// interface when it is attached nowhere in this network namespace.
fn attachments(pin_dir: &Path) -> Vec<Attachment> {
    let Ok(map_id) = aya::maps::MapData::from_pin(pin_dir.join(XDP_STATS)).and_then(|m| m.info()).map(|i| i.id())
    else {
        return Vec::new();
    };
    let ifaces = interface_names();
    let mut rows = Vec::new();
    for info in programs::loaded_programs().filter_map(Result::ok) {
        if !matches!(info.map_ids(), Ok(Some(ids)) if ids.contains(&map_id)) {
            continue;
        }
        let program = info.name_as_str().unwrap_or("?").to_owned();
        let prog_id = info.id();
        let found: Vec<(String, String)> = ifaces
            .iter()
            .filter_map(|(index, name)| {
                let xdp = netlink::xdp_attachments(*index)
                    .ok()
                    .and_then(|list| list.into_iter().find(|a| a.prog_id == prog_id))
                    .map(|a| a.mode.ip_link_name().to_owned());
                let tc = || {
                    [(TcAttachType::Egress, "tcx egress"), (TcAttachType::Ingress, "tcx ingress")]
                        .into_iter()
                        .find(|(hook, _)| {
                            SchedClassifier::query_tcx(name, *hook)
                                .is_ok_and(|(_, progs)| progs.iter().any(|p| p.id() == prog_id))
                        })
                        .map(|(_, label)| label.to_owned())
                };
                xdp.or_else(tc).map(|mode| (name.clone(), mode))
            })
            .collect();
        if found.is_empty() {
            rows.push(Attachment { program, prog_id, iface: None, mode: None });
            continue;
        }
        for (iface, mode) in found {
            rows.push(Attachment { program: program.clone(), prog_id, iface: Some(iface), mode: Some(mode) });
        }
    }
    rows
}

/// `(index, name)` of every interface in this network namespace.
fn interface_names() -> Vec<(u32, String)> {
    // SAFETY: if_nameindex has no preconditions; a null return means failure.
    let head = unsafe { libc::if_nameindex() };
    if head.is_null() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cursor = head;
    loop {
        // SAFETY: `cursor` walks the array if_nameindex returned, which ends with a zeroed entry.
        let entry = unsafe { &*cursor };
        if entry.if_index == 0 || entry.if_name.is_null() {
            break;
        }
        // SAFETY: `if_name` is a non-null NUL-terminated string owned by the array.
        let name = unsafe { CStr::from_ptr(entry.if_name) }.to_string_lossy().into_owned();
        out.push((entry.if_index, name));
        // SAFETY: not past the terminating entry (checked above), so the next entry exists.
        cursor = unsafe { cursor.add(1) };
    }
    // SAFETY: `head` came from if_nameindex and is freed exactly once.
    unsafe { libc::if_freenameindex(head) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_command_parses() {
        let cli = XdpCli::parse_from(["xdp", "status", "--bpf-pin-dir", "/sys/fs/bpf/x", "--json"]);
        let XdpCommand::Status { bpf_pin_dir, json } = cli.command;
        assert_eq!(bpf_pin_dir, PathBuf::from("/sys/fs/bpf/x"));
        assert!(json);
    }

    #[test]
    fn text_lists_steered_flows_and_fallbacks() {
        let status = XdpStatus {
            pin_dir: PathBuf::from("/sys/fs/bpf/x"),
            attachments: Vec::new(),
            counters: XdpCounters::default(),
            maps: Vec::new(),
            flows: vec![SteeredFlowRow {
                client: "10.0.0.1:40000".parse().expect("addr"),
                via: "10.0.0.2:443".parse().expect("addr"),
                pod: "10.1.0.2:8443".parse().expect("addr"),
                node_leg: "10.1.0.1:61000".parse().expect("addr"),
                state: "steered",
                to_pod_packets: 3,
                to_pod_bytes: 300,
                to_client_packets: 7,
                to_client_bytes: 7000,
                idle_seconds: 2,
                fin: false,
                rst: false,
            }],
            fallbacks: vec![("no_syn", 4), ("map_full", 1)],
        };
        let text = status.to_text();
        assert!(text.contains("steered flows: 1\n"), "{text}");
        assert!(text.contains("10.0.0.1:40000 -> 10.1.0.2:8443 via 10.0.0.2:443"), "{text}");
        assert!(text.contains("to client 7 packets 7000 bytes"), "{text}");
        assert!(text.lines().any(|line| line.split_whitespace().eq(["no_syn", "4"])), "{text}");
        let json = status.to_json();
        assert_eq!(json["steered_flows"]["count"], 1);
        assert_eq!(json["steered_flows"]["flows"][0]["to_pod_bytes"], 300);
        assert_eq!(json["steer_fallbacks"]["map_full"], 1);
    }

    #[test]
    fn loopback_is_listed() {
        assert!(interface_names().iter().any(|(_, name)| name == "lo"));
    }
}
