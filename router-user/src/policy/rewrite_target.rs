//! `haproxy.router.openshift.io/rewrite-target` as the OpenShift router's HAProxy applies it: the path a pod
//! receives, computed from the annotation value, the route's `spec.path` and the request path.
//!
//! OpenShift's template uses a value only when it matches `^/.*$` (a leading slash, no line feed), passes it
//! through its sanitiser (`processRewriteTarget`) and writes
//! `http-request replace-path '^<spec.path>(.*)$' '<sanitised>'`, with `/?` after the path when the value is
//! exactly `/`. HAProxy then reads the quoted value as a configuration word, compiles it as a log-format string
//! and substitutes it as a regex replacement (`\N` a capture group, `\xHH` a byte, `\c` the character c).
//! Each stage is one function below, in that order; the query string is never part of the match and is kept.
//!
//! Two differences remain on purpose. OpenShift puts `spec.path` into the regex unescaped, so a path holding
//! regex operators (`\ ^ $ [ ( ) | ? * +`) matches there as a pattern; here it is matched literally (plain
//! paths, letters, digits, `/ - _ . ~ %` and the like, behave the same either way). And where HAProxy would
//! send bytes a request target cannot hold (a space, `#`, control bytes), `request_target` percent-encodes them.

/// Why a rewrite-target value is not applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotApplied {
    /// The template ignores values that do not start with `/`.
    #[error("does not start with '/', so the OpenShift router ignores it")]
    NoLeadingSlash,
    /// The template's `^/.*$` does not match across a line feed.
    #[error("contains a line feed, so the OpenShift router ignores it")]
    LineFeed,
    /// HAProxy ends a configuration line at a carriage return or NUL, inside the quoted value: it refuses the
    /// whole configuration (unmatched quote) and the OpenShift router keeps its previous one.
    #[error("contains a carriage return or NUL, which makes HAProxy refuse the OpenShift router's configuration")]
    BreaksConfiguration,
}

/// A route's compiled rewrite-target rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RewriteTarget {
    /// `spec.path` as the rule's regex holds it (carriage returns and line feeds dropped by the template).
    route_path: String,
    /// The value is exactly `/`: one slash after the route path is absorbed (`^<path>/?(.*)$`).
    absorbs_slash: bool,
    replacement: Replacement,
}

/// HAProxy's replacement string, parsed once.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Replacement {
    Parts(Vec<Part>),
    /// Ends in a lone `\` or a cut `\x` escape: HAProxy fails every rewrite with it (500).
    Broken,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Bytes(Vec<u8>),
    /// `\0`..`\9`: group 0 is the whole path, group 1 what follows the route path, others are empty.
    Group(u8),
}

/// What HAProxy does with one request's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathRewrite {
    /// The rule's regex does not match: the path goes as it came.
    Unchanged,
    /// The path HAProxy sends, without the query string (which it keeps).
    Rewritten(Vec<u8>),
    /// HAProxy's substitution fails: it answers 500 and forwards nothing.
    Failed,
}

impl RewriteTarget {
    /// Compiles the annotation `value` (raw, untrimmed) for a route whose `spec.path` is `route_path`.
    pub fn new(value: &str, route_path: Option<&str>) -> Result<RewriteTarget, NotApplied> {
        if !value.starts_with('/') {
            return Err(NotApplied::NoLeadingSlash);
        }
        if value.contains('\n') {
            return Err(NotApplied::LineFeed);
        }
        let word = configuration_word(&sanitize(value))?;
        let replacement = parse_replacement(log_format_text(&word).as_bytes());
        let route_path = route_path.unwrap_or("").chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
        Ok(RewriteTarget { route_path, absorbs_slash: value == "/", replacement })
    }

    /// Applies the rule to `request_path` (the path only, no query string).
    pub fn apply(&self, request_path: &str) -> PathRewrite {
        let Some(mut tail) = request_path.strip_prefix(self.route_path.as_str()) else {
            return PathRewrite::Unchanged;
        };
        if self.absorbs_slash {
            tail = tail.strip_prefix('/').unwrap_or(tail);
        }
        let Replacement::Parts(parts) = &self.replacement else {
            return PathRewrite::Failed;
        };
        let mut path = Vec::with_capacity(request_path.len() + 16);
        for part in parts {
            match part {
                Part::Bytes(bytes) => path.extend_from_slice(bytes),
                Part::Group(0) => path.extend_from_slice(request_path.as_bytes()),
                Part::Group(1) => path.extend_from_slice(tail.as_bytes()),
                Part::Group(_) => {}
            }
        }
        PathRewrite::Rewritten(path)
    }
}

/// OpenShift's sanitiser, stage by stage: an unescaped `#` ends the value; unescaped `"` and `'` are dropped
/// (an escaped `'` becomes the shell-style `'\\''`); a run of an odd number of `%` is doubled; a lone `\` is
/// dropped and `\\` becomes `\`; `\1` is appended unless a `#` ended the value. "Escaped" means preceded by a
/// `\` that is not itself escaped, judged afresh in each of the first three passes.
fn sanitize(value: &str) -> String {
    let (value, commented) = cut_at_comment(value);
    let value = drop_unescaped(&value, '"', None);
    let value = drop_unescaped(&value, '\'', Some("'\\\\''"));
    let value = double_odd_percent_runs(&value);
    let value = drop_lone_backslashes(&value);
    let mut value = value.replace("\\\\", "\\");
    if !commented {
        value.push_str("\\1");
    }
    value
}

/// The value up to its first unescaped `#`, and whether there was one.
fn cut_at_comment(value: &str) -> (String, bool) {
    let mut out = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        if c == '#' && !escaped {
            return (out, true);
        }
        out.push(c);
        escaped = c == '\\' && !escaped;
    }
    (out, false)
}

