//! A route's conditions beyond host and path prefix (from an HTTPRoute match) as the table checks them, and their
//! rank among the routes of one host and path (the Gateway API's precedence). Only routes made from such matches
//! have them; a lookup reads them only for a route whose path already matched.

use std::cmp::Ordering;
use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue, Method};
use k8s_openapi::jiff::Timestamp;
use regex::Regex;

use crate::model::{RequestMatch, ValueCondition};

/// What a route's conditions read of a request.
#[derive(Clone, Copy)]
pub struct RequestFacts<'r> {
    /// Without the query string.
    pub path: &'r str,
    pub method: &'r Method,
    pub headers: &'r HeaderMap,
    /// The raw query string, without its `?`.
    pub query: Option<&'r str>,
}

#[derive(Debug)]
pub struct Conditions {
    /// `Exact` path matches: the whole request path.
    exact_path: Option<Box<str>>,
    method: Option<Method>,
    headers: Box<[(HeaderName, Expected)]>,
    query_params: Box<[(Box<str>, Expected)]>,
    /// Something could not be compiled (the Gateway API step refuses such matches first): no request meets them.
    never: bool,
    /// The route's creation time (its HTTPRoute's), for ties.
    created: Option<Timestamp>,
    /// What they were compiled from.
    source: Arc<RequestMatch>,
}

#[derive(Debug)]
enum Expected {
    Exact(Box<str>),
    Regex(Regex),
}

impl Conditions {
    /// The conditions of `request_match` on a route of path `path` (its raw `spec.path`) created at `created`.
    pub fn compile(request_match: &Arc<RequestMatch>, path: Option<&str>, created: Option<Timestamp>) -> Self {
        let wanted = &request_match.conditions;
        let mut never = false;
        let method = wanted.method.as_deref().and_then(|m| usable(&mut never, Method::from_bytes(m.as_bytes()).ok()));
        let headers = (wanted.headers.iter())
            .filter_map(|c| {
                let name = HeaderName::from_bytes(c.name.as_bytes()).ok();
                usable(&mut never, name.zip(Expected::compile(c)))
            })
            .collect();
        let query_params = (wanted.query_params.iter())
            .filter_map(|c| usable(&mut never, Expected::compile(c).map(|expected| (c.name.as_str().into(), expected))))
            .collect();
        Self {
            exact_path: wanted.exact_path.then(|| path.unwrap_or("/").into()),
            method,
            headers,
            query_params,
            never,
            created,
            source: Arc::clone(request_match),
        }
    }

    /// Whether `a` and `b` ask the same of a request (both none included).
    pub fn same(a: Option<&Self>, b: Option<&Self>) -> bool {
        a.map(|c| &c.source.conditions) == b.map(|c| &c.source.conditions)
    }

    /// True when `request` meets every condition.
    pub fn accept(&self, request: &RequestFacts<'_>) -> bool {
        !self.never
            && self.exact_path.as_deref().is_none_or(|path| path == request.path)
            && self.method.as_ref().is_none_or(|method| method == request.method)
            && self.headers.iter().all(|(name, expected)| header_meets(request.headers, name, expected))
            && self.query_params.iter().all(|(name, expected)| query_meets(request.query, name, expected))
    }

    /// The Gateway API's order between matches of one host and path: an exact path first, then a method match,
    /// then more header matches, then more query matches, then the older route, then the HTTPRoute's
    /// namespace/name, rule and match. Routes without conditions rank last and equal among themselves.
    pub fn precedence(a: Option<&Self>, b: Option<&Self>) -> Ordering {
        let rank = |c: Option<&Self>| {
            c.map_or((false, false, 0, 0), |c| {
                (c.exact_path.is_some(), c.method.is_some(), c.headers.len(), c.query_params.len())
            })
        };
        rank(b).cmp(&rank(a)).then_with(|| match (a, b) {
            (Some(a), Some(b)) => a.created.cmp(&b.created).then_with(|| a.source.origin.cmp(&b.source.origin)),
            _ => Ordering::Equal,
        })
    }
}

impl Expected {
    fn compile(condition: &ValueCondition) -> Option<Self> {
        if !condition.regex {
            return Some(Expected::Exact(condition.value.as_str().into()));
        }
        Regex::new(&condition.whole_value_pattern()).ok().map(Expected::Regex)
    }
}

