//! HostAdmitter's ownership of hosts and wildcard domains, used when wildcard routes are allowed: a host and
//! the wildcard domain above it belong to one namespace (unless the ownership check is disabled). Routes
//! arrive oldest first, so an existing claim always wins against the route being considered.

use std::collections::HashMap;

use super::host::wildcard_domain;
use super::{Admitted, Rejection};
use crate::model::{same_conditions, RequestMatch};

#[derive(Default)]
struct Claims<'c> {
    /// Exact hosts of non-wildcard routes.
    hosts: HashMap<String, Vec<Claim<'c>>>,
    /// Wildcard domains claimed by wildcard routes.
    wildcards: HashMap<String, Vec<Claim<'c>>>,
    /// Wildcard domains blocked by non-wildcard routes under them.
    blocked: HashMap<String, Vec<Claim<'c>>>,
}

#[derive(Clone)]
struct Claim<'c> {
    namespace: &'c str,
    name: &'c str,
    host: &'c str,
    path: &'c str,
    conditions: Option<&'c RequestMatch>,
}

/// Splits `candidates` (oldest first) into the routes that keep their claims and those refused.
pub fn resolve(
    candidates: Vec<Admitted<'_>>,
    any_namespace: bool,
) -> (Vec<Admitted<'_>>, Vec<(Admitted<'_>, Rejection)>) {
    let mut kept: Vec<Admitted<'_>> = Vec::with_capacity(candidates.len());
    let mut refused = Vec::new();
    // Claims borrow from `owned` hosts; collect decisions first, then rebuild the lists.
    let mut decisions: Vec<Option<Rejection>> = Vec::with_capacity(candidates.len());
    {
        let mut claims = Claims::default();
        for candidate in &candidates {
            if candidate.host.is_empty() {
                decisions.push(None);
                continue;
            }
            let claim = Claim {
                namespace: candidate.namespace(),
                name: &candidate.key.name,
                host: &candidate.host,
                path: candidate.raw_path(),
                conditions: candidate.route.spec.request_match.as_deref(),
            };
            let conflict = claims.conflict(&claim, candidate.wildcard, any_namespace);
            if conflict.is_none() {
                claims.insert(claim, candidate.wildcard);
            }
            decisions.push(conflict);
        }
    }
    for (candidate, decision) in candidates.into_iter().zip(decisions) {
        match decision {
            None => kept.push(candidate),
            Some(rejection) => refused.push((candidate, rejection)),
        }
    }
    (kept, refused)
}

impl<'c> Claims<'c> {
    fn insert(&mut self, claim: Claim<'c>, wildcard: bool) {
        let domain = wildcard_domain(claim.host).to_string();
        if wildcard {
            self.wildcards.entry(domain).or_default().push(claim);
        } else {
            self.hosts.entry(claim.host.to_string()).or_default().push(claim.clone());
            self.blocked.entry(domain).or_default().push(claim);
        }
    }

    /// The rejection for `new` if an older claim blocks it.
    fn conflict(&self, new: &Claim<'_>, wildcard: bool, any_namespace: bool) -> Option<Rejection> {
        let domain = wildcard_domain(new.host);
        let shares = |existing: &Claim<'_>| any_namespace || existing.namespace == new.namespace;
        let differ =
            |existing: &Claim<'_>| existing.path != new.path || !same_conditions(existing.conditions, new.conditions);
        let refuse = |existing: &Claim<'_>, detail: String| {
            let message = if existing.namespace == new.namespace {
                detail
            } else {
                format!("a route in another namespace holds host {}", new.host)
            };
            Some(Rejection::new("HostAlreadyClaimed", message))
        };

        for existing in self.hosts.get(new.host).into_iter().flatten() {
            // A wildcard route coexists with the exact hosts of its namespace; exact routes of one namespace
            // coexist when their paths (or conditions) differ.
            if shares(existing) && (wildcard || differ(existing)) {
                continue;
            }
            return refuse(
                existing,
                format!("route {}/{} has host {}", existing.namespace, existing.name, existing.host),
            );
        }
        for existing in self.wildcards.get(domain).into_iter().flatten() {
            if shares(existing) && (!wildcard || differ(existing)) {
                continue;
            }
            return refuse(
                existing,
                format!(
                    "wildcard route {}/{} has host *.{domain}, blocking {}",
                    existing.namespace, existing.name, new.host
                ),
            );
        }
        if wildcard {
            for existing in self.blocked.get(domain).into_iter().flatten() {
                if shares(existing) {
                    continue;
                }
                return refuse(
                    existing,
                    format!(
                        "route {}/{} has host {}, blocking *.{domain}",
                        existing.namespace, existing.name, existing.host
                    ),
                );
            }
        }
        None
    }
}
