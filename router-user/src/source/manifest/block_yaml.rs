//! A fast reader for the plain block-style YAML that `oc get -o yaml`, `kubectl` and generators print: block
//! mappings and sequences, one-line plain and quoted scalars, literal block scalars (`|`, `|-`), `[]` and `{}`.
//!
//! It writes such a document as JSON text several times faster than the full YAML reader reads it, which
//! matters at 100,000 routes (a 100 MB file); the text then decodes straight into the object's type. It never
//! reports errors and never guesses: at the first thing outside that subset (flow collections, anchors,
//! aliases, tags, folded or multi-line scalars, comments after a value, a scalar whose type the YAML schema
//! options decide, tabs, CR line breaks, anything malformed) it answers `None` and the caller reads the
//! document with the full reader, which also owns every error message. Where it answers, the value is the one
//! the full reader gives (checked on the fixtures and by the `manifest` fuzz target).

use serde_json::Value;

/// A document read into JSON text, with its top-level `apiVersion` and `kind` (empty when absent or not
/// strings), so the caller can pick the type to decode the text into before decoding it.
pub(super) struct Json {
    pub text: String,
    pub api_version: String,
    pub kind: String,
}

/// The document `text` (no `---` marker in it) as JSON text, or `None` when the full reader must read it.
pub(super) fn to_json(text: &str) -> Option<Json> {
    if !printable_without_tabs(text) {
        return None;
    }
    let mut reader = Reader {
        lines: text.split('\n').map(Line::new).collect(),
        at: 0,
        out: String::with_capacity(text.len()),
        depth: 0,
        api_version: String::new(),
        kind: String::new(),
    };
    let Some(first) = reader.next_content() else {
        reader.out.push_str("null");
        return Some(reader.into_json());
    };
    if first.indent > 0 {
        return None; // content on the `---` line itself, or an indented document
    }
    if is_item(first.body) {
        reader.sequence(first.indent)?;
    } else {
        reader.mapping(first.indent)?;
    }
    match reader.next_content() {
        None => Some(reader.into_json()),
        Some(_) => None,
    }
}

/// The document `text` as a JSON value, or `None` when the full reader must read it.
pub(super) fn read(text: &str) -> Option<Value> {
    serde_json::from_str(&to_json(text)?.text).ok()
}

/// Whether `text` holds only what YAML allows in a document (no control characters, no byte order mark
/// inside) and no tabs or carriage returns (both change how a line reads; the full reader knows how).
fn printable_without_tabs(text: &str) -> bool {
    let ascii_ok = !text.bytes().any(|b| (b < 0x20 && b != b'\n') || b == 0x7f);
    let special =
        |c: char| c.is_control() || matches!(c, '\u{feff}' | '\u{fffe}' | '\u{ffff}' | '\u{2028}' | '\u{2029}');
    ascii_ok && (text.is_ascii() || !text.chars().any(special))
}

/// Every document of the file `text` that `read` answers, beside what the full reader makes of it (`None`
/// where it fails): the two must be equal. For the `manifest` fuzz target.
pub(crate) fn answers_beside_full_reader(text: &str) -> Vec<(Value, Option<Value>)> {
    let docs = super::document::split(text);
    let answered = docs.iter().filter_map(|doc| Some((read(&doc.text)?, doc)));
    answered.map(|(fast, doc)| (fast, super::yaml::from_str::<Value>(&doc.text).ok())).collect()
}

#[derive(Clone, Copy)]
struct Line<'t> {
    indent: usize,
    /// The line after its indentation, trailing spaces removed.
    body: &'t str,
    /// The line after its indentation as it is (trailing spaces are content in a block scalar).
    text: &'t str,
}

impl<'t> Line<'t> {
    fn new(raw: &'t str) -> Self {
        let text = raw.trim_start_matches(' ');
        Line { indent: raw.len() - text.len(), body: text.trim_end_matches(' '), text }
    }

    /// Blank, or a comment line: neither is content outside a block scalar.
    fn is_filler(&self) -> bool {
        self.body.is_empty() || self.body.starts_with('#')
    }
}

