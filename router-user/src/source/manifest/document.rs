//! Splits a manifest file into YAML documents that keep their file lines; locates nodes in them.
//!
//! serde_yaml reports positions relative to the text it was given, so each document carries the
//! file line of its first line; the `---` marker line is kept (blanked) so document line 1 is the
//! marker's file line.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;

/// One YAML document of a file.
#[derive(Debug)]
pub(super) struct Document {
    /// 1-based file line of the document's first line.
    pub first_line: usize,
    pub text: String,
}

impl Document {
    /// An empty document starting at file line `first_line`.
    fn at(first_line: usize) -> Self {
        Self { first_line, text: String::new() }
    }

    /// Converts a 1-based line inside this document into the file line.
    pub fn file_line(&self, line: usize) -> usize {
        self.first_line + line.saturating_sub(1)
    }
}

/// Splits `text` at `---` document markers (and after `...` end markers). Directive lines (`%YAML`)
/// are blanked.
pub(super) fn split(text: &str) -> Vec<Document> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut docs = Vec::new();
    let mut current = Document::at(1);
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = index + 1;
        if let Some(rest) = marker(line, "---") {
            docs.push(std::mem::replace(&mut current, Document::at(number)));
            current.text.push_str("   ");
            current.text.push_str(rest);
        } else if marker(line, "...").is_some() {
            docs.push(std::mem::replace(&mut current, Document::at(number + 1)));
        } else if line.starts_with('%') {
            current.text.push('\n');
        } else {
            current.text.push_str(line);
        }
    }
    docs.push(current);
    docs.retain(|doc| !doc.text.trim().is_empty());
    docs
}

/// The rest of `line` after the marker, if `line` starts with a document marker (`---`/`...` then
/// space or end).
fn marker<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(marker)?;
    match rest.chars().next() {
        None | Some(' ' | '\t' | '\r' | '\n') => Some(rest),
        Some(_) => None,
    }
}

/// 1-based line (in `text`) where the document's top-level node starts.
pub(super) fn node_line(text: &str) -> Option<usize> {
    let err = serde_yaml::from_str::<Mark>(text).err()?;
    err.location().map(|at| at.line())
}

/// 1-based line (in `text`) where element `index` of the document's top-level `items` sequence
/// starts.
pub(super) fn item_line(text: &str, index: usize) -> Option<usize> {
    let err = probe_item::<Mark>(text, index).err()?;
    err.location().map(|at| at.line())
}

/// Deserializes element `index` of the document's `items` as `T` straight from the text, skipping
/// the rest, so a failure carries its position in `text` (a `serde_yaml::Value` has no positions).
pub(super) fn probe_item<T: DeserializeOwned>(text: &str, index: usize) -> Result<(), serde_yaml::Error> {
    ListProbe::<T> { index, item: PhantomData }.deserialize(serde_yaml::Deserializer::from_str(text))
}

/// Fails on whatever it is asked to read, so serde_yaml stamps the error with that node's start
/// position.
struct Mark;

impl<'de> de::Deserialize<'de> for Mark {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MarkVisitor;
        impl Visitor<'_> for MarkVisitor {
            type Value = Mark;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("nothing (position probe)")
            }
        }
        deserializer.deserialize_any(MarkVisitor)
    }
}

/// Walks `{ items: [...] }`, reading element `index` as `T` and ignoring everything else.
struct ListProbe<T> {
    index: usize,
    item: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for ListProbe<T> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for ListProbe<T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list object with items")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<serde_yaml::Value>()? {
            if key.as_str() == Some("items") {
                map.next_value_seed(ItemsProbe::<T> { index: self.index, item: PhantomData })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct ItemsProbe<T> {
    index: usize,
    item: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for ItemsProbe<T> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for ItemsProbe<T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence of objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut at = 0;
        loop {
            let more = if at == self.index {
                seq.next_element::<T>()?.is_some()
            } else {
                seq.next_element::<IgnoredAny>()?.is_some()
            };
            if !more {
                return Ok(());
            }
            at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_tracks_first_lines() {
        let text = "---\n# only a comment\n---\na: 1\n---   \n\n--- b: 2\n...\n# trailer\nc: 3\n";
        let docs = split(text);
        let got: Vec<(usize, &str)> = docs.iter().map(|d| (d.first_line, d.text.trim())).collect();
        assert_eq!(got, vec![(1, "# only a comment"), (3, "a: 1"), (7, "b: 2"), (9, "# trailer\nc: 3")]);
        // The marker line is blanked, not dropped, so document line 2 is file line 4.
        assert_eq!(docs[1].file_line(2), 4);
    }

    #[test]
    fn split_leaves_certificate_dashes_alone() {
        let text = "a: |\n  -----BEGIN CERTIFICATE-----\n----- not a marker\n";
        assert_eq!(split(text).len(), 1);
    }

    #[test]
    fn split_without_markers_and_crlf() {
        let docs = split("a: 1\r\n---\r\nb: 2\r\n");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].first_line, 2);
    }

    #[test]
    fn node_and_item_lines() {
        let text = concat!(
            "\n",
            "# c\n",
            "apiVersion: v1\n",
            "kind: List\n",
            "items:\n",
            "- kind: A\n",
            "  x: 1\n",
            "-   kind: B\n",
            "- {kind: C}\n",
        );
        assert_eq!(node_line(text), Some(3));
        assert_eq!(item_line(text, 0), Some(6));
        assert_eq!(item_line(text, 1), Some(8));
        assert_eq!(item_line(text, 2), Some(9));
        assert_eq!(item_line(text, 3), None);
    }

    #[test]
    fn probe_item_reports_field_line() {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Port {
            port: i32,
        }
        let text = "kind: List\nitems:\n- port: 1\n- port: 2\n- port: nope\n";
        assert!(probe_item::<Port>(text, 1).is_ok());
        let err = probe_item::<Port>(text, 2).expect_err("bad port");
        assert_eq!(err.location().map(|at| at.line()), Some(5));
    }
}
