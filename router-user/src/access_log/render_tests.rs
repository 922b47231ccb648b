use std::time::{Duration, UNIX_EPOCH};

use super::*;
use crate::access_log::format::{HTTPLOG_FORMAT, TCPLOG_FORMAT};
use crate::access_log::record::{Counts, RequestLine, Termination, Timers};

fn context() -> RenderContext {
    RenderContext { hostname: "vm".into(), pid: 30991 }
}

fn line(format: &str, record: &LogRecord) -> String {
    let mut out = String::new();
    render(&LogFormat::parse(format).expect("format"), record, &context(), &mut out);
    out
}

/// 25/Nov/2026:17:51:13 UTC plus `millis`.
fn at(millis: u64) -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_795_629_073) + Duration::from_millis(millis)
}

fn served() -> LogRecord {
    let mut record = LogRecord::new(
        "public",
        false,
        "127.0.0.1:51508".parse().expect("client"),
        "127.0.0.1:28080".parse().expect("frontend"),
    );
    record.accepted_at = at(724);
    record.requested_at = at(724);
    record.backend = "be".into();
    record.server = Some(("pod:a:b:c".into(), "127.0.0.1:28081".parse().expect("server")));
    record.timers = Timers { queue: 0, connect: 0, response: 10, active: 10, total: 10, ..Timers::default() };
    record.status = Some(404);
    record.bytes_read = 500;
    record.counts = Counts { active: 1, frontend: 1, ..Counts::default() };
    record.request = Some(RequestLine { method: "GET".into(), uri: "/x?a=b".into(), version: "HTTP/1.1" });
    record.request_headers = vec![Some("127.0.0.1:28080".into()), Some("curl/8.0".into())];
    record.response_headers = vec![Some("text/html;charset=utf-8".into())];
    record
}

#[test]
fn an_httplog_line_reads_as_haproxy_2_6_wrote_it_for_the_same_request() {
    // Written by Debian's HAProxy 2.6.12 with `option httplog` and three header captures.
    let haproxy = "127.0.0.1:51508 [25/Nov/2026:17:51:13.724] public be/pod:a:b:c 0/0/0/10/10 404 500 - - ---- \
                   1/1/0/0/0 0/0 {127.0.0.1:28080|curl/8.0} {text/html;charset=utf-8} \"GET /x?a=b HTTP/1.1\"";
    assert_eq!(line(HTTPLOG_FORMAT, &served()), haproxy);
}

#[test]
fn an_empty_connection_has_no_request_no_server_and_no_captures() {
    let mut record = LogRecord::new(
        "public",
        false,
        "127.0.0.1:51528".parse().expect("client"),
        "127.0.0.1:28080".parse().expect("frontend"),
    );
    record.accepted_at = at(755);
    record.requested_at = at(755);
    record.timers = Timers { request: -1, active: 0, total: 0, ..Timers::default() };
    record.status = Some(400);
    record.termination = Termination::new(b'C', b'R');
    record.counts = Counts { active: 2, frontend: 2, ..Counts::default() };
    let haproxy = "127.0.0.1:51528 [25/Nov/2026:17:51:13.755] public public/<NOSRV> -1/-1/-1/-1/0 400 0 - - CR-- \
                   2/2/0/0/0 0/0 \"<BADREQ>\"";
    assert_eq!(line(HTTPLOG_FORMAT, &record), haproxy);
}

#[test]
fn a_tcplog_line_reads_as_haproxy_wrote_it() {
    let mut record = LogRecord::new(
        "public_ssl",
        false,
        "127.0.0.1:52466".parse().expect("client"),
        "127.0.0.1:28443".parse().expect("frontend"),
    );
    record.accepted_at = at(766);
    record.backend = "be_tcp".into();
    record.server = Some(("pod:t".into(), "127.0.0.1:28081".parse().expect("server")));
    record.timers = Timers { queue: 1, connect: 0, total: 3, ..Timers::default() };
    record.bytes_read = 615;
    record.counts = Counts { active: 1, frontend: 1, ..Counts::default() };
    let haproxy = "127.0.0.1:52466 [25/Nov/2026:17:51:13.766] public_ssl be_tcp/pod:t 1/0/3 615 -- 1/1/0/0/0 0/0";
    assert_eq!(line(TCPLOG_FORMAT, &record), haproxy);
}

#[test]
fn options_quote_hex_escape_and_encode() {
    let mut record = served();
    record.tls = true;
    record.unique_id = Some("7F000001:C8F4".into());
    assert_eq!(line("%ft %{+Q}b %{+Q}CC %CS", &record), "public~ \"be\" \"\" -");
    assert_eq!(line("%{+Q}ft", &record), "\"public~\"");
    assert_eq!(line("%{+X}o %ci:%cp_%fi:%fp", &record), "7F000001:C934_7F000001:6DB0");
    assert_eq!(line("%ID %HM %HP %HQ %HV", &record), "7F000001:C8F4 GET /x ?a=b HTTP/1.1");
    record.request = Some(RequestLine { method: "GET".into(), uri: "/a\"b#c".into(), version: "HTTP/1.1" });
    assert_eq!(line("%r|%{+E}HU", &record), "GET /a#22b#23c HTTP/1.1|/a\\\"b#c");
    // Bytes from 0x80 (each byte of a multi-byte character), control characters and DEL, at either end too.
    record.request =
        Some(RequestLine { method: "GET".into(), uri: "\u{e9}/\tx\u{7f}y\u{2013}".into(), version: "HTTP/1.1" });
    assert_eq!(line("%HU", &record), "#C3#A9/#09x#7Fy#E2#80#93");
    record.request_headers = vec![None, Some("a|b".into())];
    assert_eq!(line("%hr %hrl", &record), "{|a#7Cb} - a#7Cb");
    record.request_headers.clear();
    assert_eq!(line("%ci %hr %hs %ST", &record), "127.0.0.1 {text/html;charset=utf-8} 404");
    record.response_headers.clear();
    assert_eq!(line("%ci %hr %hs %ST", &record), "127.0.0.1 404", "absent captures leave one space");
}
