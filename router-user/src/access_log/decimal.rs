//! Numbers written in decimal straight into a line's buffer, without the formatting machinery (a line has
//! a dozen of them).

/// Text buffers a line is written into.
pub trait Push {
    fn push_bytes(&mut self, bytes: &[u8]);
}

impl Push for Vec<u8> {
    fn push_bytes(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Push for String {
    fn push_bytes(&mut self, bytes: &[u8]) {
        // Only ASCII digits and '-' are pushed.
        self.push_str(std::str::from_utf8(bytes).unwrap_or_default());
    }
}

/// `value` in decimal, left-padded with zeros to `width` digits.
pub fn push_padded(out: &mut impl Push, value: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut at = digits.len();
    let mut rest = value;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let start = at.min(digits.len() - width.min(digits.len()));
    out.push_bytes(&digits[start..]);
}

/// `value` in decimal.
pub fn push_unsigned(out: &mut impl Push, value: u64) {
    push_padded(out, value, 1);
}

/// `value` in decimal, with a `-` when negative.
pub fn push_signed(out: &mut impl Push, value: i64) {
    if value < 0 {
        out.push_bytes(b"-");
    }
    push_unsigned(out, value.unsigned_abs());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_formatted_ones() {
        for value in [0i64, 1, -1, 9, 10, 99, 100, 12_345, -404, i64::MAX, i64::MIN] {
            let mut out = String::new();
            push_signed(&mut out, value);
            assert_eq!(out, value.to_string());
        }
        for (value, width) in [(0u64, 3), (7, 3), (724, 3), (1234, 3), (5, 6), (160_234, 6), (u64::MAX, 2)] {
            let mut out = Vec::new();
            push_padded(&mut out, value, width);
            assert_eq!(String::from_utf8(out).expect("ascii"), format!("{value:0width$}"));
        }
    }
}
