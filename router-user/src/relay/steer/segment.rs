//! The raw IPv4 or IPv6 + TCP segments the router sends on leg B from its raw socket: the SYN
//! carrying the client's own options, the ACKs carrying the held ClientHello, and the RST that
//! abandons the leg. Pure byte building with the checksums filled in (IPv6 has no header checksum;
//! its TCP pseudo-header carries the 128-bit addresses, RFC 8200 section 8.1).

use std::net::IpAddr;

/// TCP header flags used here.
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_PSH: u8 = 0x08;
pub const TCP_ACK: u8 = 0x10;

const IPV4_HEADER: usize = 20;
const IPV6_HEADER: usize = 40;
const TCP_HEADER: usize = 20;
/// IPv4 "don't fragment": leg B's segments are sized to fit, as the kernel's own would be.
const DONT_FRAGMENT: u16 = 0x4000;
const TTL: u8 = 64;
const PROTO_TCP: u8 = 6;

/// Option kinds (RFC 9293, RFC 7323, RFC 2018).
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;
const OPT_WSCALE: u8 = 3;
const OPT_SACK_PERMITTED: u8 = 4;
const OPT_TIMESTAMPS: u8 = 8;

/// Bytes the timestamp option takes in a segment after the handshake (with its two NOPs).
pub const TIMESTAMP_OPTION_BYTES: usize = 12;

/// The TCP options of one segment. A SYN carries all it has; later segments only timestamps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    /// (TSval, TSecr).
    pub timestamps: Option<(u32, u32)>,
}

/// One segment to build: addresses, ports, sequence space, flags, window, options and payload.
/// `src` and `dst` are of one family (the setup only builds segments within one).
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub options: TcpOptions,
    pub payload: &'a [u8],
}

impl TcpOptions {
    /// The options in wire form, padded to a multiple of 4 bytes (Linux's order: MSS, SACK-permitted
    /// with timestamps, window scale).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(20);
        if let Some(mss) = self.mss {
            out.extend_from_slice(&[OPT_MSS, 4]);
            out.extend_from_slice(&mss.to_be_bytes());
        }
        match (self.sack_permitted, self.timestamps) {
            (true, Some(ts)) => {
                out.extend_from_slice(&[OPT_SACK_PERMITTED, 2]);
                push_timestamps(&mut out, ts);
            }
            (false, Some(ts)) => {
                out.extend_from_slice(&[OPT_NOP, OPT_NOP]);
                push_timestamps(&mut out, ts);
            }
            (true, None) => out.extend_from_slice(&[OPT_NOP, OPT_NOP, OPT_SACK_PERMITTED, 2]),
            (false, None) => {}
        }
        if let Some(shift) = self.wscale {
            out.extend_from_slice(&[OPT_NOP, OPT_WSCALE, 3, shift]);
        }
        out
    }
}

fn push_timestamps(out: &mut Vec<u8>, (tsval, tsecr): (u32, u32)) {
    out.extend_from_slice(&[OPT_TIMESTAMPS, 10]);
    out.extend_from_slice(&tsval.to_be_bytes());
    out.extend_from_slice(&tsecr.to_be_bytes());
}

