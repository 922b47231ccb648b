//! HAProxy's time syntax, as the OpenShift router's `ROUTER_*_TIMEOUT` settings and timeout annotations use it:
//! a number with an optional unit `us`, `ms`, `s`, `m`, `h` or `d`; a bare number is milliseconds.

use std::time::Duration;

/// HAProxy refuses timeouts above 2^31-1 ms; the OpenShift router clamps to that.
pub const MAX_TIMEOUT: Duration = Duration::from_millis(2_147_483_647);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid duration {input:?}: expected a number with an optional unit us, ms, s, m, h or d")]
pub struct DurationError {
    pub input: String,
}

/// Parses `"5s"`, `"300ms"`, `"1h"`, `"10"` (ms). Values above [`MAX_TIMEOUT`] are clamped to it.
pub fn parse_haproxy_duration(input: &str) -> Result<Duration, DurationError> {
    let text = input.trim();
    let digits_end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits_end);
    let error = || DurationError { input: input.to_string() };
    let value: u64 = number.parse().map_err(|_| error())?;
    let micros_per_unit: u64 = match unit {
        "us" => 1,
        "" | "ms" => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return Err(error()),
    };
    let micros = value.saturating_mul(micros_per_unit);
    Ok(Duration::from_micros(micros).min(MAX_TIMEOUT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_haproxy() {
        let cases = [
            ("10", Duration::from_millis(10)),
            ("250us", Duration::from_micros(250)),
            ("300ms", Duration::from_millis(300)),
            ("5s", Duration::from_secs(5)),
            ("2m", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            ("1d", Duration::from_secs(86_400)),
            (" 30s ", Duration::from_secs(30)),
        ];
        for (input, want) in cases {
            assert_eq!(parse_haproxy_duration(input), Ok(want), "{input}");
        }
    }

    #[test]
    fn large_values_clamp_to_haproxy_maximum() {
        assert_eq!(parse_haproxy_duration("999999d"), Ok(MAX_TIMEOUT));
    }

    #[test]
    fn junk_is_refused() {
        for input in ["", "s", "5x", "-1s", "1.5s", "5 s"] {
            assert!(parse_haproxy_duration(input).is_err(), "{input:?} should be refused");
        }
    }
}
