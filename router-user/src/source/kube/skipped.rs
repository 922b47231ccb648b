//! The objects the Kubernetes source leaves out right now (undecodable, or an EndpointSlice whose `addressType`
//! gives no backends), with the reason: written by the reflectors (`sieve`), read by `/debug/skipped`.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::model::ObjectKey;

/// One object left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedObject {
    /// The object's kind (`Route`, `EndpointSlice`, ...).
    pub kind: String,
    /// Empty for cluster-scoped kinds.
    pub namespace: String,
    pub name: String,
    pub reason: String,
}

/// The objects left out, by kind and key.
#[derive(Debug, Default)]
pub struct SkippedObjects {
    entries: Mutex<BTreeMap<(String, ObjectKey), String>>,
}

impl SkippedObjects {
    /// Every object left out now, ordered by kind, namespace and name.
    pub fn list(&self) -> Vec<SkippedObject> {
        self.lock()
            .iter()
            .map(|((kind, key), reason)| SkippedObject {
                kind: kind.clone(),
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                reason: reason.clone(),
            })
            .collect()
    }

    /// Records `key` of `kind` as left out for `reason`; true when it was not left out before.
    pub(super) fn insert(&self, kind: &str, key: &ObjectKey, reason: &str) -> bool {
        self.lock().insert((kind.to_string(), key.clone()), reason.to_string()).is_none()
    }

    /// Forgets `key` of `kind`; true when it was left out.
    pub(super) fn remove(&self, kind: &str, key: &ObjectKey) -> bool {
        self.lock().remove(&(kind.to_string(), key.clone())).is_some()
    }

    /// Forgets the objects of `kind` that `keep` refuses; returns their keys.
    pub(super) fn retain(&self, kind: &str, keep: impl Fn(&ObjectKey) -> bool) -> Vec<ObjectKey> {
        let mut forgotten = Vec::new();
        self.lock().retain(|(entry_kind, key), _| {
            let kept = entry_kind != kind || keep(key);
            if !kept {
                forgotten.push(key.clone());
            }
            kept
        });
        forgotten
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<(String, ObjectKey), String>> {
        // The map stays consistent even if a holder panicked: each change is one map operation.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
