//! An HTTPRoute match as a route path and the conditions the route carries beside it: `PathPrefix` (a trailing
//! slash dropped: the Gateway API matches `/a/` as `/a`) and `Exact` paths, `Exact` and `RegularExpression` header
//! and query parameter matches, a method. `RegularExpression` paths are not served.

use http::HeaderName;

use super::super::gateway_api::{HTTPRouteMatch, ValueMatch};
use crate::model::{RequestConditions, ValueCondition};

/// The methods an HTTPRoute match may name.
const METHODS: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"];

/// A match as served: the route path and what else a request must meet.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchPlan {
    pub path: String,
    pub conditions: RequestConditions,
}

/// The served form of `one`; `Err` names what cannot be served.
pub fn plan_match(one: &HTTPRouteMatch) -> Result<MatchPlan, String> {
    let kind = one.path.as_ref().and_then(|p| p.kind.as_deref()).unwrap_or("PathPrefix");
    let value = one.path.as_ref().and_then(|p| p.value.as_deref()).unwrap_or("/");
    let (path, exact_path) = match kind {
        "PathPrefix" => {
            let trimmed = value.trim_end_matches('/');
            (if trimmed.is_empty() { "/".into() } else { trimmed.into() }, false)
        }
        "Exact" if value.starts_with('/') => (value.to_string(), true),
        "Exact" => return Err(format!("Exact path {value:?} does not start with /")),
        other => return Err(format!("{other} path matches are not served")),
    };
    let method = match one.method.as_deref() {
        Some(method) if !METHODS.contains(&method) => return Err(format!("method {method:?} is not an HTTP method")),
        method => method.map(str::to_string),
    };
    let headers = conditions(&one.headers, "header", |name| {
        let lowered = name.to_ascii_lowercase();
        HeaderName::from_bytes(lowered.as_bytes()).is_ok().then_some(lowered)
    })?;
    let query_params = conditions(&one.query_params, "query parameter", |name| Some(name.to_string()))?;
    Ok(MatchPlan { path, conditions: RequestConditions { exact_path, method, headers, query_params } })
}

/// `matches` as conditions sorted by name, with names as `name_of` spells them (`None`: not a valid name). Only
/// the first entry of a name counts, as the Gateway API says.
fn conditions(
    matches: &[ValueMatch],
    what: &str,
    name_of: impl Fn(&str) -> Option<String>,
) -> Result<Vec<ValueCondition>, String> {
    let mut out: Vec<ValueCondition> = Vec::with_capacity(matches.len());
    for one in matches {
        let name = name_of(&one.name).filter(|n| !n.is_empty());
        let name = name.ok_or_else(|| format!("{what} name {:?} is not valid", one.name))?;
        let regex = match one.kind.as_deref().unwrap_or("Exact") {
            "Exact" => false,
            "RegularExpression" => true,
            other => return Err(format!("{what} match type {other} is not served")),
        };
        let condition = ValueCondition { name, value: one.value.clone(), regex };
        if regex {
            if let Err(error) = regex::Regex::new(&condition.whole_value_pattern()) {
                return Err(format!("{what} {} regular expression: {error}", one.name));
            }
        }
        if !out.iter().any(|c| c.name == condition.name) {
            out.push(condition);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn plan(value: serde_json::Value) -> Result<MatchPlan, String> {
        plan_match(&serde_json::from_value(value).expect("match"))
    }

    #[test]
    fn paths_prefix_trimmed_exact_kept_regex_refused() {
        let prefix = plan(json!({"path": {"type": "PathPrefix", "value": "/api/"}})).expect("prefix");
        assert_eq!((prefix.path.as_str(), prefix.conditions.is_empty()), ("/api", true));
        let exact = plan(json!({"path": {"type": "Exact", "value": "/one/"}})).expect("exact");
        assert_eq!((exact.path.as_str(), exact.conditions.exact_path), ("/one/", true));
        assert_eq!(plan(json!({})).expect("default").path, "/");
        let refused = plan(json!({"path": {"type": "RegularExpression", "value": "/a.*"}}));
        assert_eq!(refused, Err("RegularExpression path matches are not served".into()));
    }

    #[test]
    fn headers_lowercased_first_of_a_name_sorted_and_queries_as_written() {
        let made = plan(json!({
            "method": "POST",
            "headers": [{"name": "Version", "value": "two"}, {"name": "color", "value": "b.*", "type": "RegularExpression"},
                        {"name": "VERSION", "value": "three"}],
            "queryParams": [{"name": "Animal", "value": "whale"}, {"name": "animal", "value": "dolphin"}]
        }))
        .expect("plan");
        let names = |c: &[ValueCondition]| c.iter().map(|c| (c.name.clone(), c.value.clone())).collect::<Vec<_>>();
        let pair = |n: &str, v: &str| (n.to_string(), v.to_string());
        assert_eq!(names(&made.conditions.headers), [pair("color", "b.*"), pair("version", "two")]);
        assert!(made.conditions.headers[0].regex);
        assert_eq!(names(&made.conditions.query_params), [pair("Animal", "whale"), pair("animal", "dolphin")]);
        assert_eq!(made.conditions.method.as_deref(), Some("POST"));
    }

    #[test]
    fn invalid_names_types_methods_and_expressions_are_refused() {
        for (value, want) in [
            (json!({"method": "FETCH"}), "method \"FETCH\" is not an HTTP method"),
            (json!({"headers": [{"name": "bad name", "value": "x"}]}), "header name \"bad name\" is not valid"),
            (
                json!({"queryParams": [{"name": "q", "value": "x", "type": "Prefix"}]}),
                "query parameter match type Prefix is not served",
            ),
        ] {
            assert_eq!(plan(value).err().as_deref(), Some(want));
        }
        let bad_regex = plan(json!({"headers": [{"name": "x", "value": "(", "type": "RegularExpression"}]}));
        assert!(bad_regex.is_err_and(|e| e.starts_with("header x regular expression")));
    }
}
