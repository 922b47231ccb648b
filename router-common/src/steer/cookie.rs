//! SYN cookies of the project's own format, for a handshake answered by the datapath (`docs/steering.md`,
//! "Design: the setup in the kernel", increment (a); nothing calls this yet).
//!
//! The kernel's own cookies (`bpf_tcp_raw_gen_syncookie_*`) cannot be used there: their check says only whether a
//! cookie is valid, while handing the connection to a listener (`bpf_sk_assign_tcp_reqsk`) needs the MSS and
//! options the SYN carried back. So the cookie carries them, as the kernel's format does:
//!
//! - the ISN of the answer is `SipHash-2-4(key, words) & !7 | mss_index`, over six 64-bit words: the client's
//!   address, the node's address (each as 16 bytes, IPv4 as IPv4-mapped IPv6, two big-endian words), then
//!   `client_port << 48 | node_port << 32 | client_isn`, then `mss_index << 32 | counter`. Each word enters
//!   SipHash as its 8 little-endian bytes (so the hash equals SipHash-2-4 of those 48 bytes). The client's ISN
//!   is hashed so that an ACK must carry both numbers of the handshake.
//! - the time counter is CLOCK_MONOTONIC (`bpf_ktime_get_ns` in the datapath) in units of 2^36 ns (68.7 s);
//!   a cookie of the current or the previous unit is accepted.
//! - the MSS is one of [`MSS_TABLE`] (the largest not above the client's), its index in the low 3 bits and in the
//!   hash (a cookie whose index was changed does not check);
//! - window scale, SACK-permitted and ECN go in the low 6 bits of the answer's TSval, which the client echoes in
//!   TSecr (a client without timestamps gets neither window scaling nor SACK, as with the kernel's cookies).

/// The MSS values a cookie can carry, by index.
pub const MSS_TABLE: [u16; 8] = [536, 1220, 1300, 1360, 1440, 1460, 4312, 8940];

const MSS_BITS: u32 = 0b111;
/// TSval bits holding the options: window scale (4 bits, [`NO_WSCALE`] for none), SACK, ECN.
const OPTION_BITS: u32 = 0x3f;
const NO_WSCALE: u32 = 0xf;
const SACK_BIT: u32 = 1 << 4;
const ECN_BIT: u32 = 1 << 5;
/// Nanoseconds per counter unit, as a shift.
const COUNTER_SHIFT: u32 = 36;

/// The secret, rotated by the router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CookieKey {
    pub k0: u64,
    pub k1: u64,
}

/// The handshake a cookie belongs to, as the client's SYN carried it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CookieFlow {
    /// 16 bytes each; IPv4 as `::ffff:a.b.c.d`.
    pub client_addr: [u8; 16],
    pub node_addr: [u8; 16],
    pub client_port: u16,
    pub node_port: u16,
    /// The client's ISN (its SYN's sequence number).
    pub client_isn: u32,
}

/// What the client's SYN offered, as the cookie keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CookieOptions {
    pub wscale: Option<u8>,
    pub sack: bool,
    pub ecn: bool,
}

/// The counter unit of a CLOCK_MONOTONIC reading.
#[inline(always)]
pub fn counter_of(monotonic_ns: u64) -> u32 {
    (monotonic_ns >> COUNTER_SHIFT) as u32
}

/// The index of the largest [`MSS_TABLE`] value not above `mss` (0 when all are).
#[inline(always)]
pub fn mss_index(mss: u16) -> u32 {
    let mut index = 0;
    let mut at = 1;
    while at < MSS_TABLE.len() {
        if MSS_TABLE[at] <= mss {
            index = at;
        }
        at += 1;
    }
    index as u32
}

/// The ISN of the answer to `flow`'s SYN at counter unit `counter`, carrying `mss_index`.
#[inline(always)]
pub fn cookie(key: &CookieKey, flow: &CookieFlow, counter: u32, mss_index: u32) -> u32 {
    let index = mss_index & MSS_BITS;
    (siphash24(key, &words(flow, counter, index)) as u32 & !MSS_BITS) | index
}

/// The MSS a returning `cookie` (the ACK's acknowledgement number less one) stands for, if it is one this key
/// issued to `flow` in unit `counter` or the one before.
#[inline(always)]
pub fn check(key: &CookieKey, flow: &CookieFlow, counter: u32, cookie_value: u32) -> Option<u16> {
    let index = cookie_value & MSS_BITS;
    let fresh = cookie(key, flow, counter, index) == cookie_value;
    if fresh || cookie(key, flow, counter.wrapping_sub(1), index) == cookie_value {
        Some(MSS_TABLE[index as usize])
    } else {
        None
    }
}

/// The answer's TSval: `now` with its low bits replaced by `options`.
#[inline(always)]
pub fn tsval_with(now: u32, options: CookieOptions) -> u32 {
    let wscale = match options.wscale {
        Some(shift) if u32::from(shift) < NO_WSCALE => u32::from(shift),
        // RFC 7323 caps the shift at 14; anything else is kept as "no scaling" rather than wrapped.
        _ => NO_WSCALE,
    };
    let sack = if options.sack { SACK_BIT } else { 0 };
    let ecn = if options.ecn { ECN_BIT } else { 0 };
    (now & !OPTION_BITS) | wscale | sack | ecn
}

/// The options an ACK's TSecr (the echo of [`tsval_with`]) carries back.
#[inline(always)]
pub fn options_from_tsecr(tsecr: u32) -> CookieOptions {
    let wscale = tsecr & NO_WSCALE;
    CookieOptions {
        wscale: if wscale == NO_WSCALE { None } else { Some(wscale as u8) },
        sack: tsecr & SACK_BIT != 0,
        ecn: tsecr & ECN_BIT != 0,
    }
}

#[inline(always)]
fn words(flow: &CookieFlow, counter: u32, mss_index: u32) -> [u64; 6] {
    let half = |bytes: &[u8; 16], at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        u64::from_be_bytes(word)
    };
    let ports = (u64::from(flow.client_port) << 48) | (u64::from(flow.node_port) << 32) | u64::from(flow.client_isn);
    [
        half(&flow.client_addr, 0),
        half(&flow.client_addr, 8),
        half(&flow.node_addr, 0),
        half(&flow.node_addr, 8),
        ports,
        (u64::from(mss_index) << 32) | u64::from(counter),
    ]
}

/// SipHash-2-4 of the little-endian bytes of `message`'s words.
#[inline(always)]
fn siphash24(key: &CookieKey, message: &[u64; 6]) -> u64 {
    let mut v = [
        key.k0 ^ 0x736f_6d65_7073_6575,
        key.k1 ^ 0x646f_7261_6e64_6f6d,
        key.k0 ^ 0x6c79_6765_6e65_7261,
        key.k1 ^ 0x7465_6462_7974_6573,
    ];
    let mut i = 0;
    while i < message.len() {
        v[3] ^= message[i];
        round(&mut v);
        round(&mut v);
        v[0] ^= message[i];
        i += 1;
    }
    // The last block holds only the length in bytes, in its top byte.
    let last = ((message.len() as u64 * 8) & 0xff) << 56;
    v[3] ^= last;
    round(&mut v);
    round(&mut v);
    v[0] ^= last;
    v[2] ^= 0xff;
    round(&mut v);
    round(&mut v);
    round(&mut v);
    round(&mut v);
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[inline(always)]
fn round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

#[cfg(test)]
#[path = "cookie_tests.rs"]
mod tests;
