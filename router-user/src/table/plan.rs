//! Which shards a build compiles, and which it takes over from the previous table: a shard is compiled anew
//! when a route entered or left it, or changed in it, or a service its routes send to has other endpoints;
//! every shard is when the inputs the table does not trace to routes changed (namespaces, Secrets, ConfigMaps),
//! when the shards are chosen otherwise, and on the first build.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::changes::Changes;
use super::shards::{name_hash, Shard, ShardBy, SHARDS};
use crate::admission::{effective_host, AdmissionSettings};
use crate::model::{ObjectKey, Snapshot};

pub enum Job {
    /// The previous table's shard, as it was.
    Keep(Arc<Shard>),
    /// Compile the shard from these routes (keys of the snapshot's routes whose host falls in it).
    Compile(Vec<ObjectKey>),
}

/// One job per shard, in shard order.
pub struct Plan {
    pub jobs: Vec<Job>,
}

impl Plan {
    /// Every shard compiled, from every route of the snapshot.
    pub fn full(snapshot: &Snapshot, settings: &AdmissionSettings, shard_by: ShardBy) -> Plan {
        let mut members = vec![Vec::new(); SHARDS];
        for (key, route) in &snapshot.routes {
            members[shard_by.of_host(&effective_host(route, settings))].push(key.clone());
        }
        Plan { jobs: members.into_iter().map(Job::Compile).collect() }
    }

    /// The shards `changes` touch compiled, the others kept from `shards` (the previous table's, chosen by
    /// `shard_by` too). `None` when every shard must be compiled.
    pub fn incremental(
        shards: &[Arc<Shard>],
        changes: &Changes<'_>,
        settings: &AdmissionSettings,
        shard_by: ShardBy,
    ) -> Option<Plan> {
        if changes.others || shards.len() != SHARDS {
            return None;
        }
        let mut leaving: HashMap<usize, HashSet<&ObjectKey>> = HashMap::new();
        for (key, route) in &changes.routes_before {
            leaving.entry(shard_by.of_host(&effective_host(route, settings))).or_default().insert(*key);
        }
        let mut arriving: HashMap<usize, Vec<&ObjectKey>> = HashMap::new();
        for (key, route) in &changes.routes_now {
            arriving.entry(shard_by.of_host(&effective_host(route, settings))).or_default().push(*key);
        }
        let services: Vec<u64> = changes.services().map(|(namespace, name)| name_hash(&[namespace, name])).collect();
        let jobs = shards
            .iter()
            .enumerate()
            .map(|(index, shard)| {
                let (left, arrived) = (leaving.get(&index), arriving.get(&index));
                let endpoints_changed = services.iter().any(|service| shard.services.contains(service));
                if left.is_none() && arrived.is_none() && !endpoints_changed {
                    return Job::Keep(shard.clone());
                }
                let stayed = shard.members().filter(|key| !left.is_some_and(|left| left.contains(key)));
                let members = stayed.chain(arrived.into_iter().flatten().copied()).cloned().collect();
                Job::Compile(members)
            })
            .collect();
        Some(Plan { jobs })
    }
}