/// Drops every unescaped `quote`; an escaped one is kept, or replaced by `escaped_form` when given.
fn drop_unescaped(value: &str, quote: char, escaped_form: Option<&str>) -> String {
    let mut out = String::with_capacity(value.len() + value.len() / 4);
    let mut escaped = false;
    for c in value.chars() {
        if c == quote {
            match (escaped, escaped_form) {
                (false, _) => {}
                (true, Some(form)) => out.push_str(form),
                (true, None) => out.push(c),
            }
            escaped = false;
            continue;
        }
        out.push(c);
        escaped = c == '\\' && !escaped;
    }
    out
}

/// Every maximal run of `%` of odd length is doubled; even runs stay.
fn double_odd_percent_runs(value: &str) -> String {
    map_runs(value, '%', |run| if run % 2 == 1 { run * 2 } else { run })
}

/// Every `\` that stands alone (not next to another `\`) is dropped.
fn drop_lone_backslashes(value: &str) -> String {
    map_runs(value, '\\', |run| if run == 1 { 0 } else { run })
}

/// Rewrites each maximal run of `of` to `new_length(run length)` copies of it.
fn map_runs(value: &str, of: char, new_length: impl Fn(usize) -> usize) -> String {
    let mut out = String::with_capacity(value.len() * 2);
    let mut run = 0;
    for c in value.chars() {
        if c == of {
            run += 1;
            continue;
        }
        out.extend(std::iter::repeat_n(of, new_length(run)));
        run = 0;
        out.push(c);
    }
    out.extend(std::iter::repeat_n(of, new_length(run)));
    out
}

/// HAProxy's reading of `'<sanitised>'` on the configuration line. Inside single quotes every byte is literal
/// (no `\` escapes, no `$` variables, no `#` comments); the only quotes a sanitised value holds are the
/// `'\''` sequences the sanitiser wrote, which read as: close the quote, an escaped `'`, reopen. A carriage
/// return or NUL ends the line inside the quote.
fn configuration_word(sanitized: &str) -> Result<String, NotApplied> {
    if sanitized.contains(['\r', '\0']) {
        return Err(NotApplied::BreaksConfiguration);
    }
    Ok(sanitized.replace("'\\''", "'"))
}

/// HAProxy's log-format compilation of the word: `%%` is one literal `%`. The sanitiser leaves only runs of
/// `%` of even length, so no `%` starts a variable or a sample expression.
fn log_format_text(word: &str) -> String {
    word.replace("%%", "%")
}

/// HAProxy's regex replacement syntax: `\` + digit is a capture group, `\x` + two characters is the byte
/// they spell (each taken as a hex digit, without checking), `\` + anything else is that character. A `\` at
/// the end, or a `\x` with fewer than two characters after it, fails every substitution.
fn parse_replacement(text: &[u8]) -> Replacement {
    let mut parts = Vec::new();
    let mut literal = Vec::new();
    let mut rest = text;
    while let Some((&byte, after)) = rest.split_first() {
        rest = after;
        if byte != b'\\' {
            literal.push(byte);
            continue;
        }
        match rest {
            [] => return Replacement::Broken,
            [digit, after @ ..] if digit.is_ascii_digit() => {
                if !literal.is_empty() {
                    parts.push(Part::Bytes(std::mem::take(&mut literal)));
                }
                parts.push(Part::Group(digit - b'0'));
                rest = after;
            }
            [b'x', high, low, after @ ..] => {
                literal.push((hex_value(*high) << 4).wrapping_add(hex_value(*low)));
                rest = after;
            }
            [b'x', ..] => return Replacement::Broken,
            [other, after @ ..] => {
                literal.push(*other);
                rest = after;
            }
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Bytes(literal));
    }
    Replacement::Parts(parts)
}

/// One `\x` digit as HAProxy computes it: uppercased, minus `'0'`, minus 7 more above `'9'`, in a byte.
fn hex_value(digit: u8) -> u8 {
    let value = digit.to_ascii_uppercase().wrapping_sub(b'0');
    if value > 9 {
        value.wrapping_sub(b'A' - b'9' - 1)
    } else {
        value
    }
}

/// The request target for `path` + `?query`, as `http::Uri` can carry it: byte for byte when it can, else
/// with the bytes it cannot hold percent-encoded (space, `#`, control bytes, `<`, `>`, invalid UTF-8, and a
/// few more after a `?`). HAProxy would send those raw.
pub fn request_target(path: &[u8], query: Option<&str>) -> String {
    let mut bytes = path.to_vec();
    if let Some(query) = query {
        bytes.push(b'?');
        bytes.extend_from_slice(query.as_bytes());
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    let mut in_query = false;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match u8::try_from(c) {
                Ok(byte) if byte.is_ascii() && !carried(byte, in_query) => percent_encode(byte, &mut out),
                _ => out.push(c),
            }
            in_query |= c == '?';
        }
        for &byte in chunk.invalid() {
            percent_encode(byte, &mut out);
        }
    }
    out
}

/// Whether `http::Uri` keeps the ASCII `byte` as it is, in the path or (after the first `?`) in the query.
fn carried(byte: u8, in_query: bool) -> bool {
    match byte {
        b'#' => false,
        b'?' => true,
        _ if in_query => matches!(byte, 0x21 | 0x24..=0x3B | 0x3D | 0x3F..=0x7E),
        _ => matches!(byte, 0x21 | 0x22 | 0x24..=0x3B | 0x3D | 0x40..=0x5F | 0x61..=0x7E),
    }
}

fn percent_encode(byte: u8, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('%');
    out.push(char::from(HEX[usize::from(byte >> 4)]));
    out.push(char::from(HEX[usize::from(byte & 0xF)]));
}

#[cfg(test)]
mod tests;
