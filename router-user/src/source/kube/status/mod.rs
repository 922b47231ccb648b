//! Route status: after each published table, this router's entry in `status.ingress[]` of every route it
//! considered (host, wildcardPolicy, routerCanonicalHostname, and an `Admitted` condition, False with the
//! admission reason and message), and no entry of ours on routes outside this router's shard (a route that
//! left the shard, by its labels or its namespace's, loses our entry, as OpenShift clears its own). Other
//! routers' entries are kept as they are; a write is skipped when our entry already says the same; each write
//! carries the resourceVersion it was computed from, so a concurrent change makes it conflict and be
//! recomputed rather than overwrite another router's entry.

mod entry;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures_util::{stream, StreamExt};
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, ResourceExt};
use tokio::sync::watch;
use tracing::{debug, warn};

pub use entry::desired_entry;
use entry::{same_entry, with_transition_time};

use super::per_table::TableFeed;
use crate::metrics::{Metrics, StatusWriteLabels};
use crate::model::{ObjectKey, Route, RouteIngress};
use crate::table::{RouteOutcome, RouteTable};

/// How many status writes run at once.
const CONCURRENT_WRITES: usize = 8;

pub struct StatusWriter {
    pub client: Client,
    pub routes: Store<Route>,
    /// `ROUTER_SERVICE_NAME`.
    pub router_name: String,
    pub canonical_hostname: Option<String>,
    pub metrics: Arc<Metrics>,
    /// What was written, by route, with the resourceVersion it was written over (`None`: our entry removed):
    /// until the store catches up with our own write, the same write is not made again.
    pub written: HashMap<ObjectKey, (String, Option<RouteIngress>)>,
}

/// One write: the whole new `status.ingress` of a route, and our entry in it (`None` when it is removed).
struct Pending {
    key: ObjectKey,
    route: Arc<Route>,
    ingress: Vec<RouteIngress>,
    ours: Option<RouteIngress>,
}

impl StatusWriter {
    /// Writes status for each table published on `tables` until the publisher goes away.
    pub async fn run(mut self, tables: watch::Receiver<Arc<RouteTable>>) {
        let mut feed = TableFeed::new(tables);
        while let Some(table) = feed.next().await {
            feed.retry = !self.sync(&table).await;
        }
    }

    /// Brings every route of `table` up to date and clears our entry from routes outside it; false when some
    /// write must be retried.
    async fn sync(&mut self, table: &RouteTable) -> bool {
        let in_shard: HashSet<&ObjectKey> = table.outcomes().map(|outcome| &outcome.key).collect();
        let mut writes: Vec<Pending> = table.outcomes().filter_map(|outcome| self.pending(outcome)).collect();
        let mut ours_outside = HashSet::new();
        for route in self.routes.state() {
            let key = ObjectKey::new(route.namespace().unwrap_or_default(), route.name_any());
            if in_shard.contains(&key) || self.our_entry(&route).is_none() {
                continue;
            }
            writes.extend(self.pending_removal(&key, route));
            ours_outside.insert(key);
        }
        self.written.retain(|key, _| in_shard.contains(key) || ours_outside.contains(key));

        let this = &*self;
        let results: Vec<_> = stream::iter(writes)
            .map(|pending| async move {
                let over = pending.route.resource_version().unwrap_or_default();
                let ok = this.write(&pending).await;
                (pending.key, over, pending.ours, ok)
            })
            .buffer_unordered(CONCURRENT_WRITES)
            .collect()
            .await;
        let mut all_ok = true;
        for (key, over, ours, ok) in results {
            if ok {
                self.written.insert(key, (over, ours));
            }
            all_ok &= ok;
        }
        all_ok
    }

    fn our_entry<'r>(&self, route: &'r Route) -> Option<&'r RouteIngress> {
        let current = route.status.as_ref().map(|s| s.ingress.as_slice()).unwrap_or_default();
        current.iter().find(|entry| entry.router_name.as_deref() == Some(&self.router_name))
    }

    /// The write that makes our entry say what the outcome says, unless it already does.
    fn pending(&self, outcome: &RouteOutcome) -> Option<Pending> {
        // Routes made from Ingresses have no Route object: nothing to write.
        let route = self.routes.get(&ObjectRef::new(&outcome.key.name).within(&outcome.key.namespace))?;
        let ours = self.our_entry(&route);
        let desired = desired_entry(outcome, &self.router_name, self.canonical_hostname.as_deref());
        if ours.is_some_and(|entry| same_entry(entry, &desired)) {
            return None;
        }
        if let Some((over, Some(entry))) = self.written.get(&outcome.key) {
            if route.resource_version().as_ref() == Some(over) && same_entry(entry, &desired) {
                return None;
            }
        }
        let desired = with_transition_time(desired, ours);
        let mut ingress: Vec<RouteIngress> = route.status.as_ref().map(|s| s.ingress.clone()).unwrap_or_default();
        match ingress.iter_mut().find(|entry| entry.router_name.as_deref() == Some(&self.router_name)) {
            Some(entry) => *entry = desired.clone(),
            None => ingress.push(desired.clone()),
        }
        Some(Pending { key: outcome.key.clone(), route, ingress, ours: Some(desired) })
    }

    /// The write that removes our entry from a route outside the shard, unless we already removed it.
    fn pending_removal(&self, key: &ObjectKey, route: Arc<Route>) -> Option<Pending> {
        if let Some((over, None)) = self.written.get(key) {
            if route.resource_version().as_ref() == Some(over) {
                return None;
            }
        }
        let mut ingress: Vec<RouteIngress> = route.status.as_ref().map(|s| s.ingress.clone()).unwrap_or_default();
        ingress.retain(|entry| entry.router_name.as_deref() != Some(&self.router_name));
        Some(Pending { key: key.clone(), route, ingress, ours: None })
    }

    async fn write(&self, pending: &Pending) -> bool {
        let route = &pending.route;
        let namespace = route.namespace().unwrap_or_default();
        let api: Api<Route> = Api::namespaced(self.client.clone(), &namespace);
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": route.resource_version()},
            "status": {"ingress": pending.ingress},
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
        let route = format!("{namespace}/{name}");
        match result {
            Ok(_) if pending.ours.is_none() => debug!(%route, "left this router's shard: our status entry removed"),
            Ok(_) => debug!(%route, "route status written"),
            Err(error) if label == "error" => warn!(%route, %error, "route status write failed"),
            Err(error) => debug!(%route, %error, "route status write will be retried"),
        }
        ok
    }
}
