//! What differs between the previous build's snapshot and this one, as `build_from` needs it: the routes whose
//! object changed, and the services whose endpoint objects changed. Found by one ordered walk over each map of
//! the two snapshots; objects the snapshots share (`Arc::ptr_eq`) are not compared, so a change of one object
//! costs a walk of pointers, not a comparison of every object.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use super::endpoints::{EndpointIndex, ServiceRef};
use crate::model::{ObjectKey, Objects, Route, Snapshot};

pub struct Changes<'a> {
    /// Routes (the new snapshot's objects, by address) added, or changed in what a backend is compiled from;
    /// removed ones have nothing to take over. Addresses, so that a lookup reads no key (as numbers: shards
    /// compile on several threads).
    routes: HashSet<usize>,
    /// Services with an EndpointSlice added, removed or changed (the slice's label, before and after).
    slices: HashSet<ServiceRef<'a>>,
    /// Services whose core `Endpoints` object was added, removed or changed.
    endpoints: HashSet<ServiceRef<'a>>,
    /// The routes behind `routes` by key: as they were (changed or removed) and as they are (changed or added).
    pub routes_before: Vec<(&'a ObjectKey, &'a Route)>,
    pub routes_now: Vec<(&'a ObjectKey, &'a Route)>,
    /// EndpointSlices with their service, as they were (changed or removed) and as they are (changed or added).
    pub slices_before: Vec<(&'a ObjectKey, &'a str)>,
    pub slices_now: Vec<(&'a ObjectKey, &'a str)>,
    /// Namespaces, Secrets, ConfigMaps or the unreadable Secrets changed: inputs of any route's admission or
    /// TLS material, which the table does not trace to routes.
    pub others: bool,
}

impl<'a> Changes<'a> {
    pub fn between(before: &'a Snapshot, now: &'a Snapshot) -> Self {
        let (mut routes, mut routes_before, mut routes_now) = (HashSet::new(), Vec::new(), Vec::new());
        for_each_difference(&before.routes, &now.routes, same_route, |side, key, route| match side {
            Side::Now => {
                routes.insert(std::ptr::from_ref(route) as usize);
                routes_now.push((key, route));
            }
            Side::Before => routes_before.push((key, route)),
        });
        let (mut slices, mut slices_before, mut slices_now) = (HashSet::new(), Vec::new(), Vec::new());
        for_each_difference(&before.endpoint_slices, &now.endpoint_slices, PartialEq::eq, |side, key, slice| {
            let Some(service) = slice.service() else { return };
            slices.insert((key.namespace.as_str(), service));
            match side {
                Side::Before => slices_before.push((key, service)),
                Side::Now => slices_now.push((key, service)),
            }
        });
        let mut endpoints = HashSet::new();
        for_each_difference(&before.endpoints, &now.endpoints, PartialEq::eq, |_, key, _| {
            endpoints.insert((key.namespace.as_str(), key.name.as_str()));
        });
        let mut others = before.unreadable_secrets != now.unreadable_secrets;
        for_each_difference(&before.namespaces, &now.namespaces, PartialEq::eq, |_, _, _| others = true);
        for_each_difference(&before.secrets, &now.secrets, PartialEq::eq, |_, _, _| others = true);
        for_each_difference(&before.config_maps, &now.config_maps, PartialEq::eq, |_, _, _| others = true);
        Self { routes, slices, endpoints, routes_before, routes_now, slices_before, slices_now, others }
    }

    /// Services (namespace, name) whose endpoints may differ between the snapshots.
    pub fn services(&self) -> impl Iterator<Item = &ServiceRef<'a>> {
        self.slices.iter().chain(&self.endpoints)
    }

    /// Whether `route` (an object of the new snapshot) is new or differs from the previous snapshot's route of
    /// its key in its spec, annotations or labels.
    pub fn route_changed(&self, route: &Route) -> bool {
        !self.routes.is_empty() && self.routes.contains(&(std::ptr::from_ref(route) as usize))
    }

    /// Whether `index` (of the new snapshot) yields for `namespace/service` exactly what an index of the previous
    /// snapshot did: the same slices, or, with no slices in either, the same core `Endpoints`.
    pub fn same_endpoints(&self, index: &EndpointIndex<'_>, namespace: &str, service: &str) -> bool {
        let key = (namespace, service);
        if self.slices.contains(&key) {
            return false;
        }
        // Core Endpoints count only for a service without slices (the same slices in both snapshots).
        !self.endpoints.contains(&key) || !index.slices_of(namespace, service).is_empty()
    }
}

