//! The YAML reader of manifest files (serde-saphyr), in one place: its options, and an error's line and reason.
//!
//! Scalars read as the manifest source has always read them (YAML 1.2 core schema): only `true` and `false` are
//! booleans (not `yes`/`on`), and `010` or `1_000` stay strings. The size budget is raised so a big `kind: List`
//! document (thousands of routes) reads whole; nesting and alias limits stay. Errors carry no source snippet:
//! the caller names the file and line itself.

use serde::de::DeserializeOwned;
use serde_saphyr::{Budget, Options};

pub(super) use serde_saphyr::Error;

/// Events (and, below, nodes) one document may hold: 40 times the library's defaults, a `List` of well over
/// 10,000 objects.
const MAX_EVENTS: usize = 40_000_000;
const MAX_NODES: usize = 10_000_000;

fn options() -> Options {
    let mut budget = Budget::default();
    budget.max_events = MAX_EVENTS;
    budget.max_nodes = MAX_NODES;
    let mut options = Options::default();
    options.budget = Some(budget);
    options.strict_booleans = true;
    options.leading_zero_numbers_as_strings = true;
    options.underscored_numbers_as_strings = true;
    options.with_snippet = false;
    options
}

/// Reads one document (`text` holds no `---` marker) as `T`.
pub(super) fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    serde_saphyr::from_str_with_options(text, options())
}

/// Runs `read` on a deserializer of `text` (for seeds that walk the document).
pub(super) fn with_deserializer<R>(
    text: &str,
    read: impl for<'e> FnOnce(serde_saphyr::Deserializer<'_, 'e>) -> Result<R, Error>,
) -> Result<R, Error> {
    serde_saphyr::with_deserializer_from_str_with_options(text, options(), read)
}

/// The 1-based line in the text read where `error` was found, when known.
pub(super) fn line(error: &Error) -> Option<usize> {
    let line = error.location()?.line();
    usize::try_from(line).ok().filter(|line| *line > 0)
}

/// The message of `error` without its `at line L, column C` part: the position is relative to the document
/// that was read, and the caller reports the file line instead.
pub(super) fn reason(error: &Error) -> String {
    let text = error.without_snippet().to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(" at ") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let after = &tail[" at ".len()..];
        match position_len(after) {
            Some(len) => rest = &after[len..],
            None => {
                out.push_str(" at ");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Length of a leading `line L, column C` (the comma optional), if `s` starts with one.
fn position_len(s: &str) -> Option<usize> {
    fn digits(s: &str) -> usize {
        s.bytes().take_while(u8::is_ascii_digit).count()
    }
    let rest = s.strip_prefix("line ")?;
    let line = digits(rest);
    let after_line = &rest[line..];
    let separator = if after_line.starts_with(", column ") { ", column " } else { " column " };
    let rest = after_line.strip_prefix(separator)?;
    let column = digits(rest);
    (line > 0 && column > 0).then_some("line ".len() + line + separator.len() + column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> serde_json::Value {
        from_str(text).unwrap_or_else(|error| panic!("{text:?}: {error}"))
    }

    #[test]
    fn scalars_read_as_the_yaml_1_2_core_schema() {
        let read = value("a: on\nb: yes\nc: 010\nd: 1_000\ne: true\nf: 0x1f\ng: ~\nh: 8080\n");
        let want = serde_json::json!({
            "a": "on", "b": "yes", "c": "010", "d": "1_000", "e": true, "f": 31, "g": null, "h": 8080
        });
        assert_eq!(read, want);
    }

    #[test]
    fn a_comment_only_document_is_null() {
        assert_eq!(value("# only a comment\n"), serde_json::Value::Null);
    }

    #[test]
    fn reason_drops_positions_and_line_is_the_documents() {
        let error = from_str::<serde_json::Value>("a: [1, 2\nb: 3\n").expect_err("unterminated flow");
        let reason = reason(&error);
        assert!(!reason.contains("line "), "{reason}");
        assert!(!reason.is_empty());
        assert_eq!(line(&error), Some(2));
        let duplicate = from_str::<serde_json::Value>("a: 1\n\na: 2\n").expect_err("duplicate key");
        assert_eq!(line(&duplicate), Some(3));
    }

    #[test]
    fn positions_of_both_forms_are_dropped() {
        assert_eq!(position_len("line 12, column 3 rest"), Some("line 12, column 3".len()));
        assert_eq!(position_len("line 12 column 3"), Some("line 12 column 3".len()));
        assert_eq!(position_len("line x"), None);
    }

    #[test]
    fn a_list_bigger_than_the_default_budget_reads() {
        // 20 nodes per item: 300,000 nodes, over the library's default of 250,000 (an `oc get -o yaml` List
        // of about 5,000 routes).
        let item = format!("- [{}]\n", ["0"; 19].join(","));
        let text = format!("kind: List\nitems:\n{}", item.repeat(15_000));
        let default_budget = serde_saphyr::from_str::<serde_json::Value>(&text);
        assert!(default_budget.is_err(), "the default budget refuses it");
        let read = value(&text);
        assert_eq!(read["items"].as_array().map(Vec::len), Some(15_000));
    }
}
