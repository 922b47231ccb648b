//! The status the router writes on Gateway API objects, from the Gateway API step's report and the admission
//! outcomes of the routes made: on a Gateway `Accepted` and `Programmed` plus each listener's `Accepted`,
//! `Programmed`, `ResolvedRefs` and attached route count; on each HTTPRoute/TLSRoute parent of the router's
//! `Accepted` (False when not attached, when nothing of the route is served, or when admission refused every
//! route made of it, with admission's reason, e.g. `HostAlreadyClaimed`), `ResolvedRefs`, and
//! `PartiallyInvalid` when some of it is left out.

use std::collections::HashMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::admission::Rejection;
use crate::model::gateway::{
    Condition, GatewayOutcome, GatewayStatus, ListenerStatus, ParentOutcome, Problem, RouteParentStatus,
};
use crate::model::ObjectKey;

/// The `controllerName` of the router's entries in route status (and of its GatewayClass).
pub const CONTROLLER_NAME: &str = "router.openshift.io/gateway-controller";

/// Admission's verdict on each route of the table, by key.
pub type Admission<'t> = HashMap<&'t ObjectKey, &'t Result<(), Rejection>>;

fn condition(kind: &str, verdict: Result<&str, &Problem>, generation: Option<i64>) -> Condition {
    let (status, reason, message) = match verdict {
        Ok(reason) => ("True", reason.to_string(), String::new()),
        Err(problem) => ("False", problem.reason.to_string(), problem.message.clone()),
    };
    Condition {
        kind: kind.into(),
        status: status.into(),
        reason,
        message,
        observed_generation: generation,
        last_transition_time: None,
    }
}

pub fn gateway_status(outcome: &GatewayOutcome) -> GatewayStatus {
    let generation = outcome.generation;
    let programmed = outcome.listeners.iter().any(|listener| listener.programmed());
    let none = Problem::new("Invalid", "no listener of this Gateway is served");
    let listeners = outcome
        .listeners
        .iter()
        .map(|listener| {
            let accepted = listener.accepted.as_ref().map(|()| "Accepted");
            let programmed = if listener.programmed() {
                Ok("Programmed")
            } else {
                Err(listener.accepted.as_ref().err().or(listener.unresolved.as_ref()).unwrap_or(&none))
            };
            let resolved = listener.unresolved.as_ref().map_or(Ok("ResolvedRefs"), Err);
            ListenerStatus {
                name: listener.name.clone(),
                supported_kinds: listener.supported_kinds.clone(),
                attached_routes: listener.attached_routes,
                conditions: vec![
                    condition("Accepted", accepted, generation),
                    condition("Programmed", programmed, generation),
                    condition("ResolvedRefs", resolved, generation),
                ],
            }
        })
        .collect();
    let conditions = vec![
        condition("Accepted", Ok("Accepted"), generation),
        condition("Programmed", if programmed { Ok("Programmed") } else { Err(&none) }, generation),
    ];
    GatewayStatus { conditions, listeners }
}

/// Our entry for one parent, or `None` while a route made for it is not in the table yet.
pub fn parent_status(
    parent: &ParentOutcome,
    generation: Option<i64>,
    admission: &Admission<'_>,
) -> Option<RouteParentStatus> {
    let mut rejected = Vec::new();
    for key in &parent.routes {
        if let Err(rejection) = admission.get(key)? {
            rejected.push((key, rejection));
        }
    }
    let unsupported = joined(&parent.unsupported);
    let accepted = match &parent.attached {
        Err(problem) => Err(problem.clone()),
        Ok(()) if parent.routes.is_empty() => Err(unsupported
            .clone()
            .unwrap_or_else(|| Problem::new("UnsupportedValue", "nothing of this route is served"))),
        Ok(()) if rejected.len() == parent.routes.len() => Err(refusals(&rejected)),
        Ok(()) => Ok(()),
    };
    let partly = match (&accepted, rejected.is_empty()) {
        (Err(_), _) => None,
        (Ok(()), false) => Some(refusals(&rejected)),
        (Ok(()), true) => unsupported,
    };
    let mut conditions = vec![condition("Accepted", accepted.as_ref().map(|()| "Accepted"), generation)];
    let resolved = joined(&parent.unresolved);
    conditions.push(condition("ResolvedRefs", resolved.as_ref().map_or(Ok("ResolvedRefs"), Err), generation));
    if let Some(problem) = partly {
        let mut partial = condition("PartiallyInvalid", Err(&problem), generation);
        partial.status = "True".into();
        conditions.push(partial);
    }
    Some(RouteParentStatus {
        parent_ref: parent.parent_ref.clone(),
        controller_name: CONTROLLER_NAME.into(),
        conditions,
    })
}

