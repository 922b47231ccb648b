//! A table's routes split into shards by host, so that a route change rebuilds the shard of its host and takes
//! the others over as they were (at 100,000 routes a change compiles a few hundred routes, not 100,000).
//!
//! Admission only relates routes of one host (its owner namespace, its paths) and, where wildcard routes are
//! allowed, of one wildcard domain (a `*.example.com` claim against the hosts under it). So a shard holds every
//! route whose host falls in it, keyed by the host, or by the host's wildcard domain when wildcard routes are
//! allowed, and it is admitted and compiled alone: the same outcomes as admitting the whole set, the routes of
//! a shard taken oldest first as everywhere. Everything a host brings to the table lives in its shard: its
//! path rules for :80 and :443, its passthrough rule, its client certificate check, its routes' outcomes and
//! warnings. The certificate store stays one for the whole table (a certificate carried by routes of two
//! shards offers HTTP/2 on neither), rebuilt only when a rebuilt shard has certificates.
//!
//! With wildcard routes allowed, every route of one wildcard domain is in one shard: an OpenShift cluster's
//! routes mostly share its apps domain, so a change there rebuilds most of the table (as a full build would).

use std::collections::HashSet;
use std::sync::Arc;

use rustls::sign::CertifiedKey;

use super::client_auth_hosts::ClientAuthHosts;
use super::rules::HostRules;
use crate::admission::{wildcard_domain, RouteOutcome};
use crate::model::ObjectKey;

/// Shards per table. At 100,000 routes about 200 routes each.
pub const SHARDS: usize = 512;

/// What a route's shard is chosen by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShardBy {
    /// Its host (wildcard routes are not admitted: hosts do not meet in admission).
    #[default]
    Host,
    /// Its host's wildcard domain (`example.com` for `www.example.com`): a wildcard route meets every host under
    /// its domain in admission.
    Domain,
}

impl ShardBy {
    pub fn new(allow_wildcard_routes: bool) -> ShardBy {
        match allow_wildcard_routes {
            true => ShardBy::Domain,
            false => ShardBy::Host,
        }
    }

    /// The shard of a route for `host` (lowercase), and of a request or handshake for that exact name.
    pub fn of_host(self, host: &str) -> usize {
        match self {
            ShardBy::Host => shard_of(host),
            ShardBy::Domain => shard_of(wildcard_domain(host)),
        }
    }
}

/// The shard holding wildcard rules of `domain` (only wildcard routes, admitted only under `ShardBy::Domain`,
/// make them, so this is the shard of every host under `domain`).
pub fn of_domain(domain: &str) -> usize {
    shard_of(domain)
}

fn shard_of(name: &str) -> usize {
    shard_of_parts(&[name])
}

/// The shard of a name made of `parts`: stable across builds and processes.
pub fn shard_of_parts(parts: &[&str]) -> usize {
    (name_hash(parts) % SHARDS as u64) as usize
}

/// FNV-1a over `parts`, each followed by a separator: cheap for host and object names.
pub fn name_hash(parts: &[&str]) -> u64 {
    let step = |hash: u64, byte: u8| (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
    parts.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, part| step(part.bytes().fold(hash, step), b'/'))
}

/// Everything the routes of one shard bring to the table.
#[derive(Debug, Default)]
pub struct Shard {
    /// Every admitted route, for :80.
    pub http: HostRules,
    /// Edge and reencrypt routes, for requests on terminated :443 connections.
    pub https: HostRules,
    /// Passthrough routes by SNI (no paths).
    pub passthrough: HostRules,
    pub client_auth: ClientAuthHosts,
    pub certs: ShardCerts,
    /// Every route of the shard considered by admission, in the order it was.
    pub outcomes: Vec<RouteOutcome>,
    /// Annotation values that could not be used, per route.
    pub warnings: Vec<(ObjectKey, String)>,
    /// Routes whose host falls here that this router does not serve (`ROUTE_LABELS`, `NAMESPACE_LABELS`): with
    /// the outcomes' routes, every route a rebuild of the shard reads.
    pub skipped: Vec<ObjectKey>,
    /// The services the shard's routes send to, as `name_hash([namespace, name])` (a collision costs a needless
    /// rebuild of the shard, never a missed one; 8 bytes a service where the names took about 100).
    pub services: HashSet<u64>,
}

impl Shard {
    /// The keys of every route whose host falls in the shard.
    pub fn members(&self) -> impl Iterator<Item = &ObjectKey> {
        self.outcomes.iter().map(|outcome| &outcome.key).chain(&self.skipped)
    }
}

/// The certificates of a shard's hosts, for the table's one store.
#[derive(Debug, Default)]
pub struct ShardCerts {
    /// The certificate serving each exact host (its oldest route's).
    pub exact: Vec<(String, Arc<CertifiedKey>)>,
    /// The certificate serving each wildcard domain.
    pub wildcard: Vec<(String, Arc<CertifiedKey>)>,
    /// One entry per edge or reencrypt route carrying a certificate, serving or not.
    pub uses: Vec<Arc<CertifiedKey>>,
}

impl ShardCerts {
    /// The same certificates (the same objects: the build's certificate cache hands out one per PEM text)
    /// for the same names, and the same uses.
    pub fn same_as(&self, other: &ShardCerts) -> bool {
        let same_names = |a: &[(String, Arc<CertifiedKey>)], b: &[(String, Arc<CertifiedKey>)]| {
            a.len() == b.len() && a.iter().zip(b).all(|((x, k), (y, l))| x == y && Arc::ptr_eq(k, l))
        };
        same_names(&self.exact, &other.exact)
            && same_names(&self.wildcard, &other.wildcard)
            && self.uses.len() == other.uses.len()
            && self.uses.iter().zip(&other.uses).all(|(k, l)| Arc::ptr_eq(k, l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_and_the_wildcard_rules_of_its_domain_share_a_shard_when_sharded_by_domain() {
        for host in ["www.example.com", "a.b.example.com", "localhost", "x.apps.cluster.test"] {
            assert_eq!(ShardBy::Domain.of_host(host), of_domain(wildcard_domain(host)), "{host}");
        }
        // By host, two hosts of one domain are (most likely) apart: 200 hosts land in more than one shard.
        let shards: HashSet<usize> = (0..200).map(|i| ShardBy::Host.of_host(&format!("r{i}.example.com"))).collect();
        assert!(shards.len() > 100, "{}", shards.len());
        let shards: HashSet<usize> = (0..200).map(|i| ShardBy::Domain.of_host(&format!("r{i}.example.com"))).collect();
        assert_eq!(shards.len(), 1);
    }
}
