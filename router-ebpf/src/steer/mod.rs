//! The XDP steering of TLS passthrough flows (design notes: `docs/steering.md`; the
//! contract of the setup: `router_common::steer::setup`), the datapath's part. `xdp_front` runs
//! [`program::stage`] before the nodePort stage and [`setup::record_syn`] after it on the node NIC;
//! `steer_ingress` ([`tc`]) runs on the TC ingress of the NIC (what XDP hands over: partial
//! checksums, frames past 1,514 bytes) and of every pod-facing interface, where no XDP program runs
//! (every steered packet from the pods, and their answers to leg B), so both directions and both
//! handshakes meet one of them.
//!
//! - Translation ([`program::stage`] or [`tc`] on a [`STEER_STEERED`](router_common::steer::STEER_STEERED)
//!   entry): a packet of a steered flow, client -> router socket R or pod P -> node address Q, is
//!   rewritten in place into the other leg's packet (addresses, ports, seq/ack, window,
//!   timestamps, SACK, checksums, MACs) and sent on without the kernel stack. The TCP arithmetic is
//!   `router_common::steer` (shared with the host tests); `rewrite` applies it to the packet. On a
//!   pod -> client entry the stage also keeps `acked`, the serial maximum of P's acknowledgement
//!   numbers (`router_common::steer::rules::acked_max`), so the router knows when P has the whole
//!   ClientHello it replayed.
//! - Setup ([`setup`]): a client SYN to a port in `STEER_PORTS` (the port after the nodePort
//!   rewrite) is recorded in `STEER_SYNS` with its options (`router_common::steer::syn_options`,
//!   run in `bpf_loop`), the destination it arrived with, the interface and both MACs; the pod's
//!   SYN-ACK or RST to a [`STEER_CONNECTING`](router_common::steer::setup::STEER_CONNECTING) leg B
//!   is recorded in `STEER_ANSWERS` and its key sent on `STEER_EVENTS` (ring buffer), which wakes
//!   the router.
//! - Verdict policy of the stage: not TCP (IPv4, or IPv6 with TCP right after the fixed header: an
//!   extension header is not walked), cut short, a fragment, no `STEER_FLOWS` entry for
//!   the arrival 5-tuple, or an entry neither steered nor connecting -> not the stage's (the
//!   nodePort stage and the SYN record run; the packet is otherwise unchanged). A connecting
//!   entry's packet -> `XDP_DROP`, unchanged (its answer recorded first; no socket owns Q, so
//!   passing it up would only make the kernel answer with a RST). A steered flow's SYN (a
//!   handshake is the setup's business) or a segment whose TCP header or options do not parse ->
//!   `XDP_DROP`, unchanged, counted in the entry's `dropped` (passing it up would reach the retired
//!   R, whose answer would break the flow; TCP retransmits). Otherwise the packet is translated,
//!   counted, and leaves by the entry's `if_index`: `XDP_TX` when that is the arrival interface,
//!   else `bpf_redirect(if_index, 0)` (`XDP_REDIRECT`). A recorded SYN goes on as the nodePort
//!   stage decided. Nothing aborts.
//! - Bounds: the Ethernet, IPv4 or IPv6 and fixed TCP headers are read and written through
//!   `crate::parse::ptr_at`/`ptr_at_mut`, which compare against `data_end` right before the
//!   access; the TCP options, at variable offsets, through `bpf_xdp_load_bytes`/
//!   `bpf_xdp_store_bytes`, which check against the packet in the kernel (see `packet::PacketTcp`
//!   for why; an IPv6 packet's addresses are copied into its key the same way, as copies by hand
//!   ran `record_answer` past the 512-byte stack). The option walks are bounded by 40 steps (`bpf_loop`), the SACK rewrite by 8 edges.
//!   Only the linear part of the frame is read (no `xdp.frags`).
//! - Byte order: header fields network order (`from_be_bytes`); map keys
//!   (`router_common::nat::FlowKey`, `SteerPortKey`) and values (`SteerFlow`, `SteerSyn`,
//!   `SteerAnswer`): addresses and MACs network order, ports, offsets, timestamps and counters host
//!   order.
//! - Maps ([`maps`], all pinned by the loader): `STEER_FLOWS` (`BPF_MAP_TYPE_HASH`,
//!   `BPF_F_NO_PREALLOC`, 65,536 entries, two per flow; written by userspace, this stage adds to
//!   the counters, refreshes `last_seen_ns` at most once a second, ors FIN/RST into `seen` and
//!   keeps `acked`), `STEER_PORTS` (hash, 16; userspace), `STEER_SYNS` (LRU hash, 65,536; this
//!   program writes, userspace reads and removes), `STEER_ANSWERS` (hash without preallocation,
//!   16,384; same), `STEER_EVENTS` (ring buffer, 256 KiB of `FlowKey` records).
//! - Counters: per entry, per direction: `packets`, `bytes` (`data_end - data` on arrival),
//!   `dropped`. Plain adds, not atomic ones (the bpfel target has no fetch-add in stable Rust): a
//!   direction arrives on one hook and, by RSS, on one queue, so increments are lost only when a
//!   flow moves between CPUs mid-packet. They are statistics; nothing decides on them. In
//!   `XDP_STATS` (by `xdp_front`): steered to the pod / to the client, steering drops, SYNs and
//!   answers recorded (`router_common::stats`).
//! - Hashing: none of its own (the maps hash the keys).
//! - TTL: left as it was; the steered packet is the node's own leg-B packet, not a routed one.
//! - Verifier: the option walks run as `bpf_loop` callbacks (one step per call); the SACK loop is
//!   bounded by 8. [`program::stage`], [`setup::record_answer`] and [`setup::record_syn`] are BPF
//!   functions of their own, each with its own stack frame (see the crate docs for the sizes and
//!   the instruction count). `steer_translate` (the stage and the answer record): about 154,000
//!   instructions walked on 6.18 with IPv6 (205,000 before it: the pseudo-header update became a
//!   BPF function of its own, `router_common::steer::segment`, and the IPv6 arms share it; 77,000
//!   before the hand-off to `steer_ingress` came, 28,000 before the setup stage; its tests fail
//!   above 260,000).
//!   Lessons, each a rejected or exploding load: an inline 40-step walk hit the 1,000,000 limit;
//!   direct packet pointers at variable offsets lost their checks to LLVM; clamping the values
//!   that come back from `bpf_loop` quintupled the work; rewriting inside the callback brought the
//!   limit back; the stages inlined into one `xdp_front` frame ran past the 512-byte stack. Needs a
//!   privileged loader (CAP_BPF + CAP_PERFMON + CAP_NET_ADMIN).
//! - Kernel: `bpf_loop` (>= 5.17), `bpf_xdp_load_bytes`/`bpf_xdp_store_bytes` (>= 5.18), ring
//!   buffers (>= 5.8), BTF maps, `BPF_F_NO_PREALLOC` hash updates from userspace; generic and
//!   driver XDP both work for `XDP_TX`; a redirect to a veth in driver mode needs an XDP program
//!   (or GRO) on the peer. Developed on 6.18.

pub mod maps;
pub mod packet;
pub mod program;
mod rewrite;
pub mod setup;
pub mod tc;
