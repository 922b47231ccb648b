//! `steer_translate`: the translation stage of the XDP steering of TLS passthrough flows (design
//! notes: `/work/shared/XDP-STEERING.md`). A packet of a steered flow, client -> router socket R or
//! pod P -> node address Q, is rewritten in place into the other leg's packet (addresses, ports,
//! seq/ack, window, timestamps, SACK, checksums, MACs) and sent on without the kernel stack. The TCP
//! arithmetic is `router_common::steer` (shared with the host tests); this module applies it to the
//! packet.
//!
//! This first increment is a program of its own, loaded by the `BPF_PROG_TEST_RUN` tests and not
//! attached by the router; the next one calls [`program::steer`] from `xdp_front` (and from the
//! pod-facing hook) before the nodePort stage.
//!
//! - Verdict policy: not IPv4 TCP, cut short, a fragment, no `STEER_FLOWS` entry for the arrival
//!   5-tuple, or an entry not yet [`STEER_STEERED`](router_common::steer::STEER_STEERED) ->
//!   `XDP_PASS`, packet unchanged (the flow is still R's, or not ours). A steered flow's SYN (a
//!   handshake is the setup stage's business) or a segment whose TCP header or options do not
//!   parse -> `XDP_DROP`, packet unchanged, counted in the entry's `dropped` (passing it up would
//!   reach the retired R, whose answer would break the flow; TCP retransmits). Otherwise the
//!   packet is translated, counted, and leaves by the entry's `if_index`: `XDP_TX` when that is
//!   the arrival interface, else `bpf_redirect(if_index, 0)` (`XDP_REDIRECT`). Nothing aborts.
//! - Bounds: the Ethernet and IPv4 headers are read and written through `crate::parse::ptr_at`/
//!   `ptr_at_mut`, which compare against `data_end` right before the access; the TCP header and
//!   its options, at variable offsets, through `bpf_xdp_load_bytes`/`bpf_xdp_store_bytes`, which
//!   check against the packet in the kernel (see `packet::PacketTcp` for why). The option walk is
//!   bounded by 40 steps (`bpf_loop`), the SACK rewrite by 8 edges. Only the linear part of the
//!   frame is read (no `xdp.frags`).
//! - Byte order: header fields network order (`from_be_bytes`); the `STEER_FLOWS` key
//!   (`router_common::nat::FlowKey`) and value (`router_common::steer::SteerFlow`): addresses and
//!   MACs network order, ports, offsets, timestamps and counters host order.
//! - Maps: `STEER_FLOWS` ([`maps`]): `BPF_MAP_TYPE_HASH`, `BPF_F_NO_PREALLOC`, 65,536 entries (two
//!   per flow), 40-byte key, 120-byte value; written by userspace, this program adds to the
//!   counters, refreshes `last_seen_ns` (at most once a second) and ors FIN/RST into `seen`. Not
//!   pinned yet. No other map is touched (the `XDP_STATS` counters are `xdp_front`'s).
//! - Counters: per entry, per direction: `packets`, `bytes` (`data_end - data` on arrival),
//!   `dropped`. Plain adds, not atomic ones (the bpfel target has no fetch-add in stable Rust): a
//!   direction arrives on one hook and, by RSS, on one queue, so increments are lost only when a
//!   flow moves between CPUs mid-packet. They are statistics; nothing decides on them.
//! - Hashing: none of its own (the map hashes the key).
//! - TTL: left as it was; the steered packet is the node's own leg-B packet, not a routed one.
//! - Verifier: the option walk runs as `bpf_loop` callbacks (one step per call); the SACK loop is
//!   bounded by 8. About 28,000 instructions walked on 6.18 (the packet tests fail above 100,000).
//!   Lessons, each a rejected or exploding load: an inline 40-step walk hit the 1,000,000 limit;
//!   direct packet pointers at variable offsets lost their checks to LLVM; clamping the values
//!   that come back from `bpf_loop` quintupled the work; rewriting inside the callback brought
//!   the limit back. Needs a privileged loader (CAP_BPF + CAP_PERFMON + CAP_NET_ADMIN).
//! - Kernel: `bpf_loop` (>= 5.17), `bpf_xdp_load_bytes`/`bpf_xdp_store_bytes` (>= 5.18), BTF maps,
//!   `BPF_F_NO_PREALLOC` hash updates from userspace; generic and driver XDP both work for
//!   `XDP_TX`; a redirect to a veth in driver mode needs an XDP program (or GRO) on the peer.
//!   Developed on 6.18.

pub mod maps;
mod packet;
pub mod program;
mod rewrite;
