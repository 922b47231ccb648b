//! The keys of a snapshot's EndpointSlices by the service they belong to (their `kubernetes.io/service-name`
//! label), kept with the table so that the next build updates it from the slices that changed. Grouping every
//! slice anew, or scanning a namespace's slices for one service, costs a build time that grows with the
//! cluster (100,000 slices in one namespace: about 10 ms for one new route). Shards, like the table's: an
//! update copies the shards of the services it touches and shares the rest.

use std::collections::HashMap;
use std::sync::Arc;

use super::shards::{name_hash, SHARDS};
use crate::model::{ObjectKey, Snapshot};

/// `name_hash([namespace, service])` -> the names of the service's slices in that namespace, in key order. Two
/// services of one hash share an entry; lookups check each slice's namespace and label.
type Slices = HashMap<u64, Vec<Box<str>>>;

#[derive(Clone, Debug, Default)]
pub struct SliceIndex {
    /// `SHARDS` maps (none before the first build).
    shards: Vec<Arc<Slices>>,
}

fn locate(namespace: &str, service: &str) -> (usize, u64) {
    let hash = name_hash(&[namespace, service]);
    ((hash % SHARDS as u64) as usize, hash)
}

impl SliceIndex {
    pub fn new(snapshot: &Snapshot) -> SliceIndex {
        let mut shards: Vec<Slices> = vec![HashMap::new(); SHARDS];
        for (key, slice) in &snapshot.endpoint_slices {
            if let Some(service) = slice.service() {
                let (shard, hash) = locate(&key.namespace, service);
                shards[shard].entry(hash).or_default().push(key.name.as_str().into());
            }
        }
        SliceIndex { shards: shards.into_iter().map(Arc::new).collect() }
    }

    /// The index after the slices `removed` (key, service) left and `added` came (a changed slice is both).
    pub fn updated(&self, removed: &[(&ObjectKey, &str)], added: &[(&ObjectKey, &str)]) -> SliceIndex {
        let mut shards = self.shards.clone();
        for (key, service) in removed {
            let (shard, hash) = locate(&key.namespace, service);
            let services = Arc::make_mut(&mut shards[shard]);
            if let Some(names) = services.get_mut(&hash) {
                names.retain(|name| **name != *key.name);
                if names.is_empty() {
                    services.remove(&hash);
                }
            }
        }
        for (key, service) in added {
            let (shard, hash) = locate(&key.namespace, service);
            let names = Arc::make_mut(&mut shards[shard]).entry(hash).or_default();
            if let Err(at) = names.binary_search_by(|name| (**name).cmp(key.name.as_str())) {
                names.insert(at, key.name.as_str().into());
            }
        }
        SliceIndex { shards }
    }

    pub fn is_built(&self) -> bool {
        self.shards.len() == SHARDS
    }

    /// The keys of `namespace/service`'s slices (and of any other service of the same hash: callers check
    /// the slices' label), in key order.
    pub fn slices_of<'i>(&'i self, namespace: &'i str, service: &str) -> impl Iterator<Item = ObjectKey> + 'i {
        let (shard, hash) = locate(namespace, service);
        let names = self.shards.get(shard).and_then(|services| services.get(&hash));
        names.into_iter().flatten().map(move |name| ObjectKey::new(namespace, &**name))
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
        index.slices_of("ns", service).map(|key| key.name).collect()
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
