//! Text inputs split the way several targets read them: the fuzzer's bytes as UTF-8 (lossily, so that every
//! input reaches the parser), one setting per line.

/// `data` as text, invalid UTF-8 replaced.
pub(super) fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// `key=value` lines (a line without `=` is a key with an empty value); `\r` before a line end is kept, as
/// a value may hold one.
pub(super) fn key_values(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.split('\n').filter(|line| !line.is_empty()).map(|line| line.split_once('=').unwrap_or((line, "")))
}
