//! Syslog framing as HAProxy 2.6 writes it: RFC 3164 (`<PRI>Mmm dd hh:mm:ss host tag[pid]: msg`, its
//! default and what OpenShift's template gets), RFC 5424 (`<PRI>1 time host tag pid - - msg`) or the bare
//! line (`raw`). The host name is always sent, as OpenShift's `log-send-hostname` asks. A message is cut
//! at `len` bytes (ROUTER_LOG_MAX_LENGTH), header included; the line feed HAProxy ends every message with comes
//! after the cut.

use std::io::Write as _;
use std::time::SystemTime;

use super::time::Civil;

/// Syslog facilities by their HAProxy names, in code order (RFC 5424 section 6.2.1).
const FACILITIES: [&str; 24] = [
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "auth2", "ftp", "ntp", "audit",
    "alert", "cron2", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
];

/// Severities by their HAProxy names, in code order.
const LEVELS: [&str; 8] = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"];

/// The severity of access-log lines (HAProxy sends them at `info`).
pub const ACCESS_SEVERITY: Severity = Severity(6);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facility(pub u8);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Severity(pub u8);

impl Facility {
    pub fn parse(name: &str) -> Option<Facility> {
        FACILITIES.iter().position(|known| known.eq_ignore_ascii_case(name.trim())).map(|code| Facility(code as u8))
    }
}

impl Severity {
    pub fn parse(name: &str) -> Option<Severity> {
        let name = name.trim();
        let name = if name.eq_ignore_ascii_case("error") { "err" } else { name };
        LEVELS.iter().position(|known| known.eq_ignore_ascii_case(name)).map(|code| Severity(code as u8))
    }
}

/// How each message is wrapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Framing {
    Rfc3164,
    Rfc5424,
    /// The log line alone (HAProxy's `format raw`, what container log collectors read on stdout).
    Raw,
}

/// Everything a syslog header needs but the time.
#[derive(Clone, Debug)]
pub struct SyslogHeader {
    pub framing: Framing,
    pub facility: Facility,
    pub hostname: String,
    /// The program name (HAProxy's `log-tag`).
    pub tag: String,
    pub pid: u32,
    /// Longest message in bytes, header included, line feed excluded.
    pub max_length: usize,
}

impl SyslogHeader {
    /// Appends one framed message to `out`.
    pub fn frame(&self, severity: Severity, now: SystemTime, message: &str, out: &mut Vec<u8>) {
        let start = out.len();
        let pri = u32::from(self.facility.0) * 8 + u32::from(severity.0);
        match self.framing {
            // Writing into a Vec cannot fail.
            Framing::Rfc3164 => {
                let _ = write!(out, "<{pri}>");
                Civil::of(now).write_rfc3164(out);
                let _ = write!(out, " {} {}[{}]: ", self.hostname, self.tag, self.pid);
            }
            Framing::Rfc5424 => {
                let _ = write!(out, "<{pri}>1 ");
                Civil::of(now).write_rfc5424(out);
                let _ = write!(out, " {} {} {} - - ", self.hostname, self.tag, self.pid);
            }
            Framing::Raw => {}
        }
        out.extend_from_slice(message.as_bytes());
        out.truncate(start + (out.len() - start).min(self.max_length));
        out.push(b'\n');
    }
}

/// This machine's host name, as `log-send-hostname` sends it.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn header(framing: Framing, max_length: usize) -> SyslogHeader {
        SyslogHeader {
            framing,
            facility: Facility::parse("local1").expect("local1"),
            hostname: "vm".into(),
            tag: "haproxy".into(),
            pid: 1846,
            max_length,
        }
    }

    fn framed(framing: Framing, max_length: usize, message: &str) -> String {
        let now = UNIX_EPOCH + Duration::from_secs(1_795_629_168) + Duration::from_micros(160_234);
        let mut out = Vec::new();
        header(framing, max_length).frame(ACCESS_SEVERITY, now, message, &mut out);
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn names_map_to_codes() {
        assert_eq!(Facility::parse("local1"), Some(Facility(17)));
        assert_eq!(Facility::parse("kern"), Some(Facility(0)));
        assert_eq!(Facility::parse("local9"), None);
        assert_eq!(Severity::parse("warning"), Some(Severity(4)));
        assert_eq!(Severity::parse("info"), Some(ACCESS_SEVERITY));
        assert_eq!(Severity::parse("error"), Some(Severity(3)));
        assert!(Severity::parse("info") > Severity::parse("warning"), "a less severe level has a higher code");
    }

    #[test]
    fn headers_and_the_len_cut_match_haproxy() {
        let message = "127.0.0.1:57676 [25/Nov/2026:17:52:48.154] public be/pod:a:b:c 0/0/0/10/10 404 500";
        // HAProxy 2.6.12, `log ... len 100 local1 info` with `log-send-hostname`: 100 bytes, then a line feed.
        assert_eq!(
            framed(Framing::Rfc3164, 100, message),
            "<142>Nov 25 17:52:48 vm haproxy[1846]: 127.0.0.1:57676 [25/Nov/2026:17:52:48.154] public be/pod:a:b:\n"
        );
        assert_eq!(
            framed(Framing::Rfc5424, 100, message),
            "<142>1 2026-11-25T17:52:48.160234+00:00 vm haproxy 1846 - - 127.0.0.1:57676 [25/Nov/2026:17:52:48.15\n"
        );
        assert_eq!(framed(Framing::Raw, 1024, "a line"), "a line\n");
        assert_eq!(framed(Framing::Raw, 3, "a line"), "a l\n");
    }
}
