//! Syslog framing for the writer task: the same bytes as [`SyslogHeader::frame`], with the header's text
//! (priority, date to the second, host, tag, pid) built once per second instead of once per line.

use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use super::decimal::push_padded;
use super::syslog::{Framing, Severity, SyslogHeader};
use super::time::Civil;

/// Frames messages of one severity with a header cached for the current second.
pub struct Framer {
    header: SyslogHeader,
    severity: Severity,
    /// The second `head` and `tail` were built for.
    second: Option<u64>,
    /// RFC 3164: everything before the message. RFC 5424: up to the seconds' dot.
    head: Vec<u8>,
    /// RFC 5424: from the offset after the microseconds to the message.
    tail: Vec<u8>,
}

impl Framer {
    pub fn new(header: SyslogHeader, severity: Severity) -> Framer {
        Framer { header, severity, second: None, head: Vec::new(), tail: Vec::new() }
    }

    /// Appends one framed message to `out`, as [`SyslogHeader::frame`] would.
    pub fn frame(&mut self, now: SystemTime, message: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        let (second, micros) = match now.duration_since(UNIX_EPOCH) {
            Ok(since) => (since.as_secs(), since.subsec_micros()),
            Err(_) => (0, 0),
        };
        match self.header.framing {
            Framing::Raw => {}
            Framing::Rfc3164 => {
                self.refresh(second, now);
                out.extend_from_slice(&self.head);
            }
            Framing::Rfc5424 => {
                self.refresh(second, now);
                out.extend_from_slice(&self.head);
                push_padded(out, u64::from(micros), 6);
                out.extend_from_slice(&self.tail);
            }
        }
        out.extend_from_slice(message);
        out.truncate(start + (out.len() - start).min(self.header.max_length));
        out.push(b'\n');
    }

    fn refresh(&mut self, second: u64, now: SystemTime) {
        if self.second == Some(second) {
            return;
        }
        self.second = Some(second);
        self.head.clear();
        self.tail.clear();
        let civil = Civil::of(now);
        let header = &self.header;
        let pri = u32::from(header.facility.0) * 8 + u32::from(self.severity.0);
        // Writing into a Vec cannot fail.
        match header.framing {
            Framing::Raw => {}
            Framing::Rfc3164 => {
                let _ = write!(self.head, "<{pri}>");
                civil.write_rfc3164(&mut self.head);
                let _ = write!(self.head, " {} {}[{}]: ", header.hostname, header.tag, header.pid);
            }
            Framing::Rfc5424 => {
                let _ = write!(
                    self.head,
                    "<{pri}>1 {:04}-{:02}-{:02}T{:02}:{:02}:{:02}.",
                    civil.year, civil.month, civil.day, civil.hour, civil.minute, civil.second
                );
                let _ = write!(self.tail, "+00:00 {} {} {} - - ", header.hostname, header.tag, header.pid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_log::syslog::{Facility, ACCESS_SEVERITY};
    use std::time::Duration;

    fn header(framing: Framing, max_length: usize) -> SyslogHeader {
        SyslogHeader {
            framing,
            facility: Facility(17),
            hostname: "vm".into(),
            tag: "haproxy".into(),
            pid: 1846,
            max_length,
        }
    }

    #[test]
    fn cached_headers_frame_as_the_uncached_ones_across_seconds() {
        let base = UNIX_EPOCH + Duration::from_secs(1_795_629_168);
        let moments = [0, 160_234, 999_999, 1_000_000, 1_000_001, 61_000_007, 86_400_000_000]
            .map(|micros| base + Duration::from_micros(micros));
        for framing in [Framing::Rfc3164, Framing::Rfc5424, Framing::Raw] {
            for max_length in [1024, 40, 3] {
                let mut framer = Framer::new(header(framing, max_length), ACCESS_SEVERITY);
                for now in moments {
                    let message = "127.0.0.1:57676 [25/Nov/2026:17:52:48.154] public be/pod 0/0/0/10/10 404 500";
                    let mut expected = Vec::new();
                    header(framing, max_length).frame(ACCESS_SEVERITY, now, message, &mut expected);
                    let mut cached = b"before".to_vec();
                    framer.frame(now, message.as_bytes(), &mut cached);
                    assert_eq!(
                        String::from_utf8_lossy(&cached[6..]),
                        String::from_utf8_lossy(&expected),
                        "{framing:?} len {max_length} at {now:?}"
                    );
                }
            }
        }
    }
}
