//! Writing a `LogRecord` in a parsed log-format, with HAProxy's conventions: `-` for an absent value (`""`
//! when quoted), `-1` for a timer of a phase that did not happen, `<NOSRV>` and `<BADREQ>`, captured headers
//! as `{a|b}`, and `#XX` for characters a log line must not carry raw.

use std::io::Write as _;
use std::net::IpAddr;

use super::decimal::{push_signed, push_unsigned};
use super::format::{LogFormat, Node, Options};
use super::record::{LogRecord, Millis, NOT_REACHED};
use super::time::{Civil, LogDates};
use super::variables::Variable;

/// What a line needs besides its record.
#[derive(Clone, Debug)]
pub struct RenderContext {
    pub hostname: String,
    pub pid: u32,
}

/// As [`render_with_dates`], appended to text (the line is UTF-8: non-ASCII bytes of values are written as
/// `#XX`, or kept whole with `E`).
pub fn render(format: &LogFormat, record: &LogRecord, context: &RenderContext, out: &mut String) {
    let mut line = Vec::new();
    render_with_dates(format, record, context, &mut LogDates::default(), &mut line);
    out.push_str(&String::from_utf8(line).expect("a rendered line is UTF-8"));
}

/// Writes `record` in `format`, with `%t`/`%tr` dates from `dates` (a writer's, kept from line to line).
pub fn render_with_dates(
    format: &LogFormat,
    record: &LogRecord,
    context: &RenderContext,
    dates: &mut LogDates,
    out: &mut Vec<u8>,
) {
    // Leading separators are dropped, and a separator after a variable that wrote nothing too.
    let mut after_space = true;
    for node in &format.nodes {
        match node {
            Node::Separator => {
                if !after_space {
                    out.push(b' ');
                    after_space = true;
                }
            }
            Node::Text(text) => {
                out.extend_from_slice(text.as_bytes());
                after_space = false;
            }
            Node::Variable(variable, options) => {
                let before = out.len();
                write_variable(*variable, *options, record, context, dates, out);
                if out.len() > before {
                    after_space = false;
                }
            }
        }
    }
}