/// Reads lines and writes the JSON text of the nodes they hold into `out`. Each node method returns `None` at
/// the first thing it leaves to the full reader (what it wrote is then discarded).
struct Reader<'t> {
    lines: Vec<Line<'t>>,
    at: usize,
    out: String,
    /// Mappings open around the current line (1 inside the top-level mapping).
    depth: usize,
    api_version: String,
    kind: String,
}

impl<'t> Reader<'t> {
    fn into_json(self) -> Json {
        Json { text: self.out, api_version: self.api_version, kind: self.kind }
    }

    /// The next line that is neither blank nor a comment, without consuming it.
    fn next_content(&mut self) -> Option<Line<'t>> {
        while let Some(line) = self.lines.get(self.at) {
            if !line.is_filler() {
                return Some(*line);
            }
            self.at += 1;
        }
        None
    }

    /// The block mapping whose keys sit at column `indent`, from the current line.
    fn mapping(&mut self, indent: usize) -> Option<()> {
        let mut keys: Vec<&str> = Vec::new();
        self.depth += 1;
        self.out.push('{');
        while let Some(line) = self.next_content() {
            if line.indent < indent || (line.indent == indent && is_item(line.body)) {
                break;
            }
            if line.indent > indent {
                return None;
            }
            let (key, rest) = split_key(line.body)?;
            if keys.contains(&key) {
                return None; // a duplicate key: the full reader decides what that means
            }
            if !keys.is_empty() {
                self.out.push(',');
            }
            keys.push(key);
            write_string(&mut self.out, key);
            self.out.push(':');
            self.at += 1;
            match rest {
                "" => self.nested(indent, true)?,
                "|" | "|-" => self.literal(indent, rest == "|-")?,
                _ => {
                    let value = scalar(rest)?;
                    if self.depth == 1 {
                        self.note_top_level(key, &value);
                    }
                    value.write(&mut self.out);
                }
            }
        }
        self.out.push('}');
        self.depth -= 1;
        Some(())
    }

    /// Keeps the top-level `apiVersion` and `kind`.
    fn note_top_level(&mut self, key: &str, value: &Scalar<'_>) {
        let Scalar::String(text) = value else { return };
        match key {
            "apiVersion" => self.api_version = text.to_string(),
            "kind" => self.kind = text.to_string(),
            _ => {}
        }
    }

    /// The block sequence whose `-` indicators sit at column `indent`, from the current line.
    fn sequence(&mut self, indent: usize) -> Option<()> {
        self.out.push('[');
        let mut first = true;
        while let Some(line) = self.next_content() {
            if line.indent < indent || !is_item(line.body) {
                break;
            }
            if line.indent > indent {
                return None;
            }
            if !std::mem::take(&mut first) {
                self.out.push(',');
            }
            let after_dash = &line.body[1..];
            let rest = after_dash.trim_start_matches(' ');
            if rest.is_empty() {
                self.at += 1;
                self.nested(indent, false)?;
                continue;
            }
            // The item's content starts on this line: read it as if it were a line of its own at its column.
            let column = indent + 1 + (after_dash.len() - rest.len());
            self.lines[self.at] = Line { indent: column, body: rest, text: rest };
            if is_item(rest) {
                self.sequence(column)?;
            } else if split_key(rest).is_some() {
                self.mapping(column)?;
            } else {
                self.at += 1;
                match rest {
                    "|" | "|-" => self.literal(indent, rest == "|-")?,
                    _ => scalar(rest)?.write(&mut self.out),
                }
            }
        }
        self.out.push(']');
        Some(())
    }

    /// The value of a key or item with nothing after it on its line: a block node below it (a sequence may
    /// sit at the key's own column), or null.
    fn nested(&mut self, parent: usize, sequence_at_parent: bool) -> Option<()> {
        let Some(line) = self.next_content() else {
            self.out.push_str("null");
            return Some(());
        };
        if line.indent > parent {
            if is_item(line.body) {
                self.sequence(line.indent)
            } else if split_key(line.body).is_some() {
                self.mapping(line.indent)
            } else {
                None // a scalar on the next line (a multi-line plain scalar, or a node property)
            }
        } else if line.indent == parent && sequence_at_parent && is_item(line.body) {
            self.sequence(line.indent)
        } else {
            self.out.push_str("null");
            Some(())
        }
    }

    /// A literal block scalar (`|` keeps one final line break, `|-` none) whose parent sits at column
    /// `parent`: the lines below it indented more than the parent, less the first content line's indentation.
    fn literal(&mut self, parent: usize, strip: bool) -> Option<()> {
        let start = self.at;
        let mut end = start;
        let mut last_content = None;
        let mut content_indent = None;
        while let Some(line) = self.lines.get(end) {
            if line.body.is_empty() {
                end += 1;
                continue;
            }
            if line.indent <= parent {
                break;
            }
            let indent = *content_indent.get_or_insert(line.indent);
            if line.indent < indent {
                return None;
            }
            last_content = Some(end);
            end += 1;
        }
        let (last, indent) = (last_content?, content_indent?);
        let mut text = String::new();
        for (n, line) in self.lines[start..=last].iter().enumerate() {
            if n > 0 {
                text.push('\n');
            }
            if line.body.is_empty() {
                // Spaces beyond the content's indentation on an empty line would be content; leave them to the
                // full reader.
                if line.indent > indent {
                    return None;
                }
            } else {
                text.extend(std::iter::repeat_n(' ', line.indent - indent));
                text.push_str(line.text);
            }
        }
        if !strip {
            text.push('\n');
        }
        self.at = last + 1;
        write_string(&mut self.out, &text);
        Some(())
    }
}

