//! Reading a sharded table as one: a host index (every route for :80, terminated :443, passthrough) looked up
//! in the shard of the host, and for wildcard rules in the shard of the host's domain.

use std::sync::Arc;

use http::{HeaderMap, Method};

use super::conditions::RequestFacts;
use super::rules::HostRules;
use super::shards::{of_domain, Shard};
use super::{Backend, RouteTable};
use crate::admission::{serves_subdomain, wildcard_domain};
use crate::model::ObjectKey;

/// Which of a shard's host indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RulesKind {
    Http,
    Https,
    Passthrough,
}

/// One host index across the table's shards.
#[derive(Clone, Copy)]
pub struct Rules<'t> {
    pub(super) table: &'t RouteTable,
    pub(super) kind: RulesKind,
}

impl<'t> Rules<'t> {
    fn of(&self, shard: &'t Shard) -> &'t HostRules {
        match self.kind {
            RulesKind::Http => &shard.http,
            RulesKind::Https => &shard.https,
            RulesKind::Passthrough => &shard.passthrough,
        }
    }

    fn exact_shard(&self, host: &str) -> Option<&'t HostRules> {
        self.table.shard_of_host(host).map(|shard| self.of(shard))
    }

    fn domain_shard(&self, domain: &str) -> Option<&'t HostRules> {
        self.table.shards.get(of_domain(domain)).map(|shard| self.of(shard))
    }

    /// The route serving `host` (already normalised) and `path` (no query string) for a `GET` without headers
    /// or query (SNI lookups, tests).
    pub fn lookup(&self, host: &str, path: &str) -> Option<&'t Arc<Backend>> {
        let headers = HeaderMap::new();
        self.lookup_request(host, &RequestFacts { path, method: &Method::GET, headers: &headers, query: None })
    }

    /// The route serving `request` for `host` (already normalised): exact host rules first, then the wildcard
    /// rules of the host's parent domain; in each, the first rule whose path and conditions the request meets.
    pub fn lookup_request(&self, host: &str, request: &RequestFacts<'_>) -> Option<&'t Arc<Backend>> {
        if let Some(found) = self.exact_shard(host).and_then(|rules| rules.lookup_exact(host, request)) {
            return Some(found);
        }
        let domain = host.split_once('.').map(|(_, domain)| domain)?;
        self.domain_shard(domain)?.lookup_wildcard(domain, request)
    }

    /// The backend of `route` among `host`'s rules, if it has one.
    pub fn find(&self, host: &str, wildcard: bool, route: &ObjectKey) -> Option<&'t Arc<Backend>> {
        let rules = match serves_subdomain(host, wildcard) {
            true => self.domain_shard(wildcard_domain(host))?,
            false => self.exact_shard(host)?,
        };
        rules.find(host, wildcard, route)
    }

    /// Every backend, once per rule.
    pub fn backends(&self) -> impl Iterator<Item = &'t Arc<Backend>> + 't {
        let this = *self;
        self.table.shards.iter().flat_map(move |shard| this.of(shard).backends())
    }

    pub fn is_empty(&self) -> bool {
        self.table.shards.iter().all(|shard| self.of(shard).is_empty())
    }
}