fn write_variable(
    variable: Variable,
    options: Options,
    record: &LogRecord,
    context: &RenderContext,
    dates: &mut LogDates,
    out: &mut Vec<u8>,
) {
    use Variable::*;
    let timers = &record.timers;
    match variable {
        ClientIp => ip(record.client.ip(), options, out),
        ClientPort => port(record.client.port(), options, out),
        FrontendIp => ip(record.frontend_addr.ip(), options, out),
        FrontendPort => port(record.frontend_addr.port(), options, out),
        // The router does not keep its side of a pod connection's address.
        BackendSourceIp | BackendSourcePort => text(None, options, out),
        ServerIp => match &record.server {
            Some((_, addr)) => ip(addr.ip(), options, out),
            None => text(None, options, out),
        },
        ServerPort => match &record.server {
            Some((_, addr)) => port(addr.port(), options, out),
            None => text(None, options, out),
        },
        FrontendName => text(Some(record.frontend), options, out),
        FrontendNameTransport if record.tls => quoted(options, out, |out| {
            out.extend_from_slice(record.frontend.as_bytes());
            out.push(b'~');
        }),
        FrontendNameTransport => text(Some(record.frontend), options, out),
        BackendName => text(Some(&record.backend), options, out),
        ServerName => text(Some(record.server.as_ref().map_or("<NOSRV>", |(name, _)| name)), options, out),
        Hostname => text(Some(&context.hostname), options, out),
        Pid => number(i64::from(context.pid), options, out),
        AcceptDate | RequestDate => {
            let when = if variable == AcceptDate { record.accepted_at } else { record.requested_at };
            quoted(options, out, |out| dates.write_log_date(when, out));
        }
        AcceptDateGmt | AcceptDateLocal | RequestDateGmt | RequestDateLocal => {
            let accept = matches!(variable, AcceptDateGmt | AcceptDateLocal);
            let when = if accept { record.accepted_at } else { record.requested_at };
            quoted(options, out, |out| Civil::of(when).write_gmt_date(out));
        }
        AcceptTimestamp => {
            let unix = Civil::of(record.accepted_at).unix;
            if options.hex {
                let _ = write!(out, "{unix:08X}");
            } else {
                let _ = write!(out, "{unix}");
            }
        }
        AcceptMillis => {
            let millis = Civil::of(record.accepted_at).micros / 1000;
            if options.hex {
                let _ = write!(out, "{millis:02X}");
            } else {
                let _ = write!(out, "{millis:03}");
            }
        }
        HandshakeTime => number(timers.handshake, options, out),
        IdleTime => number(timers.idle, options, out),
        RequestTime => number(timers.request, options, out),
        RequestTotalTime => number(sum(&[timers.handshake, timers.idle, timers.request]), options, out),
        QueueTime => number(timers.queue, options, out),
        ConnectTime => number(timers.connect, options, out),
        ResponseTime => number(timers.response, options, out),
        ActiveTime => number(timers.active, options, out),
        TotalTime => number(timers.total, options, out),
        DataTime => {
            let before_data =
                sum(&[timers.handshake, timers.idle, timers.request, timers.queue, timers.connect, timers.response]);
            let data = if before_data == NOT_REACHED { NOT_REACHED } else { timers.total - before_data };
            number(data, options, out)
        }
        ClientTime => number(timers.total - timers.idle.max(0), options, out),
        Status => number(record.status.map_or(-1, i64::from), options, out),
        BytesRead => number(record.bytes_read as i64, options, out),
        BytesUploaded => number(record.bytes_uploaded as i64, options, out),
        CapturedRequestCookie => text(record.request_cookie.as_deref(), options, out),
        CapturedResponseCookie => text(record.response_cookie.as_deref(), options, out),
        TerminationState => text(std::str::from_utf8(&record.termination.0[..2]).ok(), options, out),
        TerminationStateCookie => text(std::str::from_utf8(&record.termination.0).ok(), options, out),
        ActiveConnections => number(record.counts.active as i64, options, out),
        FrontendConnections => number(record.counts.frontend as i64, options, out),
        BackendConnections => number(record.counts.backend as i64, options, out),
        ServerConnections => number(record.counts.server as i64, options, out),
        Retries => number(i64::from(record.counts.retries), options, out),
        ServerQueue => number(record.counts.server_queue as i64, options, out),
        BackendQueue => number(record.counts.backend_queue as i64, options, out),
        RequestCounter => number(record.request_counter as i64, options, out),
        CapturedRequestHeaders => captured_braces(&record.request_headers, options, out),
        CapturedResponseHeaders => captured_braces(&record.response_headers, options, out),
        CapturedRequestHeadersList => captured_list(&record.request_headers, options, out),
        CapturedResponseHeadersList => captured_list(&record.response_headers, options, out),
        RequestLine => match &record.request {
            Some(line) => quoted(options, out, |out| {
                encode(&line.method, out);
                out.push(b' ');
                encode(&line.uri, out);
                out.push(b' ');
                out.extend_from_slice(line.version.as_bytes());
            }),
            None => text(Some("<BADREQ>"), options, out),
        },
        Method => text(record.request.as_ref().map(|line| line.method.as_str()), options, out),
        Uri => text(record.request.as_ref().map(|line| line.uri.as_str()), options, out),
        Path => {
            let path = record.request.as_ref().map(|line| line.uri.split('?').next().unwrap_or(""));
            text(path, options, out)
        }
        Query => {
            let query = record.request.as_ref().and_then(|line| line.uri.find('?').map(|at| &line.uri[at..]));
            // HAProxy writes nothing (not `-`) for a request without a query.
            if query.is_some() {
                text(query, options, out)
            }
        }
        Version => text(record.request.as_ref().map(|line| line.version), options, out),
        UniqueId => text(record.unique_id.as_deref(), options, out),
    }
}

/// A sum of timers, -1 when any of them is.
fn sum(timers: &[Millis]) -> Millis {
    if timers.contains(&NOT_REACHED) {
        NOT_REACHED
    } else {
        timers.iter().sum()
    }
}