/// `compiled`, noting in `never` when it is not.
fn usable<T>(never: &mut bool, compiled: Option<T>) -> Option<T> {
    *never |= compiled.is_none();
    compiled
}

/// A header's value is its values joined by `, ` when it is repeated (RFC 9110's combination).
fn header_meets(headers: &HeaderMap, name: &HeaderName, expected: &Expected) -> bool {
    let all = headers.get_all(name);
    let mut values = all.iter();
    let Some(first) = values.next().map(HeaderValue::as_bytes) else { return false };
    let repeated = values.next().is_some();
    let parts = || all.iter().map(HeaderValue::as_bytes);
    match expected {
        Expected::Exact(want) if !repeated => first == want.as_bytes(),
        Expected::Exact(want) => joined_equals(parts(), want.as_bytes()),
        Expected::Regex(regex) if !repeated => std::str::from_utf8(first).is_ok_and(|v| regex.is_match(v)),
        Expected::Regex(regex) => {
            // Repeated headers with a regular expression: rare enough to join them into a new string.
            String::from_utf8(parts().collect::<Vec<_>>().join(&b", "[..])).is_ok_and(|v| regex.is_match(&v))
        }
    }
}

/// Whether `parts` joined by `, ` equal `want`, without joining them.
fn joined_equals<'v>(parts: impl Iterator<Item = &'v [u8]>, want: &[u8]) -> bool {
    let mut rest = want;
    for (index, part) in parts.enumerate() {
        if index > 0 {
            let Some(after) = rest.strip_prefix(b", ") else { return false };
            rest = after;
        }
        let Some(after) = rest.strip_prefix(part) else { return false };
        rest = after;
    }
    rest.is_empty()
}

/// The first parameter named `name` (percent-decoded names and values; `+` is not a space, as in URIs).
fn query_meets(query: Option<&str>, name: &str, expected: &Expected) -> bool {
    let Some(query) = query else { return false };
    let found =
        query.split('&').map(|pair| pair.split_once('=').unwrap_or((pair, ""))).find(|(n, _)| decoded_equals(n, name));
    let Some((_, value)) = found else { return false };
    match expected {
        Expected::Exact(want) => decoded_equals(value, want),
        Expected::Regex(regex) => match value.contains('%') {
            false => regex.is_match(value),
            true => String::from_utf8(PercentDecoded(value.as_bytes()).collect()).is_ok_and(|v| regex.is_match(&v)),
        },
    }
}

fn decoded_equals(raw: &str, want: &str) -> bool {
    if !raw.contains('%') {
        return raw == want;
    }
    PercentDecoded(raw.as_bytes()).eq(want.bytes())
}

/// Bytes with `%XX` escapes decoded (a `%` not followed by two hex digits stays as it is).
struct PercentDecoded<'a>(&'a [u8]);

