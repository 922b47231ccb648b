//! Reading the test backend's JSON report (the body it answers with: what it saw of the request), whichever
//! client carried the request.

/// Every value the backend saw for request header `name` (lowercase), from its `report`.
pub fn seen_header(report: &serde_json::Value, name: &str) -> Vec<String> {
    report["headers"][name]
        .as_array()
        .map(|values| values.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}