/// A one-line scalar as read.
enum Scalar<'t> {
    Null,
    Bool(bool),
    /// A decimal integer that fits an i64, as written.
    Integer(&'t str),
    String(std::borrow::Cow<'t, str>),
    EmptySequence,
    EmptyMapping,
}

impl Scalar<'_> {
    fn write(&self, out: &mut String) {
        match self {
            Scalar::Null => out.push_str("null"),
            Scalar::Bool(true) => out.push_str("true"),
            Scalar::Bool(false) => out.push_str("false"),
            Scalar::Integer(digits) => out.push_str(digits),
            Scalar::String(text) => write_string(out, text),
            Scalar::EmptySequence => out.push_str("[]"),
            Scalar::EmptyMapping => out.push_str("{}"),
        }
    }
}

/// `text` as a JSON string.
fn write_string(out: &mut String, text: &str) {
    use std::fmt::Write;
    out.push('"');
    let mut rest = text;
    while let Some(at) = rest.find(|c: char| c == '"' || c == '\\' || c < ' ') {
        out.push_str(&rest[..at]);
        let c = rest[at..].chars().next().unwrap_or_default();
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            _ => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
        }
        rest = &rest[at + c.len_utf8()..];
    }
    out.push_str(rest);
    out.push('"');
}

/// A `- ` item line (or a `-` alone).
fn is_item(body: &str) -> bool {
    body == "-" || body.starts_with("- ")
}

/// `key: rest` with a plain key; `rest` is empty for `key:` at the end of the line. `None` when the line is
/// not one this reader takes as a mapping entry.
fn split_key(body: &str) -> Option<(&str, &str)> {
    let first = *body.as_bytes().first()?;
    if is_indicator(first) || first == b'-' || first == b'<' {
        return None;
    }
    let colon = find_pair(body, b':', b' ').or_else(|| body.strip_suffix(':').map(str::len))?;
    let key = &body[..colon];
    if key.contains(['#', '\'', '"']) || key.ends_with(' ') || key_is_typed(key) {
        return None;
    }
    Some((key, body[colon + 1..].trim_start_matches(' ')))
}

/// Keys the schema might read as something other than their text (null, booleans, numbers): those starting
/// like a number or `~`, and the spellings of null and the booleans.
fn key_is_typed(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | '~')) || is_keyword(key)
}

/// Spellings that YAML 1.1 or 1.2 reads as null or a boolean, in any case.
fn is_keyword(text: &str) -> bool {
    const WORDS: [&str; 9] = ["null", "true", "false", "yes", "no", "on", "off", "y", "n"];
    text.len() <= 5 && WORDS.iter().any(|word| word.eq_ignore_ascii_case(text))
}

/// The position of the first `first` directly followed by `second` (a byte scan: these texts are short, and a
/// substring search costs more than it saves on them).
fn find_pair(text: &str, first: u8, second: u8) -> Option<usize> {
    text.as_bytes().windows(2).position(|pair| pair[0] == first && pair[1] == second)
}

