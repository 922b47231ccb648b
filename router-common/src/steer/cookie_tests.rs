extern crate std;

use std::vec::Vec;

use super::*;

const KEY: CookieKey = CookieKey { k0: 0x0706_0504_0302_0100, k1: 0x0f0e_0d0c_0b0a_0908 };

fn mapped(v4: [u8; 4]) -> [u8; 16] {
    let mut addr = [0u8; 16];
    addr[10] = 0xff;
    addr[11] = 0xff;
    addr[12..].copy_from_slice(&v4);
    addr
}

fn flow() -> CookieFlow {
    CookieFlow {
        client_addr: mapped([192, 0, 2, 7]),
        node_addr: mapped([10, 0, 0, 1]),
        client_port: 51_508,
        node_port: 443,
        client_isn: 0x1234_5678,
    }
}

/// A fixed pseudo-random sequence (xorshift64*), so that every run checks the same values.
fn numbers(seed: u64) -> impl Iterator<Item = u64> {
    let mut state = seed;
    std::iter::repeat_with(move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

#[test]
#[allow(deprecated)] // std's SipHasher is SipHash-2-4: the reference this one must equal.
fn the_hash_is_siphash_2_4_of_the_words_little_endian_bytes() {
    use std::hash::Hasher;
    let mut random = numbers(0x5eed);
    let mut next = || random.next().expect("an endless sequence");
    for _ in 0..1_000 {
        let key = CookieKey { k0: next(), k1: next() };
        let message: [u64; 6] = core::array::from_fn(|_| next());
        let mut reference = std::hash::SipHasher::new_with_keys(key.k0, key.k1);
        for word in message {
            reference.write(&word.to_le_bytes());
        }
        assert_eq!(siphash24(&key, &message), reference.finish(), "{key:?} {message:x?}");
    }
}

#[test]
fn a_cookie_checks_in_its_counter_unit_and_the_next_and_gives_back_the_mss() {
    let counter = counter_of(3_000 * 1_000_000_000);
    for (mss, expected) in [(1460, 1460), (1400, 1360), (9000, 8940), (100, 536), (1220, 1220)] {
        let issued = cookie(&KEY, &flow(), counter, mss_index(mss));
        assert_eq!(check(&KEY, &flow(), counter, issued), Some(expected), "mss {mss}");
        assert_eq!(check(&KEY, &flow(), counter + 1, issued), Some(expected), "one unit later");
        assert_eq!(check(&KEY, &flow(), counter + 2, issued), None, "two units later");
        assert_eq!(check(&KEY, &flow(), counter - 1, issued), None, "issued in the future");
    }
}

#[test]
fn a_cookie_is_bound_to_every_field_of_the_handshake_and_to_the_key() {
    let counter = 7;
    let issued = cookie(&KEY, &flow(), counter, mss_index(1460));
    let mut others = Vec::new();
    let mut changed = flow();
    changed.client_addr[15] ^= 1;
    others.push(changed);
    let mut changed = flow();
    changed.node_addr[0] ^= 0x80;
    others.push(changed);
    others.push(CookieFlow { client_port: flow().client_port + 1, ..flow() });
    others.push(CookieFlow { node_port: 80, ..flow() });
    others.push(CookieFlow { client_isn: flow().client_isn + 1, ..flow() });
    for other in others {
        assert_eq!(check(&KEY, &other, counter, issued), None, "{other:?}");
    }
    let other_key = CookieKey { k0: KEY.k0 ^ 1, ..KEY };
    assert_eq!(check(&other_key, &flow(), counter, issued), None);
    // The MSS index is covered by the hash: a cookie with another index does not check.
    assert_eq!(check(&KEY, &flow(), counter, issued ^ 1), None);
}

#[test]
fn guessed_cookies_do_not_check() {
    // 29 bits of hash in each of two units: a guess passes with odds of 2^-28; none of 100,000 fixed ones does.
    let counter = 1_000;
    let accepted =
        numbers(0xc00c1e).take(100_000).filter(|&guess| check(&KEY, &flow(), counter, guess as u32).is_some());
    assert_eq!(accepted.count(), 0);
}

#[test]
fn the_options_go_out_in_the_tsval_and_come_back_in_the_tsecr() {
    let now = 0xdead_beef;
    for wscale in [None, Some(0), Some(7), Some(14)] {
        for (sack, ecn) in [(false, false), (true, false), (false, true), (true, true)] {
            let options = CookieOptions { wscale, sack, ecn };
            let tsval = tsval_with(now, options);
            assert_eq!(tsval & !0x3f, now & !0x3f, "only the low bits change");
            assert_eq!(options_from_tsecr(tsval), options);
        }
    }
    // A shift no peer may send (RFC 7323 caps it at 14) comes back as no scaling, not as another shift.
    let odd = tsval_with(now, CookieOptions { wscale: Some(15), sack: true, ecn: false });
    assert_eq!(options_from_tsecr(odd), CookieOptions { wscale: None, sack: true, ecn: false });
}

#[test]
fn the_counter_unit_is_2_to_the_36_nanoseconds() {
    assert_eq!(counter_of((1 << 36) - 1), 0);
    assert_eq!(counter_of(1 << 36), 1);
    assert_eq!(counter_of(u64::MAX), u32::MAX >> 4);
}