/// One problem standing for several: the first one's reason, every message.
fn joined(problems: &[Problem]) -> Option<Problem> {
    let first = problems.first()?;
    let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
    Some(Problem::new(first.reason, messages.join("; ")))
}

fn refusals(rejected: &[(&ObjectKey, &Rejection)]) -> Problem {
    let messages: Vec<String> = rejected.iter().map(|(key, r)| format!("route {}: {}", key.name, r.message)).collect();
    Problem::new(rejected[0].1.reason, messages.join("; "))
}

/// Gives each condition the transition time of the current condition of its type when the status is the
/// same, else now.
pub fn carry_transition_times(desired: &mut [Condition], current: &[Condition]) {
    for condition in desired {
        let before = current.iter().find(|c| c.kind == condition.kind);
        condition.last_transition_time = match before {
            Some(old) if old.status == condition.status && old.last_transition_time.is_some() => {
                old.last_transition_time.clone()
            }
            _ => Some(now()),
        };
    }
}

fn now() -> String {
    let time = Time(k8s_openapi::jiff::Timestamp::now());
    serde_json::to_value(&time).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::gateway::ParentReference;

    #[test]
    fn accepted_follows_attachment_support_and_admission() {
        let key = ObjectKey::new("ns", "r-httproute-0-0-a");
        let other = ObjectKey::new("ns", "r-httproute-1-0-a");
        let mut parent = ParentOutcome::new(ParentReference { name: "gw".into(), ..Default::default() }, Ok(()));
        parent.routes = vec![key.clone(), other.clone()];
        let (ok, lost): (Result<(), Rejection>, Result<(), Rejection>) =
            (Ok(()), Err(Rejection::new("HostAlreadyClaimed", "route old already exposes a and is older")));
        let status_of = |parent: &ParentOutcome, admission: &Admission<'_>| {
            parent_status(parent, Some(2), admission).map(|s| {
                s.conditions.iter().map(|c| format!("{}={} {}", c.kind, c.status, c.reason)).collect::<Vec<_>>()
            })
        };
        let status = |admission: &Admission<'_>| status_of(&parent, admission);
        assert_eq!(status(&HashMap::from([(&key, &ok)])), None, "waits for every route");
        assert_eq!(
            status(&HashMap::from([(&key, &ok), (&other, &ok)])).expect("status"),
            ["Accepted=True Accepted", "ResolvedRefs=True ResolvedRefs"]
        );
        assert_eq!(
            status(&HashMap::from([(&key, &ok), (&other, &lost)])).expect("status"),
            ["Accepted=True Accepted", "ResolvedRefs=True ResolvedRefs", "PartiallyInvalid=True HostAlreadyClaimed"]
        );
        assert_eq!(
            status(&HashMap::from([(&key, &lost), (&other, &lost)])).expect("status"),
            ["Accepted=False HostAlreadyClaimed", "ResolvedRefs=True ResolvedRefs"]
        );
        parent.routes.clear();
        parent.unsupported =
            vec![Problem::new("UnsupportedValue", "rule 0 match 0: RegularExpression path matches are not served")];
        let none = status_of(&parent, &HashMap::new()).expect("status");
        assert_eq!(none, ["Accepted=False UnsupportedValue", "ResolvedRefs=True ResolvedRefs"]);
    }
}
