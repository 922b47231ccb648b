//! `v1` Namespace: a name and its labels (what sharding by namespace selects on).

use std::fmt::Write as _;

use crate::document::Manifest;
use crate::yaml::{push_string_map, scalar};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Namespace {
    pub name: String,
    pub labels: Vec<(String, String)>,
}

impl Namespace {
    pub fn new(name: impl Into<String>) -> Namespace {
        Namespace { name: name.into(), labels: Vec::new() }
    }

    pub fn with_label(mut self, name: impl Into<String>, value: impl Into<String>) -> Namespace {
        self.labels.push((name.into(), value.into()));
        self
    }
}

impl Manifest for Namespace {
    fn write_yaml(&self, out: &mut String) {
        let _ = write!(out, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n", scalar(&self.name));
        push_string_map(out, "  ", "labels", &self.labels);
        out.push_str("---\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_with_labels() {
        let yaml = Namespace::new("shard-a").with_label("tier", "internal").to_yaml();
        assert_eq!(
            yaml,
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shard-a\n  labels:\n    tier: internal\n---\n"
        );
        assert!(!Namespace::new("plain").to_yaml().contains("labels"));
    }
}
