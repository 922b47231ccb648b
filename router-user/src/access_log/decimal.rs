//! Numbers written in decimal straight into a line's buffer, without the formatting machinery (a line has
//! a dozen of them), two digits per division.

/// "00" to "99", two bytes each.
const PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// `value` in decimal, left-padded with zeros to `width` digits.
pub fn push_padded(out: &mut Vec<u8>, value: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut at = digits.len();
    let mut rest = value;
    while rest >= 100 {
        let pair = (rest % 100) as usize * 2;
        rest /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if rest >= 10 {
        let pair = rest as usize * 2;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        digits[at] = b'0' + rest as u8;
    }
    let start = at.min(digits.len() - width.min(digits.len()));
    // A few bytes: pushed one by one rather than through a call to memcpy.
    out.reserve(digits.len() - start);
    for &digit in &digits[start..] {
        out.push(digit);
    }
}

/// `value` in decimal.
pub fn push_unsigned(out: &mut Vec<u8>, value: u64) {
    push_padded(out, value, 1);
}

/// `value` in decimal, with a `-` when negative.
pub fn push_signed(out: &mut Vec<u8>, value: i64) {
    if value < 0 {
        out.push(b'-');
    }
    push_unsigned(out, value.unsigned_abs());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_formatted_ones() {
        for value in [0i64, 1, -1, 9, 10, 11, 99, 100, 101, 999, 1000, 12_345, -404, 1_000_000, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            push_signed(&mut out, value);
            assert_eq!(out, value.to_string().as_bytes());
        }
        for (value, width) in
            [(0u64, 3), (7, 3), (10, 3), (724, 3), (1234, 3), (5, 6), (160_234, 6), (u64::MAX, 2), (9, 20)]
        {
            let mut out = Vec::new();
            push_padded(&mut out, value, width);
            assert_eq!(String::from_utf8(out).expect("ascii"), format!("{value:0width$}"));
        }
        // Every pair of the table, at every position of a number up to six digits.
        let mut out = Vec::new();
        for value in 0..1_000_000u64 {
            out.clear();
            push_unsigned(&mut out, value);
            assert_eq!(out, value.to_string().as_bytes());
        }
    }
}
