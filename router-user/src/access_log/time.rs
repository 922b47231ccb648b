//! Dates as HAProxy writes them in log lines and syslog headers, in UTC (the router has no time zone
//! database; a container's local time is UTC as a rule).

use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use super::decimal::push_padded;

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// A moment split into calendar fields (UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    /// 1..=12
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub micros: u32,
    /// Seconds since the Unix epoch.
    pub unix: i64,
}

impl Civil {
    pub fn of(time: SystemTime) -> Civil {
        let (unix, micros) = match time.duration_since(UNIX_EPOCH) {
            Ok(since) => (since.as_secs() as i64, since.subsec_micros()),
            Err(_) => (0, 0),
        };
        let days = unix.div_euclid(86_400);
        let in_day = unix.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        Civil { year, month, day, hour: in_day / 3600, minute: in_day / 60 % 60, second: in_day % 60, micros, unix }
    }

    fn month_name(&self) -> &'static str {
        MONTHS[(self.month as usize).saturating_sub(1) % 12]
    }

    /// `%t` / `%tr`: `25/Nov/2026:17:51:13.724`.
    pub fn write_log_date(&self, out: &mut Vec<u8>) {
        let _ = write!(
            out,
            "{:02}/{}/{}:{:02}:{:02}:{:02}.{:03}",
            self.day,
            self.month_name(),
            self.year,
            self.hour,
            self.minute,
            self.second,
            self.micros / 1000
        );
    }

    /// `%T` / `%trg` (and the local forms, here UTC too): `25/Nov/2026:17:51:13 +0000`.
    pub fn write_gmt_date(&self, out: &mut Vec<u8>) {
        let _ = write!(
            out,
            "{:02}/{}/{}:{:02}:{:02}:{:02} +0000",
            self.day,
            self.month_name(),
            self.year,
            self.hour,
            self.minute,
            self.second
        );
    }

    /// RFC 3164 header time: `Nov 25 17:51:13`, the day padded with a space (`Nov  5`).
    pub fn write_rfc3164(&self, out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        let _ =
            write!(out, "{} {:>2} {:02}:{:02}:{:02}", self.month_name(), self.day, self.hour, self.minute, self.second);
    }

    /// RFC 5424 header time as HAProxy writes it: `2026-11-25T17:51:13.736776+00:00`.
    pub fn write_rfc5424(&self, out: &mut Vec<u8>) {
        let _ = write!(
            out,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+00:00",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.micros
        );
    }
}

/// `%t` / `%tr` dates of one writer, the text up to the seconds kept for the current second.
#[derive(Debug, Default)]
pub struct LogDates {
    second: Option<u64>,
    /// `25/Nov/2026:17:51:13.`
    prefix: Vec<u8>,
}

impl LogDates {
    /// As [`Civil::write_log_date`].
    pub fn write_log_date(&mut self, when: SystemTime, out: &mut Vec<u8>) {
        let (second, millis) = match when.duration_since(UNIX_EPOCH) {
            Ok(since) => (since.as_secs(), since.subsec_millis()),
            Err(_) => (0, 0),
        };
        if self.second != Some(second) {
            self.second = Some(second);
            self.prefix.clear();
            Civil::of(when).write_log_date(&mut self.prefix);
            // Drop the milliseconds: `.mmm` always has three digits.
            self.prefix.truncate(self.prefix.len() - 3);
        }
        out.extend_from_slice(&self.prefix);
        push_padded(out, u64::from(millis), 3);
    }
}

/// Days since 1970-01-01 -> (year, month, day) in the proleptic Gregorian calendar (Howard Hinnant's
/// civil-from-days algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(unix: u64, micros: u64) -> Civil {
        Civil::of(UNIX_EPOCH + Duration::from_secs(unix) + Duration::from_micros(micros))
    }

    #[test]
    fn dates_come_out_as_haproxy_writes_them() {
        // 2026-11-25T17:51:13.736776Z
        let civil = at(1_795_629_073, 736_776);
        let mut log = Vec::new();
        civil.write_log_date(&mut log);
        assert_eq!(log, b"25/Nov/2026:17:51:13.736");
        let mut gmt = Vec::new();
        civil.write_gmt_date(&mut gmt);
        assert_eq!(gmt, b"25/Nov/2026:17:51:13 +0000");
        let mut rfc5424 = Vec::new();
        civil.write_rfc5424(&mut rfc5424);
        assert_eq!(rfc5424, b"2026-11-25T17:51:13.736776+00:00");
        // 2024-02-29T00:00:05Z: a leap day, and a one-digit day padded with a space.
        let mut rfc3164 = Vec::new();
        at(1_709_164_805, 0).write_rfc3164(&mut rfc3164);
        assert_eq!(rfc3164, b"Feb 29 00:00:05");
        let mut padded = Vec::new();
        at(1_709_596_800, 0).write_rfc3164(&mut padded);
        assert_eq!(padded, b"Mar  5 00:00:00");
    }

    #[test]
    fn cached_log_dates_match_fresh_ones_across_seconds() {
        let mut dates = LogDates::default();
        for (unix, micros) in [(1_795_629_073, 736_776), (1_795_629_073, 5_000), (1_795_629_074, 0), (0, 999_999)] {
            let when = UNIX_EPOCH + Duration::from_secs(unix) + Duration::from_micros(micros);
            let mut fresh = b"x".to_vec();
            Civil::of(when).write_log_date(&mut fresh);
            let mut cached = b"x".to_vec();
            dates.write_log_date(when, &mut cached);
            assert_eq!(cached, fresh);
        }
    }
}
