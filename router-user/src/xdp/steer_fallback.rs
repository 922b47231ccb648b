//! Why a passthrough connection was not steered and stays on the userspace relay: one label per
//! reason in `router_xdp_steer_fallbacks_total{reason}`.

/// A reason the setup gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// The datapath recorded no SYN for the connection (XDP not on its path, or the entry aged out).
    NoSyn,
    /// The connection came with a PROXY header: the bytes R read are not all C's.
    ProxyProtocol,
    /// The client and the pod are of different address families (an IPv4 client to an IPv6 pod or
    /// the other way round): the datapath rewrites addresses within one family only. Slot 2, which
    /// counted every IPv6 connection (label `ipv6`) before IPv6 flows were steered.
    MixedFamily,
    /// No free port in the reserved range.
    NoPort,
    /// `STEER_FLOWS` is full.
    MapFull,
    /// Another map operation failed.
    MapError,
    /// The raw socket could not send.
    RawSocket,
    /// TCP_REPAIR or the socket facts could not be read.
    Repair,
    /// R holds bytes beyond the ClientHello the router read.
    LeftoverBytes,
    /// No answer from the pod within the wait, after two SYNs.
    NoAnswer,
    /// The pod answered with a RST.
    PodRst,
    /// The pod's SYN-ACK does not fit leg A (acknowledgement or options).
    BadAnswer,
    /// The pod never acknowledged the whole ClientHello, and nothing of it reached the client.
    NotAcked,
    /// The pod never acknowledged the whole ClientHello after some of its packets reached the client:
    /// the flow is lost (R closed with a RST).
    ReplayUnacked,
    /// `steer_ingress` could not be attached to the interface the pod is reached by.
    PodInterface,
}

impl Fallback {
    /// Every reason, in the order of their slots in the pinned `STEER_FALLBACKS` array (append only:
    /// a slot keeps its meaning across router versions that adopt each other's pins).
    pub const ALL: [Fallback; 15] = [
        Fallback::NoSyn,
        Fallback::ProxyProtocol,
        Fallback::MixedFamily,
        Fallback::NoPort,
        Fallback::MapFull,
        Fallback::MapError,
        Fallback::RawSocket,
        Fallback::Repair,
        Fallback::LeftoverBytes,
        Fallback::NoAnswer,
        Fallback::PodRst,
        Fallback::BadAnswer,
        Fallback::NotAcked,
        Fallback::ReplayUnacked,
        Fallback::PodInterface,
    ];

    /// The reason's slot in `STEER_FALLBACKS`.
    pub fn slot(self) -> u32 {
        Fallback::ALL.iter().position(|reason| *reason == self).unwrap_or(0) as u32
    }

    pub fn label(self) -> &'static str {
        match self {
            Fallback::NoSyn => "no_syn",
            Fallback::ProxyProtocol => "proxy_protocol",
            Fallback::MixedFamily => "mixed_family",
            Fallback::NoPort => "no_port",
            Fallback::MapFull => "map_full",
            Fallback::MapError => "map_error",
            Fallback::RawSocket => "raw_socket",
            Fallback::Repair => "repair",
            Fallback::LeftoverBytes => "leftover_bytes",
            Fallback::NoAnswer => "no_answer",
            Fallback::PodRst => "pod_rst",
            Fallback::BadAnswer => "bad_answer",
            Fallback::NotAcked => "not_acked",
            Fallback::ReplayUnacked => "replay_unacked",
            Fallback::PodInterface => "pod_interface",
        }
    }

    /// Whether the connection is lost instead of carried by the userspace relay.
    pub fn is_fatal(self) -> bool {
        self == Fallback::ReplayUnacked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_own_slot_within_the_pinned_array() {
        let mut slots: Vec<u32> = Fallback::ALL.iter().map(|reason| reason.slot()).collect();
        slots.dedup();
        assert_eq!(slots.len(), Fallback::ALL.len());
        assert!(Fallback::ALL.len() as u32 <= super::super::STEER_FALLBACK_SLOTS);
        assert_eq!(Fallback::MixedFamily.slot(), 2, "the slot the `ipv6` reason had");
        assert_eq!(Fallback::ReplayUnacked.slot(), 13);
        assert_eq!(Fallback::PodInterface.slot(), 14);
    }
}