impl Iterator for PercentDecoded<'_> {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        let (&first, rest) = self.0.split_first()?;
        let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
        if let (b'%', [high, low, after @ ..]) = (first, rest) {
            if let (Some(high), Some(low)) = (hex(*high), hex(*low)) {
                self.0 = after;
                return Some(high << 4 | low);
            }
        }
        self.0 = rest;
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MatchOrigin, RequestConditions};

    fn value(name: &str, value: &str, regex: bool) -> ValueCondition {
        ValueCondition { name: name.into(), value: value.into(), regex }
    }

    fn compile(conditions: RequestConditions, path: &str) -> Conditions {
        let origin = MatchOrigin::default();
        Conditions::compile(&Arc::new(RequestMatch { conditions, origin }), Some(path), None)
    }

    fn facts<'r>(
        path: &'r str,
        method: &'r Method,
        headers: &'r HeaderMap,
        query: Option<&'r str>,
    ) -> RequestFacts<'r> {
        RequestFacts { path, method, headers, query }
    }

    #[test]
    fn exact_paths_and_methods() {
        let exact = compile(RequestConditions { exact_path: true, ..Default::default() }, "/one");
        let headers = HeaderMap::new();
        for (path, want) in [("/one", true), ("/one/", false), ("/one/x", false), ("/One", false)] {
            assert_eq!(exact.accept(&facts(path, &Method::GET, &headers, None)), want, "{path}");
        }
        let post = compile(RequestConditions { method: Some("POST".into()), ..Default::default() }, "/");
        assert!(post.accept(&facts("/x", &Method::POST, &headers, None)));
        assert!(!post.accept(&facts("/x", &Method::GET, &headers, None)));
    }

    #[test]
    fn headers_by_case_insensitive_name_exact_value_or_whole_regex() {
        let wanted = RequestConditions {
            headers: vec![value("version", "two", false), value("color", "bl(ue|ack)", true)],
            ..Default::default()
        };
        let conditions = compile(wanted, "/");
        let check = |pairs: &[(&str, &str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.append(
                    HeaderName::from_bytes(name.as_bytes()).expect("name"),
                    HeaderValue::from_str(value).expect("value"),
                );
            }
            conditions.accept(&facts("/", &Method::GET, &headers, None))
        };
        assert!(check(&[("Version", "two"), ("COLOR", "blue")]));
        assert!(check(&[("version", "two"), ("color", "black")]));
        assert!(!check(&[("version", "Two"), ("color", "blue")]), "values are case-sensitive");
        assert!(!check(&[("version", "two"), ("color", "blueish")]), "the whole value must match");
        assert!(!check(&[("version", "two")]), "every header must be there");
        assert!(!check(&[("version", "two"), ("version", "three"), ("color", "blue")]), "joined: `two, three`");

        let joined = compile(RequestConditions { headers: vec![value("a", "1, 2", false)], ..Default::default() }, "/");
        let mut headers = HeaderMap::new();
        headers.append("a", HeaderValue::from_static("1"));
        headers.append("a", HeaderValue::from_static("2"));
        assert!(joined.accept(&facts("/", &Method::GET, &headers, None)), "repeated values compare joined");
    }

    #[test]
    fn query_params_by_exact_name_first_value_decoded() {
        let wanted = RequestConditions {
            query_params: vec![value("animal", "whale", false), value("size", "[0-9]+", true)],
            ..Default::default()
        };
        let conditions = compile(wanted, "/");
        let headers = HeaderMap::new();
        let check = |query: &str| conditions.accept(&facts("/", &Method::GET, &headers, Some(query)));
        assert!(check("animal=whale&size=12"));
        assert!(check("size=3&x&animal=wh%61le"), "percent-decoded");
        assert!(!check("ANIMAL=whale&size=1"), "names are case-sensitive");
        assert!(!check("animal=whaledolphin&size=1"));
        assert!(!check("animal=dog&animal=whale&size=1"), "the first value counts");
        assert!(!check("animal=whale&size=1x"), "the whole value must match");
        assert!(!check("animal=whale"));
        assert!(!conditions.accept(&facts("/", &Method::GET, &headers, None)));
    }

    #[test]
    fn conditions_that_do_not_compile_take_no_request() {
        let broken = compile(RequestConditions { headers: vec![value("x", "(", true)], ..Default::default() }, "/");
        let mut headers = HeaderMap::new();
        headers.insert("x", HeaderValue::from_static("("));
        assert!(!broken.accept(&facts("/", &Method::GET, &headers, None)));
    }

    #[test]
    fn precedence_puts_exact_then_method_then_headers_then_query_first() {
        let exact = compile(RequestConditions { exact_path: true, ..Default::default() }, "/a");
        let method = compile(RequestConditions { method: Some("GET".into()), ..Default::default() }, "/a");
        let two_headers =
            RequestConditions { headers: vec![value("a", "1", false), value("b", "1", false)], ..Default::default() };
        let one_header_two_queries = RequestConditions {
            headers: vec![value("a", "1", false)],
            query_params: vec![value("a", "1", false), value("b", "1", false)],
            ..Default::default()
        };
        let query =
            compile(RequestConditions { query_params: vec![value("q", "1", false)], ..Default::default() }, "/a");
        let (two_headers, one_header) = (compile(two_headers, "/a"), compile(one_header_two_queries, "/a"));
        let mut ranked = [
            ("none", None),
            ("query", Some(&query)),
            ("one header", Some(&one_header)),
            ("two headers", Some(&two_headers)),
            ("method", Some(&method)),
            ("exact", Some(&exact)),
        ];
        ranked.sort_by(|a, b| Conditions::precedence(a.1, b.1));
        let order: Vec<&str> = ranked.iter().map(|(name, _)| *name).collect();
        assert_eq!(order, ["exact", "method", "two headers", "one header", "query", "none"]);
    }
}
