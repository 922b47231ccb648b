//! The programs' debug records through aya-log, with `BPF_PROG_TEST_RUN` (root only): with debug
//! records on, a frame `xdp_front` cannot parse and an IPv4 fragment each leave one record naming
//! what happened; an ordinary TCP segment leaves none; with them off (the default) nothing is
//! written, and the verifier walks no more instructions for the records than without them.

use std::sync::{Arc, Mutex};

use aya::programs::Xdp;
use aya::Ebpf;
use aya_log::EbpfLogger;

use super::{loader, packet_tests::is_root, packet_tests::run};

/// The records aya-log hands over, as `level: message`.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<String>>>);

impl log::Log for Captured {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let line = format!("{}: {}", record.level(), record.args());
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(line);
    }

    fn flush(&self) {}
}

impl Captured {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

/// The object loaded with debug records on or off, a reader of its `AYA_LOGS`, and what it read.
fn loaded(debug_log: bool) -> (Ebpf, EbpfLogger<Captured>, Captured) {
    let mut ebpf = loader::load_with(1024, None, debug_log).expect("the object loads");
    let captured = Captured::default();
    let logger = EbpfLogger::init_with_logger(&mut ebpf, captured.clone()).expect("AYA_LOGS");
    (ebpf, logger, captured)
}

/// `frame` through `xdp_front`, then every record it wrote (the ring buffer is written before the
/// test run returns, so one read after it sees them all).
fn records(ebpf: &Ebpf, logger: &mut EbpfLogger<Captured>, captured: &Captured, frame: &[u8]) -> Vec<String> {
    let program: &Xdp = ebpf.program("xdp_front").expect("xdp_front").try_into().expect("an XDP program");
    let _ = run(program, frame);
    logger.flush();
    captured.take()
}

fn verified(ebpf: &Ebpf) -> u32 {
    let program: &Xdp = ebpf.program("xdp_front").expect("xdp_front").try_into().expect("an XDP program");
    program.info().expect("program info").verified_instruction_count().expect("kernel >= 5.16")
}

/// Ethernet + IPv4 (no options, fragment field `frag_off`) + a 20-byte TCP header, 10.0.0.1:40000 ->
/// 10.0.0.2:443. Checksums are not read by the records' paths.
fn ipv4_tcp(frag_off: u16) -> Vec<u8> {
    let mut frame = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
    let total = 40u16.to_be_bytes();
    let frag = frag_off.to_be_bytes();
    frame.extend_from_slice(&[
        0x45, 0, total[0], total[1], 0, 1, frag[0], frag[1], 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    let (src, dst) = (40000u16.to_be_bytes(), 443u16.to_be_bytes());
    frame.extend_from_slice(&[
        src[0], src[1], dst[0], dst[1], 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0,
    ]);
    frame
}

#[test]
fn with_debug_records_on_unusual_frames_are_recorded_and_ordinary_ones_are_not() {
    if !is_root() {
        eprintln!("skipping: BPF_PROG_TEST_RUN needs root");
        return;
    }
    let (ebpf, mut logger, captured) = loaded(true);
    let cut_short = ipv4_tcp(0)[..20].to_vec();
    let unparsed = records(&ebpf, &mut logger, &captured, &cut_short);
    assert_eq!(unparsed.len(), 1, "{unparsed:?}");
    assert!(unparsed[0].starts_with("DEBUG: xdp_front: a packet unparsed (cut short"), "{unparsed:?}");
    let more_fragments = 0x2000;
    let fragment = records(&ebpf, &mut logger, &captured, &ipv4_tcp(more_fragments));
    assert_eq!(fragment.len(), 1, "{fragment:?}");
    assert!(fragment[0].contains("an IP fragment passed"), "{fragment:?}");
    let ordinary = records(&ebpf, &mut logger, &captured, &ipv4_tcp(0));
    assert!(ordinary.is_empty(), "an ordinary segment is not recorded: {ordinary:?}");
}

#[test]
fn with_debug_records_off_nothing_is_written_and_the_verifier_drops_them() {
    if !is_root() {
        eprintln!("skipping: BPF_PROG_TEST_RUN needs root");
        return;
    }
    let (ebpf, mut logger, captured) = loaded(false);
    let cut_short = ipv4_tcp(0)[..20].to_vec();
    assert!(records(&ebpf, &mut logger, &captured, &cut_short).is_empty());
    assert!(records(&ebpf, &mut logger, &captured, &ipv4_tcp(0x2000)).is_empty());
    let (off, on) = (verified(&ebpf), verified(&loaded(true).0));
    eprintln!("xdp_front: the verifier walked {off} instructions with debug records off, {on} with them on");
    assert!(off < on, "the records are pruned when off ({off} vs {on})");
}
