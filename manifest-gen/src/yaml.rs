//! YAML text: scalars written plain when YAML reads them back as the same string (as `oc get -o yaml` does) and
//! double-quoted otherwise, string maps, and literal blocks for PEM data.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Words YAML 1.1 or 1.2 reads as booleans or null when plain.
const RESERVED_WORDS: &[&str] = &["true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"];

/// `text` as a YAML scalar that reads back as the string `text`: plain when it is made of letters, digits and
/// `._/-`, starts with a letter or `/`, and is no reserved word; double-quoted otherwise (so an empty string,
/// numbers, addresses, wildcards and anything with spaces or YAML indicators are quoted).
pub fn scalar(text: &str) -> Cow<'_, str> {
    if is_plain_safe(text) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(quoted(text))
    }
}

fn is_plain_safe(text: &str) -> bool {
    let mut chars = text.chars();
    let Some(first) = chars.next() else { return false };
    (first.is_ascii_alphabetic() || first == '/')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'))
        && !RESERVED_WORDS.iter().any(|word| text.eq_ignore_ascii_case(word))
}

/// A double-quoted YAML scalar: backslash, quote and control characters escaped.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `<indent>key:` followed by one `<indent>  name: value` line per pair; nothing when `pairs` is empty.
pub fn push_string_map(out: &mut String, indent: &str, key: &str, pairs: &[(String, String)]) {
    if pairs.is_empty() {
        return;
    }
    let _ = writeln!(out, "{indent}{key}:");
    for (name, value) in pairs {
        let _ = writeln!(out, "{indent}  {}: {}", scalar(name), scalar(value));
    }
}

/// `<indent>key: |` and `text`'s lines two spaces deeper (a literal block: the value is `text` with one final
/// newline).
pub fn push_literal_block(out: &mut String, indent: &str, key: &str, text: &str) {
    let _ = writeln!(out, "{indent}{key}: |");
    for line in text.trim_end().lines() {
        let _ = writeln!(out, "{indent}  {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_only_when_yaml_reads_the_same_string() {
        for plain in ["web", "r00001.bench.example.com", "/api", "kubernetes.io/service-name", "bench-pod-0", "None"] {
            assert_eq!(scalar(plain), plain);
        }
        let expectations = [
            ("", "\"\""),
            ("127.0.0.11", "\"127.0.0.11\""),
            ("::1", "\"::1\""),
            ("8080", "\"8080\""),
            ("true", "\"true\""),
            ("No", "\"No\""),
            ("*.example.com", "\"*.example.com\""),
            ("5s", "\"5s\""),
            ("2026-11-01T10:00:00Z", "\"2026-11-01T10:00:00Z\""),
            ("a b", "\"a b\""),
            ("x: y", "\"x: y\""),
            ("say \"hi\"\\", "\"say \\\"hi\\\"\\\\\""),
            ("line\nbreak", "\"line\\nbreak\""),
        ];
        for (text, yaml) in expectations {
            assert_eq!(scalar(text), yaml, "{text:?}");
        }
    }

    #[test]
    fn literal_blocks_indent_every_line_and_maps_skip_when_empty() {
        let mut out = String::new();
        push_literal_block(&mut out, "    ", "key", "-----BEGIN-----\nAAA\n-----END-----\n\n");
        assert_eq!(out, "    key: |\n      -----BEGIN-----\n      AAA\n      -----END-----\n");
        let mut map = String::new();
        push_string_map(&mut map, "  ", "labels", &[]);
        assert_eq!(map, "");
        push_string_map(&mut map, "  ", "labels", &[("tier".into(), "internal".into()), ("n".into(), "1".into())]);
        assert_eq!(map, "  labels:\n    tier: internal\n    \"n\": \"1\"\n");
    }
}
