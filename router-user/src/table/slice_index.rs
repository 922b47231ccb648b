//! The keys of a snapshot's EndpointSlices by the service they belong to (their `kubernetes.io/service-name`
//! label), kept with the table so that the next build updates it from the slices that changed. Grouping every
//! slice anew, or scanning a namespace's slices for one service, costs a build time that grows with the
//! cluster (100,000 slices in one namespace: about 10 ms for one new route). Shards, like the table's: an
//! update copies the shards of the services it touches and shares the rest.

use std::collections::HashMap;
use std::sync::Arc;

use super::shards::{shard_of_parts, SHARDS};
use crate::model::{ObjectKey, Snapshot};

type Slices = HashMap<(String, String), Vec<ObjectKey>>;

#[derive(Clone, Debug, Default)]
pub struct SliceIndex {
    /// `SHARDS` maps (none before the first build): (namespace, service) -> slice keys in key order.
    shards: Vec<Arc<Slices>>,
}

impl SliceIndex {
    pub fn new(snapshot: &Snapshot) -> SliceIndex {
        let mut shards: Vec<Slices> = vec![HashMap::new(); SHARDS];
        for (key, slice) in &snapshot.endpoint_slices {
            if let Some(service) = slice.service() {
                let services = &mut shards[shard_of_parts(&[key.namespace.as_str(), service])];
                services.entry((key.namespace.clone(), service.to_string())).or_default().push(key.clone());
            }
        }
        SliceIndex { shards: shards.into_iter().map(Arc::new).collect() }
    }

    /// The index after the slices `removed` (key, service) left and `added` came (a changed slice is both).
    pub fn updated(&self, removed: &[(&ObjectKey, &str)], added: &[(&ObjectKey, &str)]) -> SliceIndex {
        let mut shards = self.shards.clone();
        for (key, service) in removed {
            let services = Arc::make_mut(&mut shards[shard_of_parts(&[key.namespace.as_str(), service])]);
            let service_key = (key.namespace.clone(), service.to_string());
            if let Some(keys) = services.get_mut(&service_key) {
                keys.retain(|k| k != *key);
                if keys.is_empty() {
                    services.remove(&service_key);
                }
            }
        }
        for (key, service) in added {
            let services = Arc::make_mut(&mut shards[shard_of_parts(&[key.namespace.as_str(), service])]);
            let keys = services.entry((key.namespace.clone(), service.to_string())).or_default();
            if let Err(at) = keys.binary_search(key) {
                keys.insert(at, (*key).clone());
            }
        }
        SliceIndex { shards }
    }

    pub fn is_built(&self) -> bool {
        self.shards.len() == SHARDS
    }

    /// The keys of `namespace/service`'s slices, in key order.
    pub fn slices_of(&self, namespace: &str, service: &str) -> &[ObjectKey] {
        let Some(services) = self.shards.get(shard_of_parts(&[namespace, service])) else { return &[] };
        services.get(&(namespace.to_string(), service.to_string())).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StoredSlice;

    fn slice(service: &str) -> Arc<StoredSlice> {
        let yaml =
            format!("metadata: {{name: x, labels: {{kubernetes.io/service-name: {service}}}}}\naddressType: IPv4\n");
        let slice: k8s_openapi::api::discovery::v1::EndpointSlice = serde_saphyr::from_str(&yaml).expect("slice");
        Arc::new(slice.into())
    }

    fn snapshot(slices: &[(&str, &str)]) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for (name, service) in slices {
            snapshot.endpoint_slices.insert(ObjectKey::new("ns", *name), slice(service));
        }
        snapshot
    }

    fn names(index: &SliceIndex, service: &str) -> Vec<String> {
        index.slices_of("ns", service).iter().map(|key| key.name.clone()).collect()
    }

    #[test]
    fn an_update_from_the_changed_slices_equals_an_index_built_anew() {
        let before = snapshot(&[("a-2", "a"), ("a-1", "a"), ("b-1", "b"), ("moving", "b")]);
        let index = SliceIndex::new(&before);
        assert_eq!(names(&index, "a"), ["a-1", "a-2"], "in key order");

        // a-2 removed, `moving` relabelled from b to c, a-0 added.
        let after = snapshot(&[("a-0", "a"), ("a-1", "a"), ("b-1", "b"), ("moving", "c")]);
        let (a2, moving, a0) =
            (ObjectKey::new("ns", "a-2"), ObjectKey::new("ns", "moving"), ObjectKey::new("ns", "a-0"));
        let updated = index.updated(&[(&a2, "a"), (&moving, "b")], &[(&moving, "c"), (&a0, "a")]);
        let fresh = SliceIndex::new(&after);
        for service in ["a", "b", "c", "d"] {
            assert_eq!(names(&updated, service), names(&fresh, service), "{service}");
        }
        assert_eq!(names(&updated, "a"), ["a-0", "a-1"]);
        assert_eq!(names(&index, "a"), ["a-1", "a-2"], "the previous index is unchanged");
    }
}
