//! Header actions: the route's `spec.httpHeaders.actions` and the router-wide `ROUTER_HTTP_REQUEST_HEADERS` /
//! `ROUTER_HTTP_RESPONSE_HEADERS` (comma-separated, percent-encoded `name:value:Set` and `name:Delete`).
//! Values may be dynamic, as OpenShift allows: `%[req.hdr(Name)]` in requests, `%[res.hdr(Name)]` in
//! responses, with `,lower` and `,base64` converters; `%%` is a literal percent.

use http::{HeaderMap, HeaderName, HeaderValue};

use crate::model::RouteHttpHeader;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Request,
    Response,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderAction {
    pub name: HeaderName,
    pub op: HeaderOp,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderOp {
    Set(ValueTemplate),
    /// A value added after those already there (an HTTPRoute header modifier's `add`).
    Append(HeaderValue),
    Delete,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueTemplate {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// A header of the message the action applies to (`req.hdr` on requests, `res.hdr` on responses).
    Header {
        name: HeaderName,
        lower: bool,
        base64: bool,
    },
    /// `ssl_c_der`: the client certificate; empty without mutual TLS.
    ClientCertificate,
}

impl ValueTemplate {
    pub fn parse(text: &str, direction: Direction) -> Result<ValueTemplate, String> {
        let fetch = match direction {
            Direction::Request => "req.hdr(",
            Direction::Response => "res.hdr(",
        };
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('%') {
            literal.push_str(&rest[..at]);
            rest = &rest[at + 1..];
            if let Some(after) = rest.strip_prefix('%') {
                literal.push('%');
                rest = after;
                continue;
            }
            // Optional `{+Q}`-style flags are accepted and ignored.
            if rest.starts_with('{') {
                let end = rest.find('}').ok_or_else(|| format!("unclosed flags in {text:?}"))?;
                rest = &rest[end + 1..];
            }
            let body = rest.strip_prefix('[').ok_or_else(|| format!("expected %[...] in {text:?}"))?;
            let end = body.find(']').ok_or_else(|| format!("unclosed %[ in {text:?}"))?;
            let mut items = body[..end].split(',');
            let sample = items.next().unwrap_or("");
            let (mut lower, mut base64) = (false, false);
            for converter in items {
                match converter.trim() {
                    "lower" => lower = true,
                    "base64" => base64 = true,
                    other => return Err(format!("converter {other:?} is not allowed in {text:?}")),
                }
            }
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            }
            if sample == "ssl_c_der" {
                parts.push(Part::ClientCertificate);
            } else if let Some(name) = sample.strip_prefix(fetch).and_then(|s| s.strip_suffix(')')) {
                let name =
                    HeaderName::from_bytes(name.as_bytes()).map_err(|_| format!("bad header name in {text:?}"))?;
                parts.push(Part::Header { name, lower, base64 });
            } else {
                return Err(format!("sample {sample:?} is not allowed in {text:?}"));
            }
            rest = &body[end + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        if parts.is_empty() {
            return Err("empty header value".into());
        }
        Ok(ValueTemplate { parts })
    }

    /// The value for a message whose headers are `headers`; `None` if it is not a valid header value.
    pub fn render(&self, headers: &HeaderMap) -> Option<HeaderValue> {
        if let [Part::Literal(text)] = self.parts.as_slice() {
            return HeaderValue::from_str(text).ok();
        }
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Header { name, lower, base64 } => {
                    let value = headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
                    let mut value = value.unwrap_or_default();
                    if *lower {
                        value = value.to_ascii_lowercase();
                    }
                    if *base64 {
                        value = encode_base64(value.as_bytes());
                    }
                    out.push_str(&value);
                }
                Part::ClientCertificate => {}
            }
        }
        HeaderValue::from_str(&out).ok()
    }
}

/// Applies `actions` in order to `headers`.
pub fn apply(actions: &[HeaderAction], headers: &mut HeaderMap) {
    for action in actions {
        match &action.op {
            HeaderOp::Delete => {
                headers.remove(&action.name);
            }
            HeaderOp::Append(value) => {
                headers.append(action.name.clone(), value.clone());
            }
            HeaderOp::Set(template) => match template.render(headers) {
                Some(value) => {
                    headers.insert(action.name.clone(), value);
                }
                None => {
                    headers.remove(&action.name);
                }
            },
        }
    }
}

/// The route's actions for one direction; invalid ones are returned as errors (admission refuses most).
pub fn from_route(list: &[RouteHttpHeader], direction: Direction) -> (Vec<HeaderAction>, Vec<String>) {
    let mut actions = Vec::new();
    let mut errors = Vec::new();
    for header in list {
        let value = header.action.set.as_ref().map(|s| s.value.as_str());
        match build(&header.name, &header.action.kind, value, direction) {
            Ok(action) => actions.push(action),
            Err(error) => errors.push(error),
        }
    }
    (actions, errors)
}

/// Values an HTTPRoute appends, literally; invalid ones are returned as errors (the Gateway API step refuses them
/// first).
pub fn appends(list: &[(String, String)]) -> (Vec<HeaderAction>, Vec<String>) {
    let mut actions = Vec::new();
    let mut errors = Vec::new();
    for (name, value) in list {
        match (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
            (Ok(name), Ok(value)) => actions.push(HeaderAction { name, op: HeaderOp::Append(value) }),
            _ => errors.push(format!("header {name:?}: not a valid header to add")),
        }
    }
    (actions, errors)
}

/// Parses `ROUTER_HTTP_REQUEST_HEADERS`-style lists.
pub fn from_env(text: &str, direction: Direction) -> (Vec<HeaderAction>, Vec<String>) {
    let mut actions = Vec::new();
    let mut errors = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let fields: Vec<String> = item.split(':').map(percent_decode).collect();
        let result = match fields.as_slice() {
            [name, value, kind] => build(name, kind, Some(value), direction),
            [name, kind] => build(name, kind, None, direction),
            _ => Err(format!("{item:?}: expected name:value:Set or name:Delete")),
        };
        match result {
            Ok(action) => actions.push(action),
            Err(error) => errors.push(error),
        }
    }
    (actions, errors)
}

