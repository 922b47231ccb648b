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
}
