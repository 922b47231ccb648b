//! Gateway API status: after each published table, the status of every Gateway of the router's class and our
//! entry (`controllerName` `router.openshift.io/gateway-controller`) in `status.parents[]` of every HTTPRoute
//! and TLSRoute attached to one of them (`conditions`); entries of other controllers are kept, ours are removed
//! from routes that no longer name one of the router's Gateways. A write is skipped when the object already
//! says the same; each write carries the resourceVersion it was computed from, so a concurrent change makes it
//! conflict and be recomputed.

mod conditions;

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::watch;
use tracing::{debug, warn};

pub use conditions::CONTROLLER_NAME;
use conditions::{carry_transition_times, gateway_status, parent_status, Admission};

use super::per_table::TableFeed;
use super::stores::Stores;
use crate::model::gateway::{
    Gateway, GatewayStatus, HTTPRoute, RouteKind, RouteParentStatus, RouteParentsStatus, TLSRoute,
};
use crate::model::ObjectKey;
use crate::table::RouteTable;

pub struct GatewayStatusWriter {
    pub client: Client,
    pub stores: Stores,
    /// What was written, by object, with the resourceVersion it was written over: until the store catches up
    /// with our own write, the same write is not made again.
    pub written: HashMap<(&'static str, ObjectKey), (String, serde_json::Value)>,
}

impl GatewayStatusWriter {
    /// Writes status for each table published on `tables` until the publisher goes away.
    pub async fn run(mut self, tables: watch::Receiver<Arc<RouteTable>>) {
        let mut feed = TableFeed::new(tables);
        while let Some(table) = feed.next().await {
            feed.retry = !self.sync(&table).await;
        }
    }

    /// Brings every Gateway and route status up to date with `table`; false when a write must be retried.
    async fn sync(&mut self, table: &RouteTable) -> bool {
        let Some(gateway) = self.stores.gateway.clone() else { return true };
        // The report is made again from the stores: the same step, over the same objects, as the table's.
        let report = self.stores.gateway_report();
        let admission: Admission<'_> = table.outcomes().map(|o| (&o.key, &o.result)).collect();
        let mut all_ok = true;
        for (key, outcome) in &report.gateways {
            let Some(object) = find(&gateway.gateways, key) else { continue };
            let mut desired = gateway_status(outcome);
            let current = object.status.clone().unwrap_or_default();
            carry_transition_times(&mut desired.conditions, &current.conditions);
            for listener in &mut desired.listeners {
                let before = current.listeners.iter().find(|l| l.name == listener.name);
                carry_transition_times(
                    &mut listener.conditions,
                    before.map(|l| l.conditions.as_slice()).unwrap_or_default(),
                );
            }
            all_ok &= self.write::<Gateway, GatewayStatus>(&object, &current, &desired).await;
        }
        all_ok &= self.sync_routes::<HTTPRoute>(RouteKind::HTTPRoute, &gateway.http_routes, &report, &admission).await;
        if let Some(tls_routes) = &gateway.tls_routes {
            all_ok &= self.sync_routes::<TLSRoute>(RouteKind::TLSRoute, tls_routes, &report, &admission).await;
        }
        // Forget writes to objects that are gone.
        self.written.retain(|(kind, key), _| match *kind {
            "Gateway" => find(&gateway.gateways, key).is_some(),
            "HTTPRoute" => find(&gateway.http_routes, key).is_some(),
            _ => gateway.tls_routes.as_ref().is_some_and(|store| find(store, key).is_some()),
        });
        all_ok
    }

