//! Packet fixtures run through the real `xdp_front` with `BPF_PROG_TEST_RUN` (root only; no
//! interface, no pins): each fixture must be passed and land in the expected counters.

use aya::{
    programs::{TestRun as _, TestRunOptions},
    Ebpf,
};
use router_common::maps::XDP_STATS;

use super::{counters::StatsMap, loader, object::OBJECT, XdpCounters};

const XDP_PASS: u32 = 2;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_ARP: u16 = 0x0806;
const ETH_P_8021Q: u16 = 0x8100;
const TCP: u8 = 6;
const UDP: u8 = 17;

fn eth(ether_type: u16) -> Vec<u8> {
    let mut frame = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    frame.extend_from_slice(&ether_type.to_be_bytes());
    frame
}

/// An IPv4 header with `ihl` words (options zero-filled) and the given fragment field.
fn ipv4(protocol: u8, ihl: u8, frag_off: u16) -> Vec<u8> {
    let mut header = vec![0x40 | ihl, 0, 0, 0, 0, 0];
    header.extend_from_slice(&frag_off.to_be_bytes());
    header.extend_from_slice(&[64, protocol, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    header.resize(usize::from(ihl.max(5)) * 4, 0);
    header
}

fn ipv6(next_header: u8) -> Vec<u8> {
    let mut header = vec![0x60, 0, 0, 0, 0, 20, next_header, 64];
    header.resize(40, 0);
    header
}

/// A TCP header with `data_offset` words (SYN set).
fn tcp(data_offset: u8) -> Vec<u8> {
    let mut header = vec![0x30, 0x39, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, data_offset << 4, 0x02];
    header.resize(20, 0);
    header
}

fn packet(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

/// What one packet must add to the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Ipv4,
    Ipv6,
    Other,
    Unparsed,
}

fn fixtures() -> Vec<(&'static str, Vec<u8>, Class, bool)> {
    let mut short_options = packet(&[eth(ETH_P_IP), ipv4(TCP, 15, 0)]);
    short_options.truncate(14 + 40); // IHL says 60 bytes, 40 present
    let mut short_tcp = packet(&[eth(ETH_P_IP), ipv4(TCP, 5, 0), tcp(5)]);
    short_tcp.truncate(14 + 20 + 10);
    let mut short_ipv4 = packet(&[eth(ETH_P_IP), ipv4(TCP, 5, 0)]);
    short_ipv4.truncate(14 + 10);
    let mut bad_ipv6 = packet(&[eth(ETH_P_IPV6), ipv6(TCP), tcp(5)]);
    bad_ipv6[14] = 0x40; // version 4 in an IPv6 EtherType
    vec![
        ("ipv4 tcp syn", packet(&[eth(ETH_P_IP), ipv4(TCP, 5, 0), tcp(5)]), Class::Ipv4, true),
        ("ipv4 with options, tcp", packet(&[eth(ETH_P_IP), ipv4(TCP, 8, 0), tcp(6)]), Class::Ipv4, true),
        ("ipv4 udp", packet(&[eth(ETH_P_IP), ipv4(UDP, 5, 0), vec![0; 8]]), Class::Ipv4, false),
        (
            "ipv4 non-first fragment of tcp",
            packet(&[eth(ETH_P_IP), ipv4(TCP, 5, 0x00b9), vec![0; 8]]),
            Class::Ipv4,
            false,
        ),
        ("ipv6 tcp", packet(&[eth(ETH_P_IPV6), ipv6(TCP), tcp(5)]), Class::Ipv6, true),
        ("ipv6 udp", packet(&[eth(ETH_P_IPV6), ipv6(UDP), vec![0; 8]]), Class::Ipv6, false),
        ("arp", packet(&[eth(ETH_P_ARP), vec![0; 28]]), Class::Other, false),
        (
            "vlan-tagged ipv4",
            packet(&[eth(ETH_P_8021Q), vec![0, 1, 0x08, 0], ipv4(TCP, 5, 0), tcp(5)]),
            Class::Other,
            false,
        ),
        ("ipv4 cut inside the header", short_ipv4, Class::Unparsed, false),
        ("ipv4 cut inside its options", short_options, Class::Unparsed, false),
        ("ipv4 ihl < 5", packet(&[eth(ETH_P_IP), ipv4(TCP, 4, 0), tcp(5)]), Class::Unparsed, false),
        ("tcp cut short", short_tcp, Class::Unparsed, false),
        ("tcp data offset < 5", packet(&[eth(ETH_P_IP), ipv4(TCP, 5, 0), tcp(4)]), Class::Unparsed, false),
        ("ipv6 ethertype, version 4", bad_ipv6, Class::Unparsed, false),
        ("ipv6 cut inside the header", packet(&[eth(ETH_P_IPV6), vec![0x60; 20]]), Class::Unparsed, false),
    ]
}

fn delta(after: XdpCounters, before: XdpCounters) -> XdpCounters {
    XdpCounters {
        total: after.total - before.total,
        ipv4: after.ipv4 - before.ipv4,
        ipv6: after.ipv6 - before.ipv6,
        tcp: after.tcp - before.tcp,
        other: after.other - before.other,
        unparsed: after.unparsed - before.unparsed,
        total_bytes: after.total_bytes - before.total_bytes,
    }
}

#[test]
fn every_fixture_is_passed_and_counted_in_its_class() {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: BPF_PROG_TEST_RUN needs root");
        return;
    }
    let mut ebpf = Ebpf::load(OBJECT).expect("load the embedded object");
    let program = loader::xdp_program(&mut ebpf).expect("xdp_front");
    program.load().expect("verifier accepts xdp_front");
    let stats = StatsMap::new(ebpf.take_map(XDP_STATS).expect("stats map")).expect("typed map");
    let program = loader::xdp_program(&mut ebpf).expect("xdp_front");

    for (name, frame, class, is_tcp) in fixtures() {
        let before = stats.read().expect("read counters");
        let run = program
            .test_run(TestRunOptions { data_in: Some(&frame), ..TestRunOptions::default() })
            .unwrap_or_else(|err| panic!("{name}: test run: {err}"));
        assert_eq!(run.return_value, XDP_PASS, "{name}: verdict");
        let got = delta(stats.read().expect("read counters"), before);
        let one = |c: Class| u64::from(class == c);
        let want = XdpCounters {
            total: 1,
            ipv4: one(Class::Ipv4),
            ipv6: one(Class::Ipv6),
            tcp: u64::from(is_tcp),
            other: one(Class::Other),
            unparsed: one(Class::Unparsed),
            total_bytes: frame.len() as u64,
        };
        assert_eq!(got, want, "{name}: counters");
    }
}