fn quoted(options: Options, out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    if options.quote {
        out.push(b'"');
    }
    write(out);
    if options.quote {
        out.push(b'"');
    }
}

fn text(value: Option<&str>, options: Options, out: &mut Vec<u8>) {
    match value {
        Some(value) if !value.is_empty() => quoted(options, out, |out| {
            if options.escape {
                // The characters escaped are ASCII: the others are copied byte by byte, whole.
                for &byte in value.as_bytes() {
                    if matches!(byte, b'"' | b'\\' | b']') {
                        out.push(b'\\');
                    }
                    out.push(byte);
                }
            } else {
                encode(value, out);
            }
        }),
        _ if options.quote => out.extend_from_slice(b"\"\""),
        _ => out.push(b'-'),
    }
}

fn number(value: i64, options: Options, out: &mut Vec<u8>) {
    if options.hex && value >= 0 {
        let _ = write!(out, "{value:04X}");
    } else {
        push_signed(out, value);
    }
}

fn ip(addr: IpAddr, options: Options, out: &mut Vec<u8>) {
    // A client behind an IPv4-mapped IPv6 socket is logged as IPv4, as HAProxy on a dual-stack bind does.
    let addr = match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    };
    if options.hex {
        let octets = match addr {
            IpAddr::V4(v4) => v4.octets().to_vec(),
            IpAddr::V6(v6) => v6.octets().to_vec(),
        };
        for octet in octets {
            let _ = write!(out, "{octet:02X}");
        }
    } else {
        quoted(options, out, |out| match addr {
            IpAddr::V4(v4) => {
                for (i, octet) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        out.push(b'.');
                    }
                    push_unsigned(out, u64::from(octet));
                }
            }
            IpAddr::V6(v6) => {
                let _ = write!(out, "{v6}");
            }
        });
    }
}

fn port(port: u16, options: Options, out: &mut Vec<u8>) {
    if options.hex {
        let _ = write!(out, "{port:04X}");
    } else {
        push_unsigned(out, u64::from(port));
    }
}

/// `{a|b}`; nothing at all when no header is captured.
fn captured_braces(values: &[Option<String>], options: Options, out: &mut Vec<u8>) {
    if values.is_empty() {
        return;
    }
    quoted(options, out, |out| {
        out.push(b'{');
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                out.push(b'|');
            }
            if let Some(value) = value {
                encode_header(value, out);
            }
        }
        out.push(b'}');
    });
}

/// The captured values separated by spaces, `-` for a missing one.
fn captured_list(values: &[Option<String>], options: Options, out: &mut Vec<u8>) {
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        match value {
            Some(value) if !value.is_empty() => quoted(options, out, |out| encode_header(value, out)),
            _ => text(None, options, out),
        }
    }
}

/// Control characters, DEL and beyond, `"` and `#` as `#XX` (HAProxy's encoding of the request line).
fn encode(value: &str, out: &mut Vec<u8>) {
    encode_with(value, out, |_| false)
}

/// As `encode`, plus the characters that delimit captures: `{`, `|`, `}`.
fn encode_header(value: &str, out: &mut Vec<u8>) {
    encode_with(value, out, |b| matches!(b, b'{' | b'|' | b'}'))
}

fn encode_with(value: &str, out: &mut Vec<u8>, also: impl Fn(u8) -> bool) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut start = 0;
    let bytes = value.as_bytes();
    for (at, &byte) in bytes.iter().enumerate() {
        if KEPT[usize::from(byte)] && !also(byte) {
            continue;
        }
        // The bytes kept go in by runs.
        out.extend_from_slice(&bytes[start..at]);
        out.push(b'#');
        out.push(HEX[usize::from(byte >> 4)]);
        out.push(HEX[usize::from(byte & 0xf)]);
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// The bytes a log line carries as they are: printable ASCII but `"` and `#`.
const KEPT: [bool; 256] = {
    let mut kept = [false; 256];
    let mut byte = 0x20;
    while byte < 0x7f {
        kept[byte] = byte != b'"' as usize && byte != b'#' as usize;
        byte += 1;
    }
    kept
};

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