/// YAML's indicator characters that may not start a plain scalar (or that start one this reader leaves to the
/// full reader).
fn is_indicator(byte: u8) -> bool {
    matches!(byte, b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>')
        || matches!(byte, b'\'' | b'"' | b'%' | b'@' | b'`')
}

/// A scalar on one line (nothing else follows it on the line).
fn scalar(text: &str) -> Option<Scalar<'_>> {
    match text.as_bytes().first()? {
        b'\'' => single_quoted(text).map(|text| Scalar::String(text.into())),
        b'"' => double_quoted(text).map(|text| Scalar::String(text.into())),
        _ if text == "[]" => Some(Scalar::EmptySequence),
        _ if text == "{}" => Some(Scalar::EmptyMapping),
        &first if is_indicator(first) => None,
        b'-' if matches!(text.as_bytes().get(1), None | Some(b' ')) => None,
        _ => plain(text),
    }
}

/// A plain scalar: null, `true`/`false`, a decimal integer, or a string. Anything the schema options decide
/// (other spellings of booleans and null, floats, octal and hex, leading zeros, underscores) goes to the
/// full reader.
fn plain(text: &str) -> Option<Scalar<'_>> {
    if find_pair(text, b':', b' ').is_some() || text.ends_with(':') || find_pair(text, b' ', b'#').is_some() {
        return None;
    }
    match text {
        "~" | "null" => return Some(Scalar::Null),
        "true" => return Some(Scalar::Bool(true)),
        "false" => return Some(Scalar::Bool(false)),
        _ => {}
    }
    if is_keyword(text) {
        return None;
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if [".inf", ".nan"].iter().any(|word| word.eq_ignore_ascii_case(unsigned)) {
        return None;
    }
    let starts_numeric = unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    if !starts_numeric {
        return Some(Scalar::String(text.into()));
    }
    if unsigned.bytes().all(|b| b.is_ascii_digit()) {
        let canonical = !text.starts_with('+') && text != "-0" && (unsigned == "0" || !unsigned.starts_with('0'));
        let fits = text.parse::<i64>().is_ok();
        return (canonical && fits).then_some(Scalar::Integer(text));
    }
    let radix_prefix = unsigned.starts_with('0') && unsigned[1..].starts_with(|c: char| c.is_ascii_alphabetic());
    if looks_like_float(unsigned) || unsigned.contains('_') || radix_prefix {
        return None;
    }
    Some(Scalar::String(text.into()))
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`: the core schema's float, sign removed.
fn looks_like_float(text: &str) -> bool {
    let digits = |s: &str| s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let whole = digits(text);
    let mut rest = &text[whole..];
    let mut fraction = 0;
    if let Some(after) = rest.strip_prefix('.') {
        fraction = digits(after);
        rest = &after[fraction..];
    } else if whole == 0 {
        return false;
    }
    if whole == 0 && fraction == 0 {
        return false;
    }
    if let Some(after) = rest.strip_prefix(['e', 'E']) {
        let after = after.strip_prefix(['-', '+']).unwrap_or(after);
        let exponent = digits(after);
        return exponent > 0 && exponent == after.len();
    }
    rest.is_empty()
}

/// `'...'` with `''` for a quote, alone on the rest of the line.
fn single_quoted(text: &str) -> Option<String> {
    let inner = text.strip_prefix('\'')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.char_indices();
    while let Some((at, c)) = chars.next() {
        if c != '\'' {
            out.push(c);
            continue;
        }
        if inner[at + 1..].starts_with('\'') {
            out.push('\'');
            chars.next();
            continue;
        }
        return inner[at + 1..].is_empty().then_some(out);
    }
    None
}

/// `"..."` with the common escapes, alone on the rest of the line.
fn double_quoted(text: &str) -> Option<String> {
    let inner = text.strip_prefix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return inner[at + 1..].is_empty().then_some(out),
            '\\' => {
                let escaped = match chars.next()?.1 {
                    '\\' => '\\',
                    '"' => '"',
                    '/' => '/',
                    'n' => '\n',
                    't' => '\t',
                    'u' => {
                        let hex: String = (0..4).map(|_| chars.next().map(|(_, c)| c)).collect::<Option<_>>()?;
                        char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
                    }
                    _ => return None,
                };
                out.push(escaped);
            }
            _ => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests;