impl Segment<'_> {
    /// The whole IP packet: IPv4 or IPv6 header (by the addresses' family), TCP header, options,
    /// payload, every checksum set. Mixed families build an IPv4 packet with the IPv4 addresses
    /// unspecified, which no caller does.
    pub fn build(&self) -> Vec<u8> {
        let options = self.options.encode();
        let tcp_len = TCP_HEADER + options.len() + self.payload.len();
        let (mut packet, pseudo) = match (self.src, self.dst) {
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                let mut packet = Vec::with_capacity(IPV6_HEADER + tcp_len);
                // Version 6, traffic class 0, flow label 0.
                packet.extend_from_slice(&[0x60, 0, 0, 0]);
                packet.extend_from_slice(&u16::try_from(tcp_len).unwrap_or(u16::MAX).to_be_bytes());
                packet.extend_from_slice(&[PROTO_TCP, TTL]);
                packet.extend_from_slice(&src.octets());
                packet.extend_from_slice(&dst.octets());
                (packet, pseudo_header(&src.octets(), &dst.octets(), tcp_len))
            }
            (src, dst) => {
                let (src, dst) = (v4_octets(src), v4_octets(dst));
                let total = IPV4_HEADER + tcp_len;
                let mut packet = Vec::with_capacity(total);
                packet.push(0x45);
                packet.push(0);
                packet.extend_from_slice(&u16::try_from(total).unwrap_or(u16::MAX).to_be_bytes());
                packet.extend_from_slice(&[0, 0]);
                packet.extend_from_slice(&DONT_FRAGMENT.to_be_bytes());
                packet.extend_from_slice(&[TTL, PROTO_TCP, 0, 0]);
                packet.extend_from_slice(&src);
                packet.extend_from_slice(&dst);
                let ip_checksum = checksum(&[&packet[..IPV4_HEADER]]);
                packet[10..12].copy_from_slice(&ip_checksum.to_be_bytes());
                (packet, pseudo_header(&src, &dst, tcp_len))
            }
        };
        let ip_header = packet.len();

        packet.extend_from_slice(&self.src_port.to_be_bytes());
        packet.extend_from_slice(&self.dst_port.to_be_bytes());
        packet.extend_from_slice(&self.seq.to_be_bytes());
        packet.extend_from_slice(&self.ack.to_be_bytes());
        let data_offset = u8::try_from((TCP_HEADER + options.len()) / 4).unwrap_or(15);
        packet.push(data_offset << 4);
        packet.push(self.flags);
        packet.extend_from_slice(&self.window.to_be_bytes());
        packet.extend_from_slice(&[0, 0, 0, 0]);
        packet.extend_from_slice(&options);
        packet.extend_from_slice(self.payload);

        let tcp_checksum = checksum(&[&pseudo, &packet[ip_header..]]);
        packet[ip_header + 16..ip_header + 18].copy_from_slice(&tcp_checksum.to_be_bytes());
        packet
    }
}

/// An IPv4 address's octets (an IPv4-mapped IPv6 one's too); unspecified for any other IPv6 address.
fn v4_octets(ip: IpAddr) -> [u8; 4] {
    match ip.to_canonical() {
        IpAddr::V4(v4) => v4.octets(),
        IpAddr::V6(_) => [0; 4],
    }
}

/// The pseudo-header the TCP checksum covers, as a sum of words: both addresses (4 or 16 bytes),
/// the protocol and the TCP length. IPv4's 12 bytes (zero, protocol, 16-bit length) and IPv6's 40
/// (32-bit length, three zeros, next header) add up to the same sum for lengths below 65,536, so
/// one layout serves both: the addresses, then zero, protocol, length.
fn pseudo_header(src: &[u8], dst: &[u8], tcp_len: usize) -> Vec<u8> {
    let mut pseudo = Vec::with_capacity(src.len() + dst.len() + 4);
    pseudo.extend_from_slice(src);
    pseudo.extend_from_slice(dst);
    pseudo.extend_from_slice(&[0, PROTO_TCP]);
    pseudo.extend_from_slice(&u16::try_from(tcp_len).unwrap_or(u16::MAX).to_be_bytes());
    pseudo
}

