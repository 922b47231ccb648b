//! Route path matching with the OpenShift router's segment-boundary prefix rules.
//!
//! The OpenShift router turns `host` + `path` into `^host\.?(:[0-9]+)?<path><subpath>$` where the subpath part
//! is `(/|/.*)?` for a path of only slashes (match everything), `(.*)?` for a path ending in `/`, and `(/.*)?`
//! otherwise. Matching is case-sensitive and ignores the query string.

use std::cmp::Ordering;

/// A route's path, normalised so that "", "/" and "//" all mean "every path".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutePath(String);

impl RoutePath {
    pub fn new(path: Option<&str>) -> Self {
        let path = path.unwrap_or("");
        if path.trim_end_matches('/').is_empty() {
            RoutePath(String::new())
        } else {
            RoutePath(path.to_string())
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when a request path (without the query string) falls under this route path.
    pub fn matches(&self, request_path: &str) -> bool {
        let prefix = self.0.as_str();
        if prefix.is_empty() {
            return true;
        }
        match request_path.strip_prefix(prefix) {
            None => false,
            Some(rest) => prefix.ends_with('/') || rest.is_empty() || rest.starts_with('/'),
        }
    }

    /// The OpenShift router's map order: reverse-lexical, so a longer path that extends a shorter one is
    /// tried first and the first match is the longest.
    pub fn match_order(&self, other: &Self) -> Ordering {
        other.0.cmp(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_boundary_prefix_rules() {
        let cases: &[(&str, &str, bool)] = &[
            ("/sub", "/sub", true),
            ("/sub", "/sub/", true),
            ("/sub", "/sub/x", true),
            ("/sub", "/subpar", false),
            ("/sub", "/", false),
            ("/sub", "/Sub", false),
            ("/sub/", "/sub/", true),
            ("/sub/", "/sub/x", true),
            ("/sub/", "/sub", false),
            ("/sub/", "/subx", false),
            ("/a/b", "/a/b/c", true),
            ("/a/b", "/a/bc", false),
            ("/", "/anything", true),
            ("/", "", true),
            ("", "/x", true),
            ("//", "/x", true),
        ];
        for (route, request, want) in cases {
            assert_eq!(RoutePath::new(Some(route)).matches(request), *want, "route {route:?} request {request:?}");
        }
    }

    #[test]
    fn longest_prefix_sorts_first() {
        let mut paths: Vec<RoutePath> =
            ["/", "/sub", "/sub/x", "/sub/", "/a"].iter().map(|p| RoutePath::new(Some(p))).collect();
        paths.sort_by(|a, b| a.match_order(b));
        let order: Vec<&str> = paths.iter().map(RoutePath::as_str).collect();
        assert_eq!(order, ["/sub/x", "/sub/", "/sub", "/a", ""]);
    }
}
