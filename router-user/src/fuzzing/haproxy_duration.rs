//! HAProxy durations (`ROUTER_*_TIMEOUT` settings, the timeout annotations).

use std::time::Duration;

use super::lines::text;
use crate::duration::{parse_haproxy_duration, MAX_TIMEOUT};

/// Any text: an answer within HAProxy's maximum, and for a plain `<digits><unit>` the value the unit says.
pub fn haproxy_duration(data: &[u8]) {
    let input = text(data);
    let Ok(parsed) = parse_haproxy_duration(&input) else { return };
    assert!(parsed <= MAX_TIMEOUT, "{input:?} gave {parsed:?}, above the maximum");
    let trimmed = input.trim();
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = trimmed.split_at(digits);
    assert!(!number.is_empty(), "{input:?} has no number but gave {parsed:?}");
    let Ok(number) = number.parse::<u64>() else { return };
    let unit_micros: u128 = match unit {
        "us" => 1,
        "" | "ms" => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => panic!("{input:?}: unit {unit:?} accepted"),
    };
    let want = (u128::from(number) * unit_micros).min(MAX_TIMEOUT.as_micros());
    assert_eq!(parsed, Duration::from_micros(want as u64), "{input:?}");
}
