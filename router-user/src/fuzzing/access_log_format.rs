//! Access-log format strings (ROUTER_SYSLOG_FORMAT, ROUTER_UNIQUE_ID_FORMAT) and the capture lists whose
//! values they log (ROUTER_CAPTURE_HTTP_REQUEST_HEADERS, ROUTER_CAPTURE_HTTP_COOKIE).

use std::net::SocketAddr;
use std::time::{Duration, UNIX_EPOCH};

use super::lines::text;
use crate::access_log::{
    parse_cookie_capture, parse_header_captures, render, Counts, LogFormat, LogRecord, RenderContext, RequestLine,
    Termination, Timers,
};

/// Line 1: a format as the setting holds it (quotes and escapes included); line 2: a header capture list;
/// line 3: a cookie capture. A format that parses renders records of every kind, each as one line (the
/// records hold control characters, quotes and brackets that the variables' encodings must handle).
pub fn access_log_format(data: &[u8]) {
    let text = text(data);
    let mut lines = text.splitn(3, '\n');
    let format = lines.next().unwrap_or_default();
    let _ = parse_header_captures("ROUTER_CAPTURE_HTTP_REQUEST_HEADERS", lines.next().unwrap_or_default());
    let _ = parse_cookie_capture("ROUTER_CAPTURE_HTTP_COOKIE", lines.next().unwrap_or_default());
    // Only the format's own text may put a line break into a line (it has no `\n`: lines were split at it).
    let format_breaks_lines = format.contains('\r');
    let Ok(format) = LogFormat::parse_config(format) else { return };
    let context = RenderContext { hostname: "node-1".into(), pid: 4242 };
    for record in records() {
        let mut line = String::new();
        render(&format, &record, &context, &mut line);
        assert!(format_breaks_lines || !line.contains(['\n', '\r']), "a line break in {line:?}");
    }
}

/// A served HTTP request with awkward values, an IPv6 connection that sent nothing, a refused request.
fn records() -> [LogRecord; 3] {
    let address = |text: &str| text.parse::<SocketAddr>().expect("a fixed address");
    let at = UNIX_EPOCH + Duration::from_millis(1_795_629_073_724);
    let mut served = LogRecord::at("fe_sni", true, address("192.0.2.7:51508"), address("10.0.0.1:443"), at);
    served.backend = "be_edge_http:ns:route".into();
    served.server = Some(("pod:web-1:svc:8080-tcp:10.1.2.3:8080".into(), address("10.1.2.3:8080")));
    served.timers = Timers { queue: 0, connect: 1, response: 10, active: 12, total: 12, ..Timers::default() };
    served.status = Some(200);
    served.bytes_read = 1 << 40;
    served.bytes_uploaded = 17;
    served.request_cookie = Some("id=\"a]b\\c\x7f\"".into());
    served.counts = Counts { active: 3, frontend: 2, ..Counts::default() };
    served.request =
        Some(RequestLine { method: "GET".into(), uri: "/p%20q?x=\"y\"&z=]\u{e9}\x01".into(), version: "HTTP/1.1" });
    served.request_headers = vec![Some("a|b{c}\"".into()), None, Some(String::new())];
    served.response_headers = vec![Some("text/html;\x1b[0m".into())];
    served.unique_id = Some("C0A80001:C9E4_0A000001:01BB_5F5E1000_0001:1A2B".into());
    served.request_counter = u64::MAX;

    let idle = LogRecord::at("public", false, address("[2001:db8::1]:40000"), address("[::]:80"), at);

    let mut refused = LogRecord::at("public", false, address("127.0.0.1:1"), address("127.0.0.1:80"), at);
    refused.status = Some(400);
    refused.termination = Termination::new(b'P', b'R');
    refused.request = Some(RequestLine { method: "\"".into(), uri: String::new(), version: "HTTP/1.0" });
    [served, idle, refused]
}
