//! `/debug/routes`: every route of this router's shard with its admission outcome, as JSON.

use serde_json::json;

use crate::table::RouteTable;

pub fn render(table: &RouteTable) -> String {
    let routes: Vec<_> = table
        .outcomes
        .iter()
        .map(|outcome| {
            let mut entry = json!({
                "namespace": outcome.key.namespace,
                "name": outcome.key.name,
                "host": outcome.host,
                "path": outcome.path,
                "wildcardPolicy": outcome.wildcard_policy,
                "admitted": outcome.result.is_ok(),
            });
            if let Err(rejection) = &outcome.result {
                entry["reason"] = json!(rejection.reason);
                entry["message"] = json!(rejection.message);
            }
            let warnings: Vec<&str> =
                table.warnings.iter().filter(|(key, _)| *key == outcome.key).map(|(_, w)| w.as_str()).collect();
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
