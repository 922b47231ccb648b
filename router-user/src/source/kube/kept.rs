//! `Kept`: what a reflector store holds of an object of kind `K` when it holds less than the object: its key
//! and the part the router reads (`T`, shared with the snapshots). Services, EndpointSlices and core Endpoints
//! are stored this way (`model::StoredService` and the like), converted as they enter the store.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;

use kube::runtime::reflector::Lookup;
use kube::{Resource, ResourceExt};

use crate::model::ObjectKey;

/// An object of kind `K` as its store keeps it.
pub struct Kept<K, T> {
    pub key: ObjectKey,
    pub object: Arc<T>,
    kind: PhantomData<fn() -> K>,
}

impl<K, T> Clone for Kept<K, T> {
    fn clone(&self) -> Self {
        Self { key: self.key.clone(), object: self.object.clone(), kind: PhantomData }
    }
}

impl<K, T> Kept<K, T> {
    pub fn new(key: ObjectKey, object: T) -> Self {
        Self { key, object: Arc::new(object), kind: PhantomData }
    }
}

impl<K: Resource, T: From<K>> Kept<K, T> {
    /// `object` as the store keeps it.
    pub fn keep(object: K) -> Self {
        let key = ObjectKey::new(ResourceExt::namespace(&object).unwrap_or_default(), object.name_any());
        Self::new(key, T::from(object))
    }
}

/// The store's key of an object: kind from `K`, name and namespace from the key. No resource version or uid:
/// the store compares keys without them, and nothing else reads them.
impl<K: Resource<DynamicType = ()>, T> Lookup for Kept<K, T> {
    type DynamicType = ();

    fn kind(dyntype: &()) -> Cow<'_, str> {
        K::kind(dyntype)
    }

    fn group(dyntype: &()) -> Cow<'_, str> {
        K::group(dyntype)
    }

    fn version(dyntype: &()) -> Cow<'_, str> {
        K::version(dyntype)
    }

    fn plural(dyntype: &()) -> Cow<'_, str> {
        K::plural(dyntype)
    }

    fn name(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(self.key.name.as_str()))
    }

    fn namespace(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(self.key.namespace.as_str())).filter(|namespace| !namespace.is_empty())
    }

    fn resource_version(&self) -> Option<Cow<'_, str>> {
        None
    }

    fn uid(&self) -> Option<Cow<'_, str>> {
        None
    }
}
