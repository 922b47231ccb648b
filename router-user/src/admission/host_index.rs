//! UniqueHost's host index: per host, the oldest route's namespace owns the host (unless the ownership check
//! is disabled), and each path on a host belongs to the oldest route that asks for it. A path-based TLS route
//! cannot share a host with an older passthrough route.

use std::collections::HashMap;

use super::{Admitted, Rejection};

/// Splits `candidates` (oldest first) into active routes and displaced ones with their rejection.
pub fn resolve(
    candidates: Vec<Admitted<'_>>,
    namespace_ownership: bool,
) -> (Vec<Admitted<'_>>, Vec<(Admitted<'_>, Rejection)>) {
    // Per host: (owner namespace, owner name, indices of active routes).
    let mut hosts: HashMap<String, (String, String, Vec<usize>)> = HashMap::new();
    let mut verdicts: Vec<Option<Rejection>> = Vec::with_capacity(candidates.len());
    for (index, candidate) in candidates.iter().enumerate() {
        let entry = hosts
            .entry(candidate.host.clone())
            .or_insert_with(|| (candidate.key.namespace.clone(), candidate.key.name.clone(), Vec::new()));
        let (owner_namespace, owner_name, active) = entry;
        let verdict = if namespace_ownership && *owner_namespace != candidate.key.namespace {
            Some(Rejection::new(
                "HostAlreadyClaimed",
                format!(
                    "a route in another namespace holds {} and is older than {}",
                    candidate.host, candidate.key.name
                ),
            ))
        } else if active.iter().any(|&other| conflicts(&candidates[other], candidate)) {
            Some(Rejection::new(
                "HostAlreadyClaimed",
                format!("route {owner_name} already exposes {} and is older", candidate.host),
            ))
        } else {
            active.push(index);
            None
        };
        verdicts.push(verdict);
    }
    let mut active = Vec::with_capacity(candidates.len());
    let mut displaced = Vec::new();
    for (candidate, verdict) in candidates.into_iter().zip(verdicts) {
        match verdict {
            None => active.push(candidate),
            Some(rejection) => displaced.push((candidate, rejection)),
        }
    }
    (active, displaced)
}

/// Same path, or a TLS route meeting an existing passthrough route.
fn conflicts(existing: &Admitted<'_>, new: &Admitted<'_>) -> bool {
    if existing.raw_path() == new.raw_path() {
        return true;
    }
    let (old_tls, new_tls) = (existing.route.spec.tls.as_ref(), new.route.spec.tls.as_ref());
    matches!((old_tls, new_tls), (Some(old), Some(_)) if old.termination == "passthrough")
}