fn build(name: &str, kind: &str, value: Option<&str>, direction: Direction) -> Result<HeaderAction, String> {
    let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| format!("invalid header name {name:?}"))?;
    let op = match (kind, value) {
        ("Set", Some(value)) => HeaderOp::Set(ValueTemplate::parse(value, direction)?),
        ("Delete", _) => HeaderOp::Delete,
        (kind, _) => return Err(format!("header {name}: unsupported action {kind:?}")),
    };
    Ok(HeaderAction { name: header, op })
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).and_then(|b| hex(*b)), bytes.get(i + 2).and_then(|b| hex(*b))) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode_base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for (i, shift) in [18, 12, 6, 0].iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_lists_decode_percent_encoding_and_keep_order() {
        let (actions, errors) = from_env(
            "X-Frame-Options:DENY:Set,X-XSS-Protection:1%3Bmode%3Dblock:Set,X-Frame-Options:Delete",
            Direction::Response,
        );
        assert!(errors.is_empty(), "{errors:?}");
        let mut headers = HeaderMap::new();
        apply(&actions[..2], &mut headers);
        assert_eq!(headers["x-xss-protection"], "1;mode=block");
        assert_eq!(headers["x-frame-options"], "DENY");
        apply(&actions[2..], &mut headers);
        assert!(!headers.contains_key("x-frame-options"));
        let (accept, _) = from_env("Accept:text%2Fplain%2C+text%2Fhtml:Set", Direction::Request);
        let mut request = HeaderMap::new();
        apply(&accept, &mut request);
        assert_eq!(request["accept"], "text/plain, text/html");
    }

    #[test]
    fn dynamic_values_read_the_message_headers() {
        let template = ValueTemplate::parse("host=%[req.hdr(Host),lower] %%", Direction::Request).expect("template");
        let mut headers = HeaderMap::new();
        headers.insert("host", HeaderValue::from_static("WWW.Example.COM"));
        assert_eq!(template.render(&headers).expect("value"), "host=www.example.com %");
        let encoded = ValueTemplate::parse("%[req.hdr(host),base64]", Direction::Request).expect("template");
        assert_eq!(encoded.render(&headers).expect("value"), "V1dXLkV4YW1wbGUuQ09N");
        assert!(ValueTemplate::parse("%[res.hdr(x)]", Direction::Request).is_err(), "res.hdr only on responses");
        assert!(ValueTemplate::parse("%[src]", Direction::Request).is_err());
        assert!(ValueTemplate::parse("%[req.hdr(x),upper]", Direction::Request).is_err());
    }

    #[test]
    fn appended_values_follow_those_already_there_literally() {
        let adds = [("X-Add".to_string(), "v2 %[req.hdr(host)]".to_string()), ("bad name".into(), "x".into())];
        let (actions, errors) = appends(&adds);
        assert_eq!(errors.len(), 1, "{errors:?}");
        let mut headers = HeaderMap::new();
        headers.insert("x-add", HeaderValue::from_static("v1"));
        apply(&actions, &mut headers);
        let values: Vec<&str> = headers.get_all("x-add").iter().map(|v| v.to_str().expect("ASCII")).collect();
        assert_eq!(values, ["v1", "v2 %[req.hdr(host)]"]);
    }

    #[test]
    fn base64_padding() {
        for (input, want) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg==")] {
            assert_eq!(encode_base64(input.as_bytes()), want);
        }
    }
}
