//! One reflector per resource: list and watch with backoff (`backoff`) into a `Store`, objects decoded one at a
//! time (`decoded`) and only usable ones stored (`sieve`), `managedFields` stripped or only the fields the router
//! reads kept (`keep`), and a signal on every change that can alter the table. A failed watch relists (a 410 Gone included); while the apiserver is away the store
//! keeps its last contents, so the table built from it keeps serving.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use futures_util::{StreamExt, TryStreamExt};
use kube::runtime::reflector::{self, Lookup, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, Notify};
use tracing::{info, warn};

use super::backoff::WatchBackoff;
use super::decoded::Decoded;
use super::sieve::{Sieve, Usability};
use super::skipped::SkippedObjects;
use crate::metrics::{Metrics, ResourceLabels};
use crate::model::{drop_bookkeeping, ObjectKey};

/// What about an object matters to the table: when an update leaves it unchanged (a status write, say), no
/// rebuild is signalled. `None` means every update matters.
pub type Relevance<K> = fn(&K) -> String;

/// What a reflector watches, how it judges objects of `K`, and what its store keeps of them (`S`).
pub struct Watched<K, S> {
    /// The resource's plural, for logs and metric labels.
    pub resource: &'static str,
    pub config: watcher::Config,
    pub relevance: Option<Relevance<S>>,
    /// Objects it refuses are left out of the store, as undecodable ones are.
    pub usability: Option<Usability<K>>,
    /// What the store keeps of an object: `without_bookkeeping`, or a `Kept` part.
    pub keep: fn(K) -> S,
    /// Where updates that leave the relevance unchanged (status writes) are reported, by key: the route status
    /// writer checks those routes again.
    pub quiet_updates: Option<mpsc::UnboundedSender<ObjectKey>>,
}

/// The whole object without the server's bookkeeping (`managedFields`, the last-applied annotation).
pub fn without_bookkeeping<K: Resource>(mut object: K) -> K {
    drop_bookkeeping(object.meta_mut());
    object
}

/// A reflector for `api` and the future that drives it; the store fills once the future runs. Objects left out
/// are recorded in `skipped`.
pub fn reflect<K, S>(
    api: Api<Decoded<K>>,
    watched: Watched<K, S>,
    changes: Arc<Notify>,
    skipped: Arc<SkippedObjects>,
    metrics: Arc<Metrics>,
) -> (Store<S>, impl Future<Output = ()> + Send)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    S: Lookup<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let Watched { resource, config, relevance, usability, keep, quiet_updates } = watched;
    let (reader, mut writer) = reflector::store();
    let mut sieve = Sieve::new(resource, usability, keep, skipped, metrics.clone());
    let stored = reader.clone();
    let stream = watcher(api, config)
        .backoff(WatchBackoff::default())
        .filter_map(move |event| {
            let sifted = match event {
                Ok(event) => sieve.sift(event, |key| stored.get(key)).map(Ok),
                Err(error) => Some(Err(error)),
            };
            std::future::ready(sifted)
        })
        // What `WatchStreamExt::reflect` does, which asks for a `Resource` where a store needs only `Lookup`.
        .map_ok(move |event| {
            writer.apply_watcher_event(&event);
            event
        });
    let drive = async move {
        // Fingerprints hashed: the relevance text of a route is its whole spec.
        let mut seen: HashMap<(String, String), u64> = HashMap::new();
        let mut failing = false;
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    metrics.kube_watch_errors.get_or_create(&ResourceLabels { resource }).inc();
                    if !failing {
                        warn!(resource, %error, "watch failed; the last state stays live, retrying with backoff");
                    }
                    failing = true;
                    continue;
                }
            };
            if std::mem::take(&mut failing) {
                info!(resource, "watch resumed");
            }
            let changed = match (&event, relevance) {
                (watcher::Event::Init, _) => {
                    seen.clear();
                    false
                }
                (watcher::Event::InitApply(object), Some(relevance)) => {
                    seen.insert(key(object), fingerprint(&relevance(object)));
                    false
                }
                (watcher::Event::InitApply(_), None) => false,
                (watcher::Event::InitDone, _) => true,
                (watcher::Event::Apply(object), Some(relevance)) => {
                    let now = fingerprint(&relevance(object));
                    let changed = seen.insert(key(object), now) != Some(now);
                    if let (false, Some(quiet)) = (changed, &quiet_updates) {
                        let (namespace, name) = key(object);
                        let _ = quiet.send(ObjectKey::new(namespace, name));
                    }
                    changed
                }
                (watcher::Event::Apply(_), None) => true,
                (watcher::Event::Delete(object), _) => {
                    seen.remove(&key(object));
                    true
                }
            };
            if changed {
                changes.notify_one();
            }
        }
    };
    (reader, drive)
}

fn fingerprint(relevance: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    relevance.hash(&mut hasher);
    hasher.finish()
}

fn key<S: Lookup>(object: &S) -> (String, String) {
    let name = |part: Option<Cow<'_, str>>| part.map(Cow::into_owned).unwrap_or_default();
    (name(object.namespace()), name(object.name()))
}
