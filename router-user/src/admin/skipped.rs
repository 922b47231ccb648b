//! `/debug/skipped`: the objects the Kubernetes source leaves out now (undecodable, or EndpointSlices whose
//! `addressType` gives no backends), with the reason, as JSON.

use serde_json::json;

use crate::source::kube::SkippedObject;

pub fn render(skipped: &[SkippedObject]) -> String {
    let objects: Vec<_> = skipped
        .iter()
        .map(|object| {
            json!({
                "kind": object.kind,
                "namespace": object.namespace,
                "name": object.name,
                "reason": object.reason,
            })
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&json!({ "skipped": objects })).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}
