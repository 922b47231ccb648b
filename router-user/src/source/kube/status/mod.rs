//! Route status: this router's entry in `status.ingress[]` of every route it considered (host, wildcardPolicy,
//! routerCanonicalHostname, and an `Admitted` condition, False with the admission reason and message), and no
//! entry of ours on routes outside this router's shard (a route that left the shard, by its labels or its
//! namespace's, loses our entry, as OpenShift clears its own). Other routers' entries are kept as they are; a
//! write is skipped when our entry already says the same; each write carries the resourceVersion it was computed
//! from, so a concurrent change makes it conflict and be recomputed rather than overwrite another router's entry.
//!
//! At scale: a new table makes only the routes of its rebuilt shards due (`due`); writes are paced (`pace`:
//! `WRITES_PER_SECOND`, a few in flight) so that a fresh router on tens of thousands of routes does not flood
//! the apiserver; a failed write is retried with backoff; another writer fighting over our entry is backed off
//! from (`contention`); and every `RESYNC` all routes are looked at again.

mod contention;
mod due;
mod entry;
mod pace;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, ResourceExt};
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn};

use contention::Contention;
use due::{Due, Places};
pub use entry::desired_entry;
use entry::{fingerprint, same_entry, with_transition_time};
use pace::Pace;

use crate::metrics::{Metrics, StatusWriteLabels};
use crate::model::{ObjectKey, Route, RouteIngress};
use crate::table::RouteTable;

/// How many status writes run at once.
const CONCURRENT_WRITES: usize = 8;
/// Routes looked at before the loop turns to its other events.
const LOOKS_PER_TURN: usize = 512;
/// The steady rate of status writes, and the burst allowed above it.
const WRITES_PER_SECOND: u32 = 100;
const WRITE_BURST: u32 = 100;
/// A failed write is retried after this, doubled per failure up to `RETRY_MAX`.
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);
/// Every route is looked at again this often (OpenShift's router resyncs its routes every 30 minutes).
const RESYNC: Duration = Duration::from_secs(30 * 60);

pub struct StatusWriter {
    pub client: Client,
    pub routes: Store<Route>,
    /// `ROUTER_SERVICE_NAME`.
    pub router_name: String,
    pub canonical_hostname: Option<String>,
    pub metrics: Arc<Metrics>,
    /// Routes whose object changed in the store without a rebuild (status writes, ours included).
    pub quiet_updates: mpsc::UnboundedReceiver<ObjectKey>,
}

/// What the loop keeps between writes.
struct Book {
    due: Due,
    places: Places,
    contention: Contention,
    pace: Pace,
    /// What was written or is being written, by route: the resourceVersion it was written over and our entry's
    /// fingerprint (`None`: our entry removed). Until the store moves past that version, the same write is not
    /// made again; an entry of ours in the store with that fingerprint is our own.
    written: HashMap<ObjectKey, (String, Option<u64>)>,
    /// Failures in a row, by route, for the retry backoff.
    failures: HashMap<ObjectKey, u32>,
}

/// One write: the whole new `status.ingress` of a route, and our entry in it (`None` when it is removed).
struct Pending {
    key: ObjectKey,
    route: Arc<Route>,
    ingress: Vec<RouteIngress>,
    ours: Option<RouteIngress>,
}

/// How a write ended.
enum Written {
    Done,
    /// Deleted meanwhile: nothing to write.
    Gone,
    Retry,
}

