//! One host index: exact hosts, then one-label wildcard domains, each with path rules in match order (longest
//! path first; for one path, HTTPRoute matches by the Gateway API's precedence, then routes without conditions).
//! The table keeps three: every route (for :80), edge and reencrypt routes (for terminated :443 requests), and
//! passthrough routes (for SNI on :443).

use std::collections::HashMap;
use std::sync::Arc;

use super::conditions::{Conditions, RequestFacts};
use super::{Backend, RoutePath};
use crate::admission::{serves_subdomain, wildcard_domain};
use crate::model::ObjectKey;

#[derive(Debug, Default)]
pub struct HostRules {
    /// Exact host -> path rules in match order (longest prefix first).
    exact: HashMap<String, Vec<PathRule>>,
    /// Wildcard domain (`example.com` for `*.example.com`) -> path rules; tried after exact hosts.
    wildcard: HashMap<String, Vec<PathRule>>,
}

#[derive(Debug)]
struct PathRule {
    path: RoutePath,
    backend: Arc<Backend>,
}

impl HostRules {
    /// Adds `backend` for `host` (a wildcard route's host is `*.domain` or any name under it). Two routes can
    /// differ in raw path ("" and "/") yet match the same requests: the one added first keeps them.
    pub fn insert(&mut self, host: &str, wildcard: bool, backend: Arc<Backend>) {
        let rules = if serves_subdomain(host, wildcard) {
            self.wildcard.entry(wildcard_domain(host).to_string()).or_default()
        } else {
            self.exact.entry(host.to_string()).or_default()
        };
        if !rules.iter().any(|rule| {
            rule.path == backend.path
                && Conditions::same(rule.backend.conditions.as_deref(), backend.conditions.as_deref())
        }) {
            rules.push(PathRule { path: backend.path.clone(), backend });
        }
    }

    /// Puts every host's rules in match order and gives back their spare room (most hosts have one rule, in
    /// room for four); call once after the last insert.
    pub fn sort(&mut self) {
        for rules in self.exact.values_mut().chain(self.wildcard.values_mut()) {
            // Stable: ties keep the insertion order, admission's oldest first.
            rules.sort_by(|a, b| {
                let (mine, theirs) = (a.backend.conditions.as_deref(), b.backend.conditions.as_deref());
                a.path.match_order(&b.path).then_with(|| Conditions::precedence(mine, theirs))
            });
            rules.shrink_to_fit();
        }
    }

    /// The route serving `request` for the exact host `host` (already normalised): the first of its rules
    /// whose path and conditions the request meets.
    pub fn lookup_exact(&self, host: &str, request: &RequestFacts<'_>) -> Option<&Arc<Backend>> {
        self.exact.get(host).and_then(|rules| first_match(rules, request))
    }

    /// The same among the wildcard rules of `domain` (a request host without its first label).
    pub fn lookup_wildcard(&self, domain: &str, request: &RequestFacts<'_>) -> Option<&Arc<Backend>> {
        self.wildcard.get(domain).and_then(|rules| first_match(rules, request))
    }

    /// The backend of `route` among `host`'s rules, if it has one.
    pub fn find(&self, host: &str, wildcard: bool, route: &ObjectKey) -> Option<&Arc<Backend>> {
        let rules = match serves_subdomain(host, wildcard) {
            true => self.wildcard.get(wildcard_domain(host)),
            false => self.exact.get(host),
        };
        rules?.iter().map(|rule| &rule.backend).find(|backend| backend.route == *route)
    }

    /// Every backend, once per rule.
    pub fn backends(&self) -> impl Iterator<Item = &Arc<Backend>> {
        self.exact.values().chain(self.wildcard.values()).flatten().map(|rule| &rule.backend)
    }

    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.wildcard.is_empty()
    }
}

fn first_match<'t>(rules: &'t [PathRule], request: &RequestFacts<'_>) -> Option<&'t Arc<Backend>> {
    let meets = |rule: &PathRule| rule.backend.conditions.as_ref().is_none_or(|c| c.accept(request));
    rules.iter().find(|rule| rule.path.matches(request.path) && meets(rule)).map(|rule| &rule.backend)
}
