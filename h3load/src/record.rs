//! The per-request log, in h2load's `--log-file` format (`start_us<TAB>status<TAB>duration_us`, status -1 for a
//! request that ended in error), so the bench reads both load generators' logs with one parser.

use std::fmt::Write as _;
use std::time::Instant;

use crate::connection::Plan;

/// The status recorded for a request that got no response.
pub const FAILED: i32 = -1;

pub struct Record {
    /// Microseconds from the end of the warm-up to the request's start.
    start_us: u64,
    status: i32,
    duration_us: u64,
}

impl Record {
    /// A request that started at `start` and has just ended with `status`.
    pub fn new(plan: &Plan, start: Instant, status: i32) -> Record {
        Record {
            start_us: micros(start.saturating_duration_since(plan.measured_from)),
            status,
            duration_us: micros(start.elapsed()),
        }
    }

    /// A connection that could not be made (counted as one failed request).
    pub fn failed(plan: &Plan, start: Instant) -> Record {
        Record::new(plan, start, FAILED)
    }

    pub fn succeeded(&self) -> bool {
        (200..400).contains(&self.status)
    }
}

fn micros(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// The log file's text.
pub fn log_text(records: &[Record]) -> String {
    let mut text = String::with_capacity(records.len() * 24);
    for record in records {
        let _ = writeln!(text, "{}\t{}\t{}", record.start_us, record.status, record.duration_us);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_has_h2loads_three_tab_separated_fields_and_minus_one_for_a_failure() {
        let records = [
            Record { start_us: 12, status: 200, duration_us: 345 },
            Record { start_us: 40, status: FAILED, duration_us: 7 },
        ];
        assert_eq!(log_text(&records), "12\t200\t345\n40\t-1\t7\n");
        assert!(records[0].succeeded());
        assert!(!records[1].succeeded());
        assert!(!Record { start_us: 0, status: 503, duration_us: 1 }.succeeded());
    }
}
