//! The DER that OCSP needs, read and written by hand: one-byte tags (every tag of RFC 6960's structures is
//! below 31), definite lengths up to four bytes, values borrowed from the input, and GeneralizedTime as
//! `SystemTime`. Reading never panics on any input.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const INTEGER: u8 = 0x02;
pub const BIT_STRING: u8 = 0x03;
pub const OCTET_STRING: u8 = 0x04;
pub const OID: u8 = 0x06;
pub const ENUMERATED: u8 = 0x0a;
pub const GENERALIZED_TIME: u8 = 0x18;
pub const SEQUENCE: u8 = 0x30;

/// Context-specific tag `n`, constructed (`[n] EXPLICIT`, or `[n] IMPLICIT` of a constructed type).
pub const fn context(n: u8) -> u8 {
    0xa0 | n
}

/// Context-specific tag `n`, primitive (`[n] IMPLICIT` of a primitive type, such as `good [0] IMPLICIT NULL`).
pub const fn context_primitive(n: u8) -> u8 {
    0x80 | n
}

/// One element: its tag, its value, and its whole encoding (tag, length and value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Element<'a> {
    pub tag: u8,
    pub value: &'a [u8],
    pub raw: &'a [u8],
}

/// A cursor over consecutive elements.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The tag of the next element, if any.
    pub fn peek_tag(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    /// The next element, whatever its tag.
    pub fn any(&mut self) -> Result<Element<'a>, String> {
        let (&tag, after_tag) = self.rest.split_first().ok_or("DER: element expected, input ends")?;
        if tag & 0x1f == 0x1f {
            return Err(format!("DER: multi-byte tag {tag:#04x} not supported"));
        }
        let (&first, after_length) = after_tag.split_first().ok_or("DER: length expected, input ends")?;
        let (length, after_length) = match first {
            0..=0x7f => (usize::from(first), after_length),
            0x81..=0x84 => {
                let count = usize::from(first & 0x7f);
                if after_length.len() < count {
                    return Err("DER: length runs past the input".to_string());
                }
                let (bytes, rest) = after_length.split_at(count);
                (bytes.iter().fold(0usize, |n, &b| (n << 8) | usize::from(b)), rest)
            }
            _ => return Err(format!("DER: length form {first:#04x} not supported")),
        };
        if after_length.len() < length {
            return Err(format!("DER: element of {length} bytes runs past the input"));
        }
        let (value, rest) = after_length.split_at(length);
        let header = self.rest.len() - after_length.len();
        let raw = &self.rest[..header + length];
        self.rest = rest;
        Ok(Element { tag, value, raw })
    }

    /// The next element, which must have tag `tag`.
    pub fn expect(&mut self, tag: u8, what: &str) -> Result<Element<'a>, String> {
        let element = self.any().map_err(|e| format!("{what}: {e}"))?;
        if element.tag != tag {
            return Err(format!("{what}: tag {:#04x} where {tag:#04x} was expected", element.tag));
        }
        Ok(element)
    }

    /// The next element if it has tag `tag`; nothing is consumed otherwise.
    pub fn optional(&mut self, tag: u8) -> Result<Option<Element<'a>>, String> {
        match self.peek_tag() == Some(tag) {
            true => self.any().map(Some),
            false => Ok(None),
        }
    }
}

impl<'a> Element<'a> {
    /// A reader over this (constructed) element's contents.
    pub fn contents(&self) -> Reader<'a> {
        Reader::new(self.value)
    }
}

/// An element of tag `tag` around `value`.
pub fn write(tag: u8, value: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let length = value.len();
    match length {
        0..=0x7f => out.push(length as u8),
        _ => {
            let bytes = length.to_be_bytes();
            let skip = bytes.iter().take_while(|&&b| b == 0).count();
            out.push(0x80 | (bytes.len() - skip) as u8);
            out.extend_from_slice(&bytes[skip..]);
        }
    }
    out.extend_from_slice(value);
    out
}

/// A SEQUENCE of already encoded elements.
pub fn sequence(parts: &[&[u8]]) -> Vec<u8> {
    write(SEQUENCE, &parts.concat())
}

/// A GeneralizedTime value (`YYYYMMDDHHMMSS`, optional fraction, `Z`) as a time.
pub fn generalized_time(value: &[u8]) -> Result<SystemTime, String> {
    let text = std::str::from_utf8(value).map_err(|_| "GeneralizedTime: not ASCII".to_string())?;
    let bad = || format!("GeneralizedTime {text:?}: not YYYYMMDDHHMMSS[.f]Z");
    let body = text.strip_suffix('Z').ok_or_else(bad)?;
    let whole = body.split_once('.').map_or(body, |(whole, _fraction)| whole);
    if whole.len() != 14 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let number = |range: std::ops::Range<usize>| whole[range].parse::<i64>().map_err(|_| bad());
    let (year, month, day) = (number(0..4)?, number(4..6)?, number(6..8)?);
    let (hour, minute, second) = (number(8..10)?, number(10..12)?, number(12..14)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return Err(bad());
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    let seconds = u64::try_from(seconds).map_err(|_| format!("GeneralizedTime {text:?}: before 1970"))?;
    Ok(UNIX_EPOCH + Duration::from_secs(seconds))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;

    #[test]
    fn reads_what_it_writes_short_and_long_lengths() {
        for length in [0usize, 1, 127, 128, 255, 256, 70_000] {
            let value = vec![7u8; length];
            let encoded = write(OCTET_STRING, &value);
            let mut reader = Reader::new(&encoded);
            let element = reader.expect(OCTET_STRING, "x").unwrap();
            assert_eq!((element.value.len(), element.raw.len()), (length, encoded.len()));
            assert!(reader.is_empty());
        }
        let both = [write(INTEGER, &[1]), write(0x05, &[])].concat();
        let outer = sequence(&[&both]);
        let element = Reader::new(&outer).expect(SEQUENCE, "seq").unwrap();
        let mut inner = element.contents();
        assert_eq!(inner.optional(0x05).unwrap(), None);
        assert_eq!(inner.expect(INTEGER, "int").unwrap().value, [1]);
        assert!(inner.optional(0x05).unwrap().is_some());
    }

    #[test]
    fn truncated_or_odd_input_is_an_error() {
        for bad in [
            &[][..],
            &[0x30],
            &[0x30, 0x05, 0x01],
            &[0x30, 0x85, 0, 0, 0, 0, 1],
            &[0x1f, 0x01, 0x00],
            &[0x04, 0x82, 0x01],
        ] {
            assert!(Reader::new(bad).any().is_err(), "{bad:?}");
        }
        assert!(Reader::new(&[0x02, 0x01, 0x00]).expect(OCTET_STRING, "x").is_err());
    }

    #[test]
    fn generalized_times() {
        let at = |text: &str| generalized_time(text.as_bytes());
        assert_eq!(at("19700101000000Z").unwrap(), UNIX_EPOCH);
        assert_eq!(at("20000229120000Z").unwrap(), UNIX_EPOCH + Duration::from_secs(951_825_600));
        assert_eq!(at("20261127144000.123Z").unwrap(), UNIX_EPOCH + Duration::from_secs(1_795_790_400));
        for bad in ["20261127144000", "2026112714400Z", "20261327144000Z", "19691231235959Z", "2026112714400xZ"] {
            assert!(at(bad).is_err(), "{bad}");
        }
    }
}
