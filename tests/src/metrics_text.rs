//! Reading a Prometheus text page in tests: one series' value, every line of a family.

/// The value of the series written exactly as `series` (name and labels), if the page has it.
pub fn series_value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Like [`series_value`], panicking with the page when the series is missing.
pub fn value_of(text: &str, series: &str) -> f64 {
    series_value(text, series).unwrap_or_else(|| panic!("no series {series} in:\n{text}"))
}

/// The sample lines of family `name` (its name followed by `{` or a space), without comments.
pub fn samples<'t>(text: &'t str, name: &str) -> Vec<&'t str> {
    text.lines()
        .filter(|line| line.strip_prefix(name).is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' ')))
        .collect()
}
