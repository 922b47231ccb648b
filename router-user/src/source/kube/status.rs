//! Route status: after each published table, this router's entry in `status.ingress[]` of every route it
//! considered (host, wildcardPolicy, routerCanonicalHostname, and an `Admitted` condition, False with the
//! admission reason and message). Other routers' entries are kept as they are; a write is skipped when our entry
//! already says the same; each write carries the resourceVersion it was computed from, so a concurrent change
//! makes it conflict and be recomputed rather than overwrite another router's entry.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, ResourceExt};
use tokio::sync::watch;
use tracing::{debug, warn};

use crate::metrics::{Metrics, StatusWriteLabels};
use crate::model::{ObjectKey, Route, RouteIngress, RouteIngressCondition};
use crate::table::{RouteOutcome, RouteTable};

/// How many status writes run at once.
const CONCURRENT_WRITES: usize = 8;
/// Wait before recomputing writes that conflicted or failed.
const RETRY_AFTER: Duration = Duration::from_secs(1);

pub struct StatusWriter {
    pub client: Client,
    pub routes: Store<Route>,
    /// `ROUTER_SERVICE_NAME`.
    pub router_name: String,
    pub canonical_hostname: Option<String>,
    pub metrics: Arc<Metrics>,
    /// Entries written, by route, with the resourceVersion they were written over: until the store catches up
    /// with our own write, the same entry is not written again.
    pub written: HashMap<ObjectKey, (String, RouteIngress)>,
}

impl StatusWriter {
    /// Writes status for each table published on `tables` until the publisher goes away.
    pub async fn run(mut self, mut tables: watch::Receiver<Arc<RouteTable>>) {
        let mut retry = false;
        loop {
            if retry {
                tokio::select! {
                    changed = tables.changed() => if changed.is_err() { return },
                    _ = tokio::time::sleep(RETRY_AFTER) => {}
                }
            } else if tables.changed().await.is_err() {
                return;
            }
            let table = tables.borrow_and_update().clone();
            retry = !self.sync(&table).await;
        }
    }

    /// Brings every route of `table` up to date; false when some write must be retried.
    async fn sync(&mut self, table: &RouteTable) -> bool {
        let writes: Vec<_> = table.outcomes.iter().filter_map(|outcome| self.pending(outcome)).collect();
        let this = &*self;
        let results: Vec<_> = stream::iter(writes)
            .map(|(key, route, status)| async move {
                let entry = status.iter().find(|e| e.router_name.as_deref() == Some(&this.router_name)).cloned();
                let over = route.resource_version().unwrap_or_default();
                let ok = this.write(route, status).await;
                (key, over, entry, ok)
            })
            .buffer_unordered(CONCURRENT_WRITES)
            .collect()
            .await;
        self.written.retain(|key, _| table.outcomes.iter().any(|o| &o.key == key));
        let mut all_ok = true;
        for (key, over, entry, ok) in results {
            match (ok, entry) {
                (true, Some(entry)) => drop(self.written.insert(key, (over, entry))),
                _ => all_ok &= ok,
            }
        }
        all_ok
    }

    /// The route and its new `status.ingress` when our entry differs from what the outcome says.
    fn pending(&self, outcome: &RouteOutcome) -> Option<(ObjectKey, Arc<Route>, Vec<RouteIngress>)> {
        // Routes made from Ingresses have no Route object: nothing to write.
        let route = self.routes.get(&ObjectRef::new(&outcome.key.name).within(&outcome.key.namespace))?;
        let current = route.status.as_ref().map(|s| s.ingress.as_slice()).unwrap_or_default();
        let ours = current.iter().find(|entry| entry.router_name.as_deref() == Some(&self.router_name));
        let desired = desired_entry(outcome, &self.router_name, self.canonical_hostname.as_deref());
        if ours.is_some_and(|entry| same_entry(entry, &desired)) {
            return None;
        }
        if let Some((over, entry)) = self.written.get(&outcome.key) {
            if route.resource_version().as_ref() == Some(over) && same_entry(entry, &desired) {
                return None;
            }
        }
        let desired = with_transition_time(desired, ours);
        let mut ingress: Vec<RouteIngress> = current.to_vec();
        match ingress.iter_mut().find(|entry| entry.router_name.as_deref() == Some(&self.router_name)) {
            Some(entry) => *entry = desired,
            None => ingress.push(desired),
        }
        Some((outcome.key.clone(), route, ingress))
    }

    async fn write(&self, route: Arc<Route>, ingress: Vec<RouteIngress>) -> bool {
        let namespace = route.namespace().unwrap_or_default();
        let api: Api<Route> = Api::namespaced(self.client.clone(), &namespace);
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": route.resource_version()},
            "status": {"ingress": ingress},
        });
        let name = route.name_any();
        let result = api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await;
        let (label, ok) = match &result {
            Ok(_) => ("ok", true),
            Err(kube::Error::Api(status)) if status.is_conflict() => ("conflict", false),
            // Deleted meanwhile: the next table no longer lists it.
            Err(kube::Error::Api(status)) if status.is_not_found() => ("gone", true),
            Err(_) => ("error", false),
        };
        self.metrics.route_status_writes.get_or_create(&StatusWriteLabels { result: label }).inc();
        match result {
            Ok(_) => debug!(route = %format!("{namespace}/{name}"), "route status written"),
            Err(error) if label == "error" => {
                warn!(route = %format!("{namespace}/{name}"), %error, "route status write failed")
            }
            Err(error) => debug!(route = %format!("{namespace}/{name}"), %error, "route status write will be retried"),
        }
        ok
    }
}

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
fn same_entry(current: &RouteIngress, desired: &RouteIngress) -> bool {
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

/// Keeps the old transition time when the condition's status did not change, else stamps now.
fn with_transition_time(mut desired: RouteIngress, current: Option<&RouteIngress>) -> RouteIngress {
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
