//! UniqueHost's host index: per host, the oldest route's namespace owns the host (unless the ownership check
//! is disabled), and each path on a host (with its conditions, for routes made from HTTPRoute matches) belongs
//! to the oldest route that asks for it. A passthrough route and another TLS route cannot share a host: the
//! younger one is displaced.

use std::collections::HashMap;

use super::{Admitted, Rejection};

/// Splits `candidates` (oldest first) into active routes and displaced ones with their rejection.
pub fn resolve(
    candidates: Vec<Admitted<'_>>,
    namespace_ownership: bool,
) -> (Vec<Admitted<'_>>, Vec<(Admitted<'_>, Rejection)>) {
    // Per host: the owner (the oldest route) and the latest active route; `earlier[i]` links active route `i`
    // to the previous active route of its host, so no host needs a list of its own.
    let mut hosts: HashMap<&str, (&Admitted<'_>, usize)> = HashMap::with_capacity(candidates.len());
    let mut earlier: Vec<Option<usize>> = vec![None; candidates.len()];
    let mut verdicts: Vec<Option<Rejection>> = Vec::with_capacity(candidates.len());
    for (index, candidate) in candidates.iter().enumerate() {
        let Some((owner, latest)) = hosts.get_mut(candidate.host.as_str()) else {
            hosts.insert(&candidate.host, (candidate, index));
            verdicts.push(None);
            continue;
        };
        let mut active = std::iter::successors(Some(*latest), |&i| earlier[i]);
        let verdict = if namespace_ownership && owner.key.namespace != candidate.key.namespace {
            Some(Rejection::new(
                "HostAlreadyClaimed",
                format!(
                    "a route in another namespace holds {} and is older than {}",
                    candidate.host, candidate.key.name
                ),
            ))
        } else if active.any(|other| conflicts(&candidates[other], candidate)) {
            Some(Rejection::new(
                "HostAlreadyClaimed",
                format!("route {} already exposes {} and is older", owner.key.name, candidate.host),
            ))
        } else {
            earlier[index] = Some(*latest);
            *latest = index;
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

/// Same path (and the same conditions: routes made from HTTPRoute matches that ask different things of a
/// request share their path), or two TLS routes of which either is passthrough (OpenShift's host index: a
/// passthrough route owns the host's :443 outright, so it cannot share the host with an edge or reencrypt route).
fn conflicts(existing: &Admitted<'_>, new: &Admitted<'_>) -> bool {
    if existing.raw_path() == new.raw_path() && existing.same_conditions(new) {
        return true;
    }
    let (old_tls, new_tls) = (existing.route.spec.tls.as_ref(), new.route.spec.tls.as_ref());
    matches!((old_tls, new_tls), (Some(old), Some(new)) if old.termination == "passthrough" || new.termination == "passthrough")
}