impl StatusWriter {
    /// Writes status for the tables published on `tables` until the publisher goes away.
    pub async fn run(mut self, mut tables: watch::Receiver<Arc<RouteTable>>) {
        let now = Instant::now();
        let mut book = Book {
            due: Due::default(),
            places: Places::default(),
            contention: Contention::new(contention::INTERVAL, now),
            pace: Pace::new(WRITES_PER_SECOND, WRITE_BURST, now),
            written: HashMap::new(),
            failures: HashMap::new(),
        };
        let mut in_flight = FuturesUnordered::new();
        let mut resync_at = tokio::time::Instant::now() + RESYNC;
        // Set while the bucket is empty: no look before then.
        let mut paced_until: Option<Instant> = None;
        loop {
            let next_timer = [book.due.next_retry(), paced_until.filter(|_| !book.due.is_empty())]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or_else(|| Instant::now() + RESYNC);
            let may_look = paced_until.is_none() && !book.due.is_empty() && in_flight.len() < CONCURRENT_WRITES;
            tokio::select! {
                changed = tables.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let table = tables.borrow_and_update().clone();
                    let first = book.places.table().is_none();
                    // The first table makes all its routes due (a bulk); routes outside it may carry our entry.
                    book.places.follow(table, &mut book.due);
                    if first {
                        self.ours_outside_due(&mut book.due);
                    }
                }
                Some(key) = self.quiet_updates.recv() => {
                    self.observe(&mut book, &key);
                    book.due.push(key);
                }
                Some((key, over, ours, result)) = in_flight.next(), if !in_flight.is_empty() => {
                    self.finished(&mut book, key, over, ours, result);
                }
                _ = tokio::time::sleep_until(next_timer.into()) => {
                    let now = Instant::now();
                    book.due.release(now);
                    if paced_until.is_some_and(|until| until <= now) {
                        paced_until = None;
                    }
                }
                _ = tokio::time::sleep_until(resync_at) => {
                    resync_at += RESYNC;
                    let Book { places, due, .. } = &mut book;
                    places.keys().for_each(|key| due.push_bulk(key.clone()));
                    self.ours_outside_due(due);
                    debug!(due = due.len(), "route status: a full pass");
                }
                _ = std::future::ready(()), if may_look => {
                    let now = Instant::now();
                    if book.contention.flush_due(now) && book.contention.flush(now) {
                        warn!(router_name = %self.router_name, "another process is writing conflicting updates to the status of routes for this router name; make sure all routers of one name are configured alike (status writes pause while conflicts are seen)");
                    }
                    // A bounded number of looks per turn, so that a full pass never holds the thread long.
                    for _ in 0..LOOKS_PER_TURN {
                        if in_flight.len() >= CONCURRENT_WRITES {
                            break;
                        }
                        let Some(key) = book.due.pop() else { break };
                        let Some(pending) = self.pending(&mut book, &key, now) else { continue };
                        if let Err(wait) = book.pace.take(now) {
                            book.due.push(key);
                            paced_until = Some(now + wait);
                            break;
                        }
                        let over = pending.route.resource_version().unwrap_or_default();
                        let ours = pending.ours.as_ref().map(fingerprint);
                        book.written.insert(key.clone(), (over.clone(), ours));
                        let client = self.client.clone();
                        let metrics = self.metrics.clone();
                        in_flight.push(async move {
                            let result = write(client, &metrics, &pending).await;
                            (pending.key, over, ours, result)
                        });
                    }
                }
            }
        }
    }

    /// Every route in the store that carries an entry of ours, as a bulk (those the table holds are due
    /// already; the others lose the entry).
    fn ours_outside_due(&self, due: &mut Due) {
        for route in self.routes.state() {
            if self.our_entry(&route).is_some() {
                due.push_bulk(ObjectKey::new(route.namespace().unwrap_or_default(), route.name_any()));
            }
        }
    }

    /// A route's object changed without a rebuild: when our entry in it is neither what we wrote nor what it
    /// was, another writer changed it.
    fn observe(&self, book: &mut Book, key: &ObjectKey) {
        let Some(route) = self.route(key) else {
            book.contention.forget(key);
            return;
        };
        let Some(entry) = self.our_entry(&route) else { return };
        let seen = fingerprint(entry);
        match book.written.get(key) {
            Some((_, Some(ours))) if *ours == seen => book.contention.written(key, seen),
            _ => book.contention.changed_by_another(key, seen, Instant::now()),
        }
    }

    fn finished(&self, book: &mut Book, key: ObjectKey, over: String, ours: Option<u64>, result: Written) {
        match result {
            Written::Done => {
                book.failures.remove(&key);
                if let Some(ours) = ours {
                    book.contention.written(&key, ours);
                }
            }
            Written::Gone => {
                book.failures.remove(&key);
                book.written.remove(&key);
            }
            Written::Retry => {
                if book.written.get(&key).is_some_and(|(version, _)| *version == over) {
                    book.written.remove(&key);
                }
                let failures = book.failures.entry(key.clone()).or_default();
                let wait = RETRY_FIRST.saturating_mul(1 << (*failures).min(6)).min(RETRY_MAX);
                *failures += 1;
                book.due.retry_at(key, Instant::now() + wait);
            }
        }
    }

    fn route(&self, key: &ObjectKey) -> Option<Arc<Route>> {
        self.routes.get(&ObjectRef::new(&key.name).within(&key.namespace))
    }

    fn our_entry<'r>(&self, route: &'r Route) -> Option<&'r RouteIngress> {
        let current = route.status.as_ref().map(|s| s.ingress.as_slice()).unwrap_or_default();
        current.iter().find(|entry| entry.router_name.as_deref() == Some(&self.router_name))
    }

    /// The write `key` needs now: our entry made to say what its outcome says, or removed when the table does
    /// not hold the route; `None` when the route already says that (or our write of it is on its way), has no
    /// Route object (routes made from Ingresses), or is held back by contention (then it comes due later).
    fn pending(&self, book: &mut Book, key: &ObjectKey, now: Instant) -> Option<Pending> {
        let Some(route) = self.route(key) else {
            book.written.remove(key);
            book.failures.remove(key);
            return None;
        };
        let version = route.resource_version().unwrap_or_default();
        let ours = self.our_entry(&route);
        let canonical = self.canonical_hostname.as_deref();
        let desired = book.places.outcome(key).map(|outcome| desired_entry(outcome, &self.router_name, canonical));
        let already = match (&desired, ours) {
            (Some(desired), Some(ours)) => same_entry(ours, desired),
            (None, None) => true,
            _ => false,
        };
        match book.written.get(key) {
            Some((over, _)) if *over != version => drop(book.written.remove(key)),
            Some((_, written)) if *written == desired.as_ref().map(fingerprint) => return None,
            _ => {}
        }
        if already {
            return None;
        }
        if book.contention.holds_back(key, now) {
            book.due.retry_at(key.clone(), book.contention.free_at(key));
            self.metrics.route_status_writes.get_or_create(&StatusWriteLabels { result: "held_back" }).inc();
            return None;
        }
        let mut ingress: Vec<RouteIngress> = route.status.as_ref().map(|s| s.ingress.clone()).unwrap_or_default();
        let ours_now = match desired {
            Some(desired) => {
                let desired = with_transition_time(desired, ours);
                match ingress.iter_mut().find(|entry| entry.router_name.as_deref() == Some(&self.router_name)) {
                    Some(entry) => *entry = desired.clone(),
                    None => ingress.push(desired.clone()),
                }
                Some(desired)
            }
            None => {
                ingress.retain(|entry| entry.router_name.as_deref() != Some(&self.router_name));
                None
            }
        };
        Some(Pending { key: key.clone(), route, ingress, ours: ours_now })
    }
}

/// Patches `pending` with the resourceVersion it was computed over.
async fn write(client: Client, metrics: &Metrics, pending: &Pending) -> Written {
    let route = &pending.route;
    let namespace = route.namespace().unwrap_or_default();
    let api: Api<Route> = Api::namespaced(client, &namespace);
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": route.resource_version()},
        "status": {"ingress": pending.ingress},
    });
    let name = route.name_any();
    let result = api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await;
    let (label, written) = match &result {
        Ok(_) => ("ok", Written::Done),
        Err(kube::Error::Api(status)) if status.is_conflict() => ("conflict", Written::Retry),
        Err(kube::Error::Api(status)) if status.is_not_found() => ("gone", Written::Gone),
        Err(_) => ("error", Written::Retry),
    };
    metrics.route_status_writes.get_or_create(&StatusWriteLabels { result: label }).inc();
    let route = format!("{namespace}/{name}");
    match result {
        Ok(_) if pending.ours.is_none() => debug!(%route, "left this router's shard: our status entry removed"),
        Ok(_) => debug!(%route, "route status written"),
        Err(error) if label == "error" => warn!(%route, %error, "route status write failed; retrying with backoff"),
        Err(error) => debug!(%route, %error, "route status write will be retried"),
    }
    written
}
