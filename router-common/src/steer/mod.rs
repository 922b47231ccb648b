//! Passthrough steering, the translation core: the flow entry of a TLS passthrough flow whose
//! packets the XDP front moves straight between the client and the pod, and the pure TCP arithmetic
//! that rewrites each packet (shared by the eBPF program and the host tests).
//!
//! Names follow `docs/steering.md` (design notes): leg A is client C <-> the router's own
//! socket R (the kernel answered C's handshake), leg B is the node address/reserved port Q <-> pod P
//! (opened by the datapath with C's ISN and SYN options). Once steered, each packet is rewritten:
//!
//! - C -> P ([`STEER_TO_POD`]): source C -> Q, destination R -> P; ack + D; seq, window and TSval
//!   unchanged; TSecr - T (an echo of one of R's own TSvals: Tp0); SACK edges + D.
//! - P -> C ([`STEER_TO_CLIENT`]): source P -> R, destination Q -> C; seq - D; window
//!   min(65535, (w << Wp) >> Wr); TSval + T; ack, TSecr and SACK unchanged.
//!
//! with D = Ip - Ir and T = (Tr_last + 1) - Tp0, all modulo 2^32 ([`SteerTcp::new`]).
//!
//! - [`flow`]: the `STEER_FLOWS` map, its key ([`crate::nat::FlowKey`], the 5-tuple as the packet
//!   arrives) and value ([`SteerFlow`]), states and flags.
//! - [`rules`]: one pure function per rewritten field.
//! - [`field_checksum`]: RFC 1624 updates for a 16/32-bit field at any byte offset (TCP options need
//!   not be 16-bit aligned).
//! - [`options`]: the bounded TCP option walker (where the timestamp and SACK options are).
//! - [`syn_options`]: the bounded SYN option reader (MSS, window scale, SACK-permitted,
//!   timestamps) whose values the setup stage records.
//! - [`setup`]: the setup stage's maps and records (client SYNs, the pod's SYN-ACK, the ports
//!   recorded) through which userspace opens leg B.
//! - [`segment`]: the whole TCP header rewrite over any [`TcpBytes`] (a byte slice on the host, the
//!   packet in eBPF), with the checksum kept by incremental updates.
//! - [`checksum_change`]: the checksum of a segment whose sender left it partial (TX checksum
//!   offload): the differences the TC program hands the kernel, and XDP's test for such a field.
//! - [`cookie`]: SYN cookies carrying the client's MSS and options, for a handshake the datapath would
//!   answer itself (designed, not used yet).

pub mod checksum_change;
pub mod cookie;
pub mod field_checksum;
pub mod flow;
pub mod options;
pub mod rules;
pub mod segment;
pub mod setup;
pub mod syn_options;

#[cfg(test)]
mod partial_checksum_tests;
#[cfg(test)]
mod tests;

pub use checksum_change::{may_be_partial, may_be_partial_v6, ChecksumChange};
pub use flow::{
    SteerFlow, SteerTcp, STEER_FIN, STEER_FLOWS, STEER_FLOWS_MAX, STEER_PENDING, STEER_RST, STEER_STEERED,
    STEER_TO_CLIENT, STEER_TO_POD,
};
pub use options::{OptionLayout, OptionWalk, MAX_SACK_BLOCKS};
pub use segment::{translate, SteerError, TcpBytes, Translated};
pub use syn_options::{read_syn_options, SynOptionWalk, SynOptions};
