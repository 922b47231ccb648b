//! Splits a manifest file into YAML documents that keep their file lines; locates nodes in them.
//!
//! The YAML reader reports positions relative to the text it was given, so each document carries the
//! file line of its first line; the `---` marker line is kept (blanked) so document line 1 is the
//! marker's file line.

use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_saphyr::Spanned;

use super::yaml;

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
    // Ordinary lines are copied as one run (from `run` to the next special line): a file of thousands of
    // documents is copied in thousands of pieces, not millions.
    let mut run = None;
    let mut offset = 0;
    for (index, line) in lines_with_breaks(text).enumerate() {
        let (number, start) = (index + 1, offset);
        offset += line.len();
        let special = line.starts_with("---") || line.starts_with("...") || line.starts_with('%');
        if !special {
            run.get_or_insert(start);
            continue;
        }
        if let Some(from) = run.take() {
            current.text.push_str(&text[from..start]);
        }
        if let Some(rest) = marker(line, "---") {
            docs.push(std::mem::replace(&mut current, Document::at(number)));
            current.text.push_str("   ");
            current.text.push_str(rest);
        } else if marker(line, "...").is_some() {
            docs.push(std::mem::replace(&mut current, Document::at(number + 1)));
        } else if line.starts_with('%') {
            // Blanked to its line break, if it has one (the last line may not).
            current.text.push_str(&line[line.trim_end_matches(['\r', '\n']).len()..]);
        } else {
            current.text.push_str(line);
        }
    }
    if let Some(from) = run {
        current.text.push_str(&text[from..]);
    }
    docs.push(current);
    docs.retain(|doc| !doc.text.trim().is_empty());
    docs
}

/// The lines of `text` with their line breaks, which are YAML's: `\r\n`, `\n`, and a `\r` alone (the reader
/// counts lines so, and the documents' file lines must agree with it).
fn lines_with_breaks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let bytes = rest.as_bytes();
        let end = match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            None => rest.len(),
            Some(at) if bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n') => at + 2,
            Some(at) => at + 1,
        };
        let (line, after) = rest.split_at(end);
        rest = after;
        Some(line)
    })
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

/// One step of a path into a document: a mapping's key or a sequence's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// 1-based line (in `text`) where the document's top-level node starts.
pub(super) fn node_line(text: &str) -> Option<usize> {
    path_line(text, &[])
}

/// 1-based line (in `text`) where element `index` of the document's top-level `items` sequence
/// starts.
pub(super) fn item_line(text: &str, index: usize) -> Option<usize> {
    probe(text, &[Step::Key("items"), Step::Index(index)])
}

/// 1-based line (in `text`) where the node at `path` starts, or the deepest node on `path` that the
/// document has (a missing field's error names the mapping that lacks it).
pub(super) fn path_line(text: &str, path: &[Step<'_>]) -> Option<usize> {
    (0..=path.len()).rev().find_map(|len| probe(text, &path[..len]))
}

/// The line of the node at `path`, as the reader saw it (`Spanned`); `None` when `path` is not in the
/// document (or the text does not read).
fn probe(text: &str, path: &[Step<'_>]) -> Option<usize> {
    let line = yaml::with_deserializer(text, |reader| PathProbe { path }.deserialize(reader)).ok()??;
    usize::try_from(line).ok().filter(|line| *line > 0)
}

/// Walks `path` (skipping everything beside it) and reads the node there with its position: its line, or
/// `None` when the path leads nowhere.
struct PathProbe<'p> {
    path: &'p [Step<'p>],
}

impl<'de> DeserializeSeed<'de> for PathProbe<'_> {
    type Value = Option<u64>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<u64>, D::Error> {
        match self.path.first() {
            None => {
                let node = Spanned::<IgnoredAny>::deserialize(deserializer)?;
                Ok(Some(node.referenced.line()))
            }
            Some(Step::Key(_)) => deserializer.deserialize_map(self),
            Some(Step::Index(_)) => deserializer.deserialize_seq(self),
        }
    }
}

impl<'de> Visitor<'de> for PathProbe<'_> {
    type Value = Option<u64>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the node of a path (position probe)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<u64>, A::Error> {
        let wanted = match self.path.first() {
            Some(Step::Key(key)) => Some(*key),
            _ => None,
        };
        let rest = self.path.get(1..).unwrap_or_default();
        let mut line = None;
        while let Some(key) = map.next_key::<String>()? {
            if line.is_none() && wanted == Some(key.as_str()) {
                line = map.next_value_seed(PathProbe { path: rest })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(line)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<u64>, A::Error> {
        let wanted = match self.path.first() {
            Some(Step::Index(index)) => Some(*index),
            _ => None,
        };
        let rest = self.path.get(1..).unwrap_or_default();
        let (mut at, mut line) = (0, None);
        loop {
            let more = if Some(at) == wanted {
                seq.next_element_seed(PathProbe { path: rest })?.map(|found| line = found).is_some()
            } else {
                seq.next_element::<IgnoredAny>()?.is_some()
            };
            if !more {
                return Ok(line);
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
    fn path_lines_of_fields_and_of_the_deepest_node_there_is() {
        let text = "kind: List\nitems:\n- port: 1\n- port: 2\n- spec:\n    ports:\n    - port: nope\n";
        let at = |path: &[Step<'_>]| path_line(text, path);
        assert_eq!(at(&[Step::Key("items"), Step::Index(1), Step::Key("port")]), Some(4));
        let deep = [Step::Key("items"), Step::Index(2), Step::Key("spec"), Step::Key("ports"), Step::Index(0)];
        assert_eq!(at(&[&deep[..], &[Step::Key("port")]].concat()), Some(7));
        // A missing field: the mapping that lacks it.
        assert_eq!(at(&[&deep[..], &[Step::Key("name")]].concat()), Some(7));
        assert_eq!(at(&[Step::Key("items"), Step::Index(9)]), Some(3), "no such item: the sequence");
        assert_eq!(at(&[Step::Key("kind"), Step::Key("x")]), Some(1), "a scalar where a mapping is walked");
    }
}
