//! What each reflector lets into its store: the objects that decoded and can be used. An object that did not
//! decode, or that cannot be used (an EndpointSlice whose `addressType` gives no backends), is left out (an
//! earlier version of it leaves the store) and reported once: a warning with its kind, namespace and name, one
//! count in `router_kube_objects_skipped_total`, and an entry in `/debug/skipped` while it stays so. Every other
//! object of its kind keeps flowing. What goes into the store is what is kept of the object (`keep`): the
//! object without its bookkeeping, or the part the router reads (`Kept`).

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::{Lookup, ObjectRef};
use kube::runtime::watcher::Event;
use kube::Resource;
use tracing::{info, warn};

use super::decoded::Decoded;
use super::skipped::SkippedObjects;
use crate::metrics::{Metrics, ResourceLabels};
use crate::model::ObjectKey;

/// Why an object that decoded cannot be used, or `None` when it can.
pub type Usability<K> = fn(&K) -> Option<String>;

/// Sifts one reflector's watcher events of `K` into events of what its store keeps, `S`.
pub struct Sieve<K, S> {
    resource: &'static str,
    kind: String,
    usability: Option<Usability<K>>,
    keep: fn(K) -> S,
    /// During a relist: the keys left out so far.
    relisted: Option<HashSet<ObjectKey>>,
    skipped: Arc<SkippedObjects>,
    metrics: Arc<Metrics>,
}

impl<K: Resource<DynamicType = ()>, S: Lookup<DynamicType = ()> + Clone> Sieve<K, S> {
    pub fn new(
        resource: &'static str,
        usability: Option<Usability<K>>,
        keep: fn(K) -> S,
        skipped: Arc<SkippedObjects>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self { resource, kind: K::kind(&()).into_owned(), usability, keep, relisted: None, skipped, metrics }
    }

    /// The event for the store, or `None` when there is none. `stored` reads the store's current object of a
    /// key (an object left out must take its earlier version out of the store).
    pub fn sift(
        &mut self,
        event: Event<Decoded<K>>,
        stored: impl Fn(&ObjectRef<S>) -> Option<Arc<S>>,
    ) -> Option<Event<S>> {
        match event {
            Event::Init => {
                self.relisted = Some(HashSet::new());
                Some(Event::Init)
            }
            Event::InitApply(decoded) => {
                let key = key_of(decoded.meta());
                match self.judge(decoded) {
                    Ok(object) => {
                        self.used(&key);
                        Some(Event::InitApply(object))
                    }
                    Err(reason) => {
                        self.skip(&key, &reason);
                        self.relisted.get_or_insert_with(HashSet::new).insert(key);
                        None
                    }
                }
            }
            Event::InitDone => {
                let relisted = self.relisted.take().unwrap_or_default();
                for key in self.skipped.retain(&self.kind, |key| relisted.contains(key)) {
                    info!(kind = self.kind, namespace = key.namespace, name = key.name, "no longer skipped: gone");
                }
                Some(Event::InitDone)
            }
            Event::Apply(decoded) => {
                let key = key_of(decoded.meta());
                match self.judge(decoded) {
                    Ok(object) => {
                        self.used(&key);
                        Some(Event::Apply(object))
                    }
                    Err(reason) => {
                        self.skip(&key, &reason);
                        stored(&object_ref(&key)).map(|earlier| Event::Delete(S::clone(&earlier)))
                    }
                }
            }
            Event::Delete(decoded) => {
                let key = key_of(decoded.meta());
                if self.skipped.remove(&self.kind, &key) {
                    info!(kind = self.kind, namespace = key.namespace, name = key.name, "no longer skipped: deleted");
                }
                match decoded {
                    Decoded::Object(object) => Some(Event::Delete((self.keep)(object))),
                    Decoded::Undecodable(_) => {
                        stored(&object_ref(&key)).map(|earlier| Event::Delete(S::clone(&earlier)))
                    }
                }
            }
        }
    }

    /// What is kept of the object, or why it is left out.
    fn judge(&self, decoded: Decoded<K>) -> Result<S, String> {
        match decoded {
            Decoded::Object(object) => match self.usability.and_then(|usability| usability(&object)) {
                None => Ok((self.keep)(object)),
                Some(reason) => Err(reason),
            },
            Decoded::Undecodable(undecodable) => Err(format!("cannot be decoded: {}", undecodable.error)),
        }
    }

    fn skip(&self, key: &ObjectKey, reason: &str) {
        if self.skipped.insert(&self.kind, key, reason) {
            self.metrics.kube_objects_skipped.get_or_create(&ResourceLabels { resource: self.resource }).inc();
            warn!(
                kind = self.kind,
                namespace = key.namespace,
                name = key.name,
                reason,
                "object skipped; the others of its kind are used"
            );
        }
    }

    fn used(&self, key: &ObjectKey) {
        if self.skipped.remove(&self.kind, key) {
            info!(kind = self.kind, namespace = key.namespace, name = key.name, "no longer skipped: now used");
        }
    }
}

fn key_of(meta: &ObjectMeta) -> ObjectKey {
    ObjectKey::new(meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
}

fn object_ref<S: Lookup<DynamicType = ()>>(key: &ObjectKey) -> ObjectRef<S> {
    let reference = ObjectRef::new(&key.name);
    if key.namespace.is_empty() {
        reference
    } else {
        reference.within(&key.namespace)
    }
}

#[cfg(test)]
mod tests;
