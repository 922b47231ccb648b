//! Which routes' status must be looked at, and where each route is in the table published last.
//!
//! A new table makes due only the routes of the shards it rebuilt (a one-route change at 100,000 routes looks at
//! a few hundred routes, not all of them); the rest of the routes have the outcome they had. Routes come due
//! too when their object changes in the store without a rebuild (a status write by someone else), when a write
//! must be retried, and, every resync, all of them.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use crate::model::ObjectKey;
use crate::table::{RouteOutcome, RouteTable};

/// Routes waiting for a look, in the order they came, each once; and retries waiting for their time. A full
/// pass (the first table, a resync) is a bulk: routes of later changes go before it, so that a route created
/// while a fresh router writes 20,000 statuses has its own in seconds, not after them.
#[derive(Default)]
pub struct Due {
    now: Queue,
    bulk: Queue,
    later: BTreeMap<Instant, Vec<ObjectKey>>,
}

#[derive(Default)]
struct Queue {
    order: VecDeque<ObjectKey>,
    queued: HashSet<ObjectKey>,
}

impl Queue {
    fn push(&mut self, key: ObjectKey) {
        if self.queued.insert(key.clone()) {
            self.order.push_back(key);
        }
    }

    fn pop(&mut self) -> Option<ObjectKey> {
        let key = self.order.pop_front()?;
        self.queued.remove(&key);
        Some(key)
    }
}

impl Due {
    pub fn push(&mut self, key: ObjectKey) {
        self.now.push(key);
    }

    /// `key` as part of a full pass.
    pub fn push_bulk(&mut self, key: ObjectKey) {
        self.bulk.push(key);
    }

    pub fn pop(&mut self) -> Option<ObjectKey> {
        self.now.pop().or_else(|| self.bulk.pop())
    }

    pub fn is_empty(&self) -> bool {
        self.now.order.is_empty() && self.bulk.order.is_empty()
    }

    pub fn len(&self) -> usize {
        self.now.order.len() + self.bulk.order.len()
    }

    /// `key` comes due again at `at`.
    pub fn retry_at(&mut self, key: ObjectKey, at: Instant) {
        self.later.entry(at).or_default().push(key);
    }

    /// The earliest retry time.
    pub fn next_retry(&self) -> Option<Instant> {
        self.later.keys().next().copied()
    }

    /// Retries whose time has come become due.
    pub fn release(&mut self, now: Instant) {
        let not_yet = self.later.split_off(&(now + std::time::Duration::from_nanos(1)));
        for key in std::mem::replace(&mut self.later, not_yet).into_values().flatten() {
            self.push(key);
        }
    }
}

/// Where each route of the followed table is: the shard holding its outcome.
#[derive(Default)]
pub struct Places {
    table: Option<Arc<RouteTable>>,
    shard_of: HashMap<ObjectKey, u32>,
}

impl Places {
    /// Follows `table`: the routes of every shard it rebuilt (or, on the first table, of all, as a bulk) come
    /// due, those that left a rebuilt shard included.
    pub fn follow(&mut self, table: Arc<RouteTable>, due: &mut Due) {
        let bulk = self.table.is_none();
        let mut push = |key: &ObjectKey| match bulk {
            true => due.push_bulk(key.clone()),
            false => due.push(key.clone()),
        };
        let previous = self.table.take();
        let old_shards = previous.as_ref().map(|table| table.shards()).unwrap_or_default();
        let new_shards = table.shards();
        let same_layout = old_shards.len() == new_shards.len();
        for (index, shard) in new_shards.iter().enumerate() {
            let old = same_layout.then(|| &old_shards[index]);
            if old.is_some_and(|old| Arc::ptr_eq(old, shard)) {
                continue;
            }
            for outcome in old.iter().flat_map(|old| old.outcomes.iter()) {
                if self.shard_of.get(&outcome.key) == Some(&(index as u32)) {
                    self.shard_of.remove(&outcome.key);
                }
                push(&outcome.key);
            }
            for outcome in &shard.outcomes {
                self.shard_of.insert(outcome.key.clone(), index as u32);
                push(&outcome.key);
            }
        }
        if !same_layout {
            let now_present: HashSet<&ObjectKey> = table.outcomes().map(|outcome| &outcome.key).collect();
            self.shard_of.retain(|key, _| now_present.contains(key));
        }
        self.table = Some(table);
    }