/// The Internet checksum (RFC 1071) over the concatenation of `parts`, each of even length except
/// possibly the last.
fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u64 = 0;
    for part in parts {
        let mut words = part.chunks_exact(2);
        for word in &mut words {
            sum += u64::from(u16::from_be_bytes([word[0], word[1]]));
        }
        if let [last] = words.remainder() {
            sum += u64::from(u16::from_be_bytes([*last, 0]));
        }
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(10, 1, 2, 3);
    const DST: Ipv4Addr = Ipv4Addr::new(10, 9, 8, 7);
    const SRC6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x211, 1, 0, 0, 0, 0, 1);
    const DST6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x211, 1, 0, 0, 0, 0, 2);

    /// Verifies a checksummed range the receiver's way: the one's-complement sum of every 16-bit
    /// word, checksum included, is all ones. Written separately from [`checksum`] on purpose.
    fn sums_to_all_ones(bytes: &[u8]) -> bool {
        let mut sum: u32 = 0;
        let mut i = 0;
        while i < bytes.len() {
            let hi = u32::from(bytes[i]) << 8;
            let lo = bytes.get(i + 1).map_or(0, |b| u32::from(*b));
            sum += hi | lo;
            sum = (sum & 0xffff) + (sum >> 16);
            i += 2;
        }
        sum == 0xffff
    }

    fn tcp_verifies(packet: &[u8]) -> bool {
        let mut with_pseudo = Vec::new();
        with_pseudo.extend_from_slice(&packet[12..20]);
        with_pseudo.extend_from_slice(&[0, 6]);
        let tcp_len = packet.len() - 20;
        with_pseudo.extend_from_slice(&(tcp_len as u16).to_be_bytes());
        with_pseudo.extend_from_slice(&packet[20..]);
        sums_to_all_ones(&with_pseudo)
    }

    /// The receiver's check of an IPv6 segment, written out from RFC 8200 section 8.1: source,
    /// destination, 32-bit upper-layer length, three zero bytes, next header 6, then the segment.
    fn tcp6_verifies(packet: &[u8]) -> bool {
        let tcp_len = packet.len() - 40;
        let mut with_pseudo = Vec::new();
        with_pseudo.extend_from_slice(&packet[8..40]);
        with_pseudo.extend_from_slice(&(tcp_len as u32).to_be_bytes());
        with_pseudo.extend_from_slice(&[0, 0, 0, 6]);
        with_pseudo.extend_from_slice(&packet[40..]);
        sums_to_all_ones(&with_pseudo)
    }

    fn segment(flags: u8, options: TcpOptions, payload: &[u8]) -> Segment<'_> {
        Segment {
            src: IpAddr::V4(SRC),
            dst: IpAddr::V4(DST),
            src_port: 61_000,
            dst_port: 8443,
            seq: 0xffff_fff0,
            ack: 0x0102_0304,
            flags,
            window: 64_240,
            options,
            payload,
        }
    }

    #[test]
    fn syn_carries_the_clients_options_and_valid_checksums() {
        let options =
            TcpOptions { mss: Some(1460), wscale: Some(7), sack_permitted: true, timestamps: Some((123_456, 0)) };
        let packet = segment(TCP_SYN, options, &[]).build();
        assert_eq!(packet.len(), 20 + 20 + 20, "MSS 4 + SACK/TS 12 + WS 4 option bytes");
        assert_eq!(packet[0], 0x45);
        assert_eq!(u16::from_be_bytes([packet[2], packet[3]]) as usize, packet.len());
        assert_eq!(packet[9], 6, "TCP");
        assert_eq!(&packet[12..16], &SRC.octets());
        assert_eq!(&packet[16..20], &DST.octets());
        assert!(sums_to_all_ones(&packet[..20]), "IPv4 header checksum");
        assert!(tcp_verifies(&packet), "TCP checksum");
        let tcp = &packet[20..];
        assert_eq!(u16::from_be_bytes([tcp[0], tcp[1]]), 61_000);
        assert_eq!(u16::from_be_bytes([tcp[2], tcp[3]]), 8443);
        assert_eq!(u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]), 0xffff_fff0);
        assert_eq!(tcp[12] >> 4, 10, "data offset: 40 bytes");
        assert_eq!(tcp[13], TCP_SYN);
        assert_eq!(&tcp[20..24], &[2, 4, 0x05, 0xb4], "MSS 1460");
        assert_eq!(&tcp[24..28], &[4, 2, 8, 10], "SACK-permitted then timestamps");
        assert_eq!(u32::from_be_bytes([tcp[28], tcp[29], tcp[30], tcp[31]]), 123_456, "TSval");
        assert_eq!(&tcp[32..36], &[0, 0, 0, 0], "TSecr 0");
        assert_eq!(&tcp[36..40], &[1, 3, 3, 7], "window scale 7");
    }

    #[test]
    fn option_sets_without_timestamps_or_sack_stay_aligned() {
        for options in [
            TcpOptions::default(),
            TcpOptions { mss: Some(1400), ..TcpOptions::default() },
            TcpOptions { sack_permitted: true, ..TcpOptions::default() },
            TcpOptions { timestamps: Some((1, 2)), ..TcpOptions::default() },
            TcpOptions { wscale: Some(14), ..TcpOptions::default() },
        ] {
            let encoded = options.encode();
            assert_eq!(encoded.len() % 4, 0, "{options:?}: {encoded:?}");
            let packet = segment(TCP_SYN, options, &[]).build();
            assert!(tcp_verifies(&packet), "{options:?}");
        }
    }

    #[test]
    fn ack_with_an_odd_payload_checksums() {
        let payload: Vec<u8> = (0..=254u8).collect();
        let options = TcpOptions { timestamps: Some((7, 0xdead_beef)), ..TcpOptions::default() };
        let packet = segment(TCP_ACK | TCP_PSH, options, &payload).build();
        assert_eq!(packet.len(), 20 + 20 + TIMESTAMP_OPTION_BYTES + payload.len());
        assert!(sums_to_all_ones(&packet[..20]));
        assert!(tcp_verifies(&packet), "TCP checksum over an odd-length payload");
        assert_eq!(&packet[52..], &payload[..], "payload after the options");
        let mut corrupted = packet.clone();
        corrupted[60] ^= 1;
        assert!(!tcp_verifies(&corrupted), "the check can fail");
    }

    #[test]
    fn rst_has_no_options_and_verifies() {
        let packet = segment(TCP_RST | TCP_ACK, TcpOptions::default(), &[]).build();
        assert_eq!(packet.len(), 40);
        assert_eq!(packet[33], TCP_RST | TCP_ACK);
        assert!(sums_to_all_ones(&packet[..20]));
        assert!(tcp_verifies(&packet));
    }

    #[test]
    fn ipv6_segments_have_the_fixed_header_and_a_pseudo_header_over_both_addresses() {
        let options =
            TcpOptions { mss: Some(1440), wscale: Some(7), sack_permitted: true, timestamps: Some((123_456, 0)) };
        let payload: Vec<u8> = (0..=254u8).collect();
        for (flags, payload) in [(TCP_SYN, &[][..]), (TCP_ACK | TCP_PSH, &payload[..])] {
            let segment = Segment { src: IpAddr::V6(SRC6), dst: IpAddr::V6(DST6), ..segment(flags, options, payload) };
            let packet = segment.build();
            assert_eq!(packet.len(), 40 + 20 + 20 + payload.len());
            assert_eq!(&packet[..4], &[0x60, 0, 0, 0], "version 6, no traffic class or flow label");
            assert_eq!(u16::from_be_bytes([packet[4], packet[5]]) as usize, packet.len() - 40, "payload length");
            assert_eq!((packet[6], packet[7]), (6, 64), "next header TCP, hop limit 64");
            assert_eq!(&packet[8..24], &SRC6.octets());
            assert_eq!(&packet[24..40], &DST6.octets());
            assert_eq!(packet[53], flags);
            assert!(tcp6_verifies(&packet), "TCP checksum over the IPv6 pseudo-header");
            let mut corrupted = packet.clone();
            corrupted[39] ^= 1;
            assert!(!tcp6_verifies(&corrupted), "the destination address is covered");
        }
    }
}