/// What admission and `backend_for` read of a route: its spec, annotations and labels, and its age (admission
/// order, HTTPRoute match precedence); not its resourceVersion or status, which the Kubernetes source sees
/// change on every status write.
fn same_route(before: &Route, now: &Route) -> bool {
    before.spec == now.spec
        && before.metadata.annotations == now.metadata.annotations
        && before.metadata.labels == now.metadata.labels
        && before.metadata.creation_timestamp == now.metadata.creation_timestamp
        && before.metadata.uid == now.metadata.uid
}

/// Which snapshot an entry passed to `visit` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Before,
    Now,
}

/// Calls `visit` with the entries of two maps that are not the same in both: each side of a key whose objects
/// differ (neither shared nor `same`), and the keys on one side only. Maps that share their base can differ
/// only at their overlays' keys; others are walked whole.
fn for_each_difference<'a, K: Ord, T>(
    before: &'a Objects<K, T>,
    now: &'a Objects<K, T>,
    same: impl Fn(&T, &T) -> bool,
    mut visit: impl FnMut(Side, &'a K, &'a T),
) {
    let mut differ = |key: &'a K, old: Option<&'a Arc<T>>, new: Option<&'a Arc<T>>| match (old, new) {
        (Some(a), Some(b)) if Arc::ptr_eq(a, b) || same(a, b) => {}
        (old, new) => {
            old.into_iter().for_each(|object| visit(Side::Before, key, object));
            new.into_iter().for_each(|object| visit(Side::Now, key, object));
        }
    };
    if before.same_base(now) {
        let keys: BTreeSet<&K> = before.overlay_keys().chain(now.overlay_keys()).collect();
        for key in keys {
            differ(key, before.get(key), now.get(key));
        }
        return;
    }
    let (mut old, mut new) = (before.iter().peekable(), now.iter().peekable());
    loop {
        let order = match (old.peek(), new.peek()) {
            (None, None) => return,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((a, _)), Some((b, _))) => a.cmp(b),
        };
        match order {
            Ordering::Less => old.next().into_iter().for_each(|(key, object)| differ(key, Some(object), None)),
            Ordering::Greater => new.next().into_iter().for_each(|(key, object)| differ(key, None, Some(object))),
            Ordering::Equal => {
                if let (Some((key, a)), Some((_, b))) = (old.next(), new.next()) {
                    differ(key, Some(a), Some(b));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("ns", name)
    }

    #[test]
    fn only_differing_entries_are_visited() {
        let shared = Arc::new(1);
        let before: Objects<_, _> =
            [(key("a"), shared.clone()), (key("b"), Arc::new(2)), (key("c"), Arc::new(3)), (key("d"), Arc::new(4))]
                .into_iter()
                .collect();
        let now: Objects<_, _> =
            [(key("a"), shared), (key("b"), Arc::new(2)), (key("c"), Arc::new(30)), (key("e"), Arc::new(5))]
                .into_iter()
                .collect();
        let differences = |before: &Objects<ObjectKey, i32>, now: &Objects<ObjectKey, i32>| {
            let mut seen = Vec::new();
            for_each_difference(before, now, PartialEq::eq, |side, key, value| {
                seen.push((side, key.name.clone(), *value));
            });
            seen
        };
        let expect = [(Side::Before, "c", 3), (Side::Now, "c", 30), (Side::Before, "d", 4), (Side::Now, "e", 5)];
        let expect = expect.map(|(side, name, value)| (side, name.to_string(), value));
        assert_eq!(differences(&before, &now), expect, "walked whole");

        // The same change on top of a shared base: only the overlays are compared.
        let mut on_base = before.clone();
        on_base.insert(key("b"), Arc::new(2));
        let mut changed = before.clone();
        changed.insert(key("c"), Arc::new(30));
        changed.insert(key("e"), Arc::new(5));
        changed.insert(key("b"), Arc::new(2));
        assert!(on_base.same_base(&changed));
        let expect = [(Side::Before, "c", 3), (Side::Now, "c", 30), (Side::Now, "e", 5)];
        let expect = expect.map(|(side, name, value)| (side, name.to_string(), value));
        assert_eq!(differences(&on_base, &changed), expect, "overlays only");
    }
}
