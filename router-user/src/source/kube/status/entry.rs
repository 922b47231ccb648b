//! This router's `status.ingress[]` entry: what an outcome says, compared without transition times, and the
//! transition time kept while the `Admitted` status holds.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::model::{RouteIngress, RouteIngressCondition};
use crate::table::RouteOutcome;

/// This router's entry for `outcome`, without a transition time.
pub fn desired_entry(outcome: &RouteOutcome, router_name: &str, canonical_hostname: Option<&str>) -> RouteIngress {
    let condition = match &outcome.result {
        Ok(()) => RouteIngressCondition { kind: "Admitted".into(), status: "True".into(), ..Default::default() },
        Err(rejection) => RouteIngressCondition {
            kind: "Admitted".into(),
            status: "False".into(),
            reason: Some(rejection.reason.to_string()),
            message: Some(rejection.message.clone()),
            last_transition_time: None,
        },
    };
    RouteIngress {
        host: Some(outcome.host.clone()),
        router_name: Some(router_name.to_string()),
        wildcard_policy: Some(outcome.wildcard_policy.to_string()),
        router_canonical_hostname: canonical_hostname.map(str::to_string),
        conditions: vec![condition],
    }
}

/// Equal but for condition transition times.
pub fn same_entry(current: &RouteIngress, desired: &RouteIngress) -> bool {
    let same_condition = |a: &RouteIngressCondition, b: &RouteIngressCondition| {
        (&a.kind, &a.status, &a.reason, &a.message) == (&b.kind, &b.status, &b.reason, &b.message)
    };
    current.host == desired.host
        && current.router_name == desired.router_name
        && current.wildcard_policy == desired.wildcard_policy
        && current.router_canonical_hostname == desired.router_canonical_hostname
        && current.conditions.len() == desired.conditions.len()
        && current.conditions.iter().zip(&desired.conditions).all(|(a, b)| same_condition(a, b))
}

/// What `same_entry` compares, hashed: entries with equal fingerprints are the same entry.
pub fn fingerprint(entry: &RouteIngress) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (&entry.host, &entry.router_name, &entry.wildcard_policy, &entry.router_canonical_hostname).hash(&mut hasher);
    for condition in &entry.conditions {
        (&condition.kind, &condition.status, &condition.reason, &condition.message).hash(&mut hasher);
    }
    entry.conditions.len().hash(&mut hasher);
    hasher.finish()
}

/// Keeps the old transition time when the condition's status did not change, else stamps now.
pub fn with_transition_time(mut desired: RouteIngress, current: Option<&RouteIngress>) -> RouteIngress {
    let previous = current.and_then(|entry| entry.conditions.iter().find(|c| c.kind == "Admitted"));
    for condition in &mut desired.conditions {
        condition.last_transition_time = match previous {
            Some(old) if old.status == condition.status && old.last_transition_time.is_some() => {
                old.last_transition_time.clone()
            }
            _ => Some(now()),
        };
    }
    desired
}

fn now() -> String {
    let time = Time(k8s_openapi::jiff::Timestamp::now());
    serde_json::to_value(&time).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectKey;
    use crate::table::Rejection;

    fn outcome(result: Result<(), Rejection>) -> RouteOutcome {
        RouteOutcome {
            key: ObjectKey::new("ns", "web"),
            host: "web.example.com".into(),
            path: "/".into(),
            wildcard_policy: "None",
            request_match: None,
            result,
        }
    }

    #[test]
    fn the_entry_says_admitted_or_why_not() {
        let admitted = desired_entry(&outcome(Ok(())), "default", Some("router.example.com"));
        assert_eq!(admitted.router_name.as_deref(), Some("default"));
        assert_eq!(admitted.host.as_deref(), Some("web.example.com"));
        assert_eq!(admitted.wildcard_policy.as_deref(), Some("None"));
        assert_eq!(admitted.router_canonical_hostname.as_deref(), Some("router.example.com"));
        assert_eq!(
            (admitted.conditions[0].kind.as_str(), admitted.conditions[0].status.as_str()),
            ("Admitted", "True")
        );

        let claimed = Rejection { reason: "HostAlreadyClaimed", message: "route ns/old already exposes it".into() };
        let rejected = desired_entry(&outcome(Err(claimed)), "default", None);
        let condition = &rejected.conditions[0];
        assert_eq!(condition.status, "False");
        assert_eq!(condition.reason.as_deref(), Some("HostAlreadyClaimed"));
        assert_eq!(condition.message.as_deref(), Some("route ns/old already exposes it"));
        assert!(!same_entry(&admitted, &rejected));
    }

    #[test]
    fn transition_times_are_kept_while_the_status_holds_and_ignored_when_comparing() {
        let desired = desired_entry(&outcome(Ok(())), "default", None);
        let mut written = desired.clone();
        written.conditions[0].last_transition_time = Some("2026-01-01T00:00:00Z".into());
        assert!(same_entry(&written, &desired), "only the transition time differs");
        let kept = with_transition_time(desired.clone(), Some(&written));
        assert_eq!(kept.conditions[0].last_transition_time.as_deref(), Some("2026-01-01T00:00:00Z"));

        let claimed = Rejection { reason: "HostAlreadyClaimed", message: "taken".into() };
        let flipped = desired_entry(&outcome(Err(claimed)), "default", None);
        let stamped = with_transition_time(flipped, Some(&written));
        let time = stamped.conditions[0].last_transition_time.clone().unwrap_or_default();
        assert!(time.ends_with('Z') && time != "2026-01-01T00:00:00Z", "a new transition time: {time}");
    }
}