    /// The outcome of `key` in the followed table; `None` when the table does not hold it.
    pub fn outcome(&self, key: &ObjectKey) -> Option<&RouteOutcome> {
        let shard = &self.table.as_ref()?.shards()[*self.shard_of.get(key)? as usize];
        shard.outcomes.iter().find(|outcome| &outcome.key == key)
    }

    pub fn table(&self) -> Option<&Arc<RouteTable>> {
        self.table.as_ref()
    }

    /// Every route of the followed table.
    pub fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.shard_of.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Route, Snapshot};
    use crate::table::{build, build_from, BuildOptions};

    fn route(name: &str, host: &str) -> Arc<Route> {
        let yaml = format!(
            "metadata: {{name: {name}, namespace: ns, uid: \"{name}\", creationTimestamp: \"2026-01-01T00:00:00Z\"}}\n\
             spec: {{host: \"{host}\", to: {{kind: Service, name: {name}}}}}\n"
        );
        Arc::new(serde_saphyr::from_str(&yaml).expect("test route"))
    }

    fn drain(due: &mut Due) -> Vec<String> {
        let mut keys: Vec<String> = std::iter::from_fn(|| due.pop()).map(|key| key.name).collect();
        keys.sort();
        keys
    }

    #[test]
    fn a_new_table_makes_due_only_the_routes_of_the_shards_it_rebuilt() {
        let options = BuildOptions::default();
        let mut before = Snapshot::default();
        for i in 0..200 {
            before.routes.insert(ObjectKey::new("ns", format!("r{i}")), route(&format!("r{i}"), &format!("r{i}.test")));
        }
        let first = Arc::new(build(&before, &options, 1));
        let (mut places, mut due) = (Places::default(), Due::default());
        places.follow(first.clone(), &mut due);
        assert_eq!(drain(&mut due).len(), 200, "the first table: every route");

        let mut after = before.clone();
        after.routes.remove(&ObjectKey::new("ns", "r1"));
        after.routes.insert(ObjectKey::new("ns", "r2"), route("r2", "moved.test"));
        let next = Arc::new(build_from(&after, &options, 2, Some((&before, &first))));
        places.follow(next.clone(), &mut due);
        let came_due = drain(&mut due);
        for name in ["r1", "r2"] {
            assert!(came_due.contains(&name.to_string()), "{name} in {came_due:?}");
        }
        // The shards of r1.test, r2.test and moved.test, a few routes each of 200 over 512 shards.
        assert!(came_due.len() < 12, "{came_due:?}");
        assert!(places.outcome(&ObjectKey::new("ns", "r1")).is_none(), "r1 left the table");
        assert_eq!(places.outcome(&ObjectKey::new("ns", "r2")).map(|o| o.host.as_str()), Some("moved.test"));
        assert_eq!(places.outcome(&ObjectKey::new("ns", "r150")).map(|o| o.host.as_str()), Some("r150.test"));
        assert_eq!(places.keys().count(), 199);

        places.follow(Arc::new(build_from(&after, &options, 3, Some((&after, &next)))), &mut due);
        assert!(due.is_empty(), "nothing rebuilt, nothing due");
    }

    #[test]
    fn due_routes_come_once_each_and_retries_at_their_time() {
        let mut due = Due::default();
        let start = Instant::now();
        due.push_bulk(ObjectKey::new("ns", "bulk"));
        due.push(ObjectKey::new("ns", "a"));
        due.push(ObjectKey::new("ns", "a"));
        due.retry_at(ObjectKey::new("ns", "b"), start + std::time::Duration::from_secs(2));
        assert_eq!(due.pop().map(|key| key.name), Some("a".into()), "a change goes before the full pass");
        assert_eq!(drain(&mut due), ["bulk"]);
        due.release(start + std::time::Duration::from_secs(1));
        assert!(due.is_empty());
        assert_eq!(due.next_retry(), Some(start + std::time::Duration::from_secs(2)));
        due.release(start + std::time::Duration::from_secs(2));
        assert_eq!(drain(&mut due), ["b"]);
        assert_eq!(due.next_retry(), None);
    }
}
