//! `ManifestError`: a problem with one manifest file, with the file line it was found at.

use std::fmt;
use std::path::PathBuf;

/// A manifest file (or the manifest path itself) that could not be read or parsed.
///
/// Displays as `"{path}:{line}: {reason}"`, or `"{path}: {reason}"` when no line applies (I/O
/// errors).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {reason}", path.display(), LineSuffix(*line))]
pub struct ManifestError {
    pub path: PathBuf,
    /// 1-based line in the file.
    pub line: Option<usize>,
    pub reason: String,
}

impl ManifestError {
    pub(crate) fn new(path: impl Into<PathBuf>, line: Option<usize>, reason: impl Into<String>) -> Self {
        Self { path: path.into(), line, reason: reason.into() }
    }

    /// Logs the error at warn level, with the path, line and reason as fields.
    pub(crate) fn log(&self) {
        let path = self.path.display();
        tracing::warn!(%path, line = self.line, reason = %self.reason, "manifest error");
    }
}

struct LineSuffix(Option<usize>);

impl fmt::Display for LineSuffix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(line) => write!(f, ":{line}"),
            None => Ok(()),
        }
    }
}

/// A serde_yaml message without its `at line L column C` / `at position N` parts: the position is
/// relative to the document we fed serde_yaml, and the caller reports the file line instead.
pub(crate) fn yaml_reason(err: &serde_yaml::Error) -> String {
    let text = err.to_string();
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

/// Length of a leading `line L column C` or `position N`, if `s` starts with one.
fn position_len(s: &str) -> Option<usize> {
    fn digits(s: &str) -> usize {
        s.bytes().take_while(u8::is_ascii_digit).count()
    }
    if let Some(rest) = s.strip_prefix("line ") {
        let line = digits(rest);
        let rest = rest[line..].strip_prefix(" column ")?;
        let column = digits(rest);
        (line > 0 && column > 0).then_some("line ".len() + line + " column ".len() + column)
    } else {
        let rest = s.strip_prefix("position ")?;
        let n = digits(rest);
        (n > 0).then_some("position ".len() + n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_with_and_without_line() {
        let e = ManifestError::new("/m/a.yaml", Some(12), "bad");
        assert_eq!(e.to_string(), "/m/a.yaml:12: bad");
        let e = ManifestError::new("/m", None, "No such file or directory (os error 2)");
        assert_eq!(e.to_string(), "/m: No such file or directory (os error 2)");
    }

    #[test]
    fn yaml_reason_drops_positions() {
        let err = serde_yaml::from_str::<serde_yaml::Value>("a: [1, 2\nb: 3\n").expect_err("unterminated flow");
        let reason = yaml_reason(&err);
        assert!(!reason.contains("line "), "{reason}");
        assert!(!reason.is_empty());
    }
}