    async fn sync_routes<K>(
        &mut self,
        kind: RouteKind,
        store: &Store<K>,
        report: &crate::model::gateway::GatewayReport,
        admission: &Admission<'_>,
    ) -> bool
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + RouteStatusOf
            + Clone
            + DeserializeOwned
            + Debug,
    {
        let mut all_ok = true;
        for object in store.state() {
            let key = ObjectKey::new(object.namespace().unwrap_or_default(), object.name_any());
            let current = object.parents_status().cloned().unwrap_or_default();
            let mut ours = Vec::new();
            if let Some(outcome) = report.routes.get(&(kind, key)) {
                let mut complete = true;
                for parent in &outcome.parents {
                    match parent_status(parent, outcome.generation, admission) {
                        Some(mut entry) => {
                            let before = current
                                .parents
                                .iter()
                                .find(|p| p.controller_name == CONTROLLER_NAME && p.parent_ref == entry.parent_ref);
                            carry_transition_times(
                                &mut entry.conditions,
                                before.map(|p| p.conditions.as_slice()).unwrap_or_default(),
                            );
                            ours.push(entry);
                        }
                        None => complete = false,
                    }
                }
                if !complete {
                    // A route made for it is not in this table yet: the next table writes it.
                    continue;
                }
            }
            let parents = merged(&current.parents, ours);
            let desired = RouteParentsStatus { parents };
            if desired == current {
                continue;
            }
            all_ok &= self.write::<K, RouteParentsStatus>(&object, &current, &desired).await;
        }
        all_ok
    }

    /// Writes `desired` as the status of `object` unless it already holds it (or we just wrote it over the
    /// same resourceVersion); true unless the write must be retried.
    async fn write<K, S>(&mut self, object: &K, current: &S, desired: &S) -> bool
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope> + Clone + DeserializeOwned + Debug,
        S: Serialize + PartialEq,
    {
        if current == desired {
            return true;
        }
        let kind = K::kind(&());
        let kind_name: &'static str = if kind == "Gateway" {
            "Gateway"
        } else if kind == "HTTPRoute" {
            "HTTPRoute"
        } else {
            "TLSRoute"
        };
        let namespace = object.namespace().unwrap_or_default();
        let name = object.name_any();
        let key = (kind_name, ObjectKey::new(&namespace, &name));
        let over = object.resource_version().unwrap_or_default();
        let status = serde_json::to_value(desired).unwrap_or_default();
        if self.written.get(&key).is_some_and(|(rv, written)| *rv == over && *written == status) {
            return true;
        }
        let api: Api<K> = Api::namespaced(self.client.clone(), &namespace);
        let patch = serde_json::json!({"metadata": {"resourceVersion": over}, "status": status});
        let result = api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await;
        match result {
            Ok(_) => {
                debug!(kind = kind_name, object = %key.1, "Gateway API status written");
                self.written.insert(key, (over, status));
                true
            }
            Err(kube::Error::Api(status)) if status.is_not_found() => true,
            Err(kube::Error::Api(status)) if status.is_conflict() => {
                debug!(kind = kind_name, object = %key.1, "Gateway API status write conflicted; retried");
                false
            }
            Err(error) => {
                warn!(kind = kind_name, object = %key.1, %error, "Gateway API status write failed");
                false
            }
        }
    }
}

/// Our new entries among the current ones: other controllers' entries stay where they are, each of ours is
/// replaced in place (or dropped when it is no longer ours to write), new ones go last.
fn merged(current: &[RouteParentStatus], mut ours: Vec<RouteParentStatus>) -> Vec<RouteParentStatus> {
    let mut parents = Vec::new();
    for entry in current {
        if entry.controller_name != CONTROLLER_NAME {
            parents.push(entry.clone());
        } else if let Some(at) = ours.iter().position(|new| new.parent_ref == entry.parent_ref) {
            parents.push(ours.remove(at));
        }
    }
    parents.extend(ours);
    parents
}

fn find<K: Resource<DynamicType = ()> + Clone>(store: &Store<K>, key: &ObjectKey) -> Option<Arc<K>> {
    store.get(&kube::runtime::reflector::ObjectRef::new(&key.name).within(&key.namespace))
}

/// The `status.parents` of an HTTPRoute or TLSRoute.
pub trait RouteStatusOf {
    fn parents_status(&self) -> Option<&RouteParentsStatus>;
}

impl RouteStatusOf for HTTPRoute {
    fn parents_status(&self) -> Option<&RouteParentsStatus> {
        self.status.as_ref()
    }
}

impl RouteStatusOf for TLSRoute {
    fn parents_status(&self) -> Option<&RouteParentsStatus> {
        self.status.as_ref()
    }
}
