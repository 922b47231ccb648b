//! `/debug/routes`: every route of this router's shard with its admission outcome (and, for a route made from an
//! HTTPRoute match, the conditions it carries), as JSON.

use serde_json::{json, Value};

use crate::model::{RequestConditions, ValueCondition};
use crate::table::RouteTable;

pub fn render(table: &RouteTable) -> String {
    let routes: Vec<_> = table
        .outcomes()
        .map(|outcome| {
            let mut entry = json!({
                "namespace": outcome.key.namespace,
                "name": outcome.key.name,
                "host": outcome.host,
                "path": outcome.path,
                "wildcardPolicy": outcome.wildcard_policy,
                "admitted": outcome.result.is_ok(),
            });
            if let Some(request_match) = &outcome.request_match {
                entry["conditions"] = conditions(&request_match.conditions);
            }
            if let Err(rejection) = &outcome.result {
                entry["reason"] = json!(rejection.reason);
                entry["message"] = json!(rejection.message);
            }
            let warnings: Vec<&str> =
                table.warnings().filter(|(key, _)| *key == outcome.key).map(|(_, w)| w.as_str()).collect();
            if !warnings.is_empty() {
                entry["warnings"] = json!(warnings);
            }
            entry
        })
        .collect();
    let body = json!({ "generation": table.generation, "routes": routes });
    let mut text = serde_json::to_string_pretty(&body).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}

/// What a route made from an HTTPRoute match asks beyond host and path, in the Gateway API's words.
fn conditions(wanted: &RequestConditions) -> Value {
    let values = |list: &[ValueCondition]| {
        let entries = list.iter().map(|c| {
            let kind = if c.regex { "RegularExpression" } else { "Exact" };
            json!({"name": c.name, "type": kind, "value": c.value})
        });
        entries.collect::<Vec<_>>()
    };
    let mut out = json!({"pathType": if wanted.exact_path { "Exact" } else { "PathPrefix" }});
    if let Some(method) = &wanted.method {
        out["method"] = json!(method);
    }
    if !wanted.headers.is_empty() {
        out["headers"] = json!(values(&wanted.headers));
    }
    if !wanted.query_params.is_empty() {
        out["queryParams"] = json!(values(&wanted.query_params));
    }
    out
}
