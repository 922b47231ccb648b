//! Compiling a `Snapshot` into a `RouteTable`: admission decides which routes are served; each admitted
//! route gets its endpoints (weighted by OpenShift's arithmetic), its policy and its balancer; each host's
//! paths are ordered for matching.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use rustls::sign::CertifiedKey;

use super::changes::Changes;
use super::client_tls::CLIENT_TLS_VALIDATION_FAILED;
use super::endpoints::EndpointIndex;
use super::plan::{Job, Plan};
use super::shards::{name_hash, Shard, ShardBy, SHARDS};
use super::slice_index::SliceIndex;
use super::tls_material::{RouteTls, TlsBuild};
use super::{Backend, Conditions, Endpoint, HttpAction, RoutePath, RouteTable, Termination};
use crate::admission::{admit_routes, serves_subdomain, sort_oldest_first, wildcard_domain};
use crate::admission::{AdmissionSettings, Admitted, Rejection};
use crate::balance::{endpoint_weights, service_weight, Balancer, EndpointHealth, InFlight};
use crate::metrics::{BackendLabels, CountersSlot, RequestCounters};
use crate::model::{ObjectKey, Route, Snapshot};
use crate::policy::{CookieValue, RoutePolicy, RouterDefaults};
use crate::protection::{ConnectionSlots, RateLimiter};
use crate::tls::{CertStore, CertStoreBuilder};

#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    pub allow_loopback_endpoints: bool,
    pub admission: AdmissionSettings,
    pub defaults: RouterDefaults,
    pub tls: TlsBuild,
}

/// Builds the table for `snapshot`. No I/O, safe to run on a blocking thread; certificates and reencrypt
/// connection pools are memoised in `options.tls` across builds.
pub fn build(snapshot: &Snapshot, options: &BuildOptions, generation: u64) -> RouteTable {
    build_from(snapshot, options, generation, None)
}

/// `build`, taking over from `previous` (the snapshot and the table built from it with the same `options`)
/// what did not change. Shards (see `shards`) that no change touched are the previous table's, as they were.
/// In a shard compiled anew, the backend of every admitted route whose inputs are unchanged (the same route
/// object, the same endpoint objects of each of its services, the same TLS termination and reencrypt upstream)
/// is taken over too. A backend is a function of those inputs, so the table equals a fresh build, except that
/// such a route keeps its runtime state (health, requests in flight, balancer position, rate limits) instead
/// of starting anew: a change to one route leaves the others as they were. A backend compiled anew takes over
/// the health of the endpoints (by server id) of the same route's previous backend, as
/// `RouteTable::inherit_health` would.
pub fn build_from(
    snapshot: &Snapshot,
    options: &BuildOptions,
    generation: u64,
    previous: Option<(&Snapshot, &RouteTable)>,
) -> RouteTable {
    let started = Instant::now();
    let shard_by = ShardBy::new(options.admission.allow_wildcard_routes);
    let previous = previous.map(|(before, table)| Previous::new(before, table, snapshot));
    let settings = &options.admission;
    let plan = previous
        .as_ref()
        .filter(|previous| previous.table.shard_by == shard_by)
        .and_then(|previous| Plan::incremental(&previous.table.shards, &previous.changes, settings, shard_by))
        .unwrap_or_else(|| Plan::full(snapshot, settings, shard_by));
    let slices = match previous.as_ref().filter(|previous| previous.table.slices.is_built()) {
        Some(previous) => {
            let changes = &previous.changes;
            previous.table.slices.updated(&changes.slices_before, &changes.slices_now)
        }
        None => SliceIndex::new(snapshot),
    };
    let planned_at = started.elapsed();
    let mut to_compile = Vec::new();
    let mut shards: Vec<Option<Arc<Shard>>> = Vec::with_capacity(SHARDS);
    for (at, job) in plan.jobs.into_iter().enumerate() {
        match job {
            Job::Keep(shard) => shards.push(Some(shard)),
            Job::Compile(members) => {
                shards.push(None);
                to_compile.push((at, members));
            }
        }
    }
    let inputs = Inputs { snapshot, options, slices: &slices, previous: previous.as_ref() };
    let shards_compiled = to_compile.len();
    let (mut compiled, mut certs_changed) = (0, previous.is_none());
    for (at, shard, routes_compiled) in compile_shards(&inputs, to_compile) {
        let before = previous.as_ref().and_then(|previous| previous.table.shards.get(at));
        certs_changed |= !before.is_some_and(|before| before.certs.same_as(&shard.certs));
        compiled += routes_compiled;
        shards[at] = Some(Arc::new(shard));
    }
    let shards: Vec<Arc<Shard>> = shards.into_iter().flatten().collect();
    let certs = match previous.as_ref().filter(|_| !certs_changed) {
        Some(previous) => previous.table.certs.clone(),
        None => options.tls.default_certificate.clone().map(|default| Arc::new(cert_store(default, &shards))),
    };
    options.tls.sweep();
    let ms = |elapsed: Duration| elapsed.as_secs_f64() * 1e3;
    tracing::debug!(
        generation,
        shards_compiled,
        compiled,
        plan_ms = ms(planned_at),
        shards_ms = ms(started.elapsed() - planned_at),
        "route table built"
    );
    RouteTable { generation, shard_by, shards, certs, slices }
}

/// What every shard's compile reads.
struct Inputs<'a> {
    snapshot: &'a Snapshot,
    options: &'a BuildOptions,
    slices: &'a SliceIndex,
    previous: Option<&'a Previous<'a>>,
}

/// Shards compiled on one thread per core when there are many (a first build, or a change to Namespaces,
/// Secrets or ConfigMaps: start-up at 100,000 routes), else on this one: (shard index, shard, routes compiled).
fn compile_shards(inputs: &Inputs<'_>, jobs: Vec<(usize, Vec<ObjectKey>)>) -> Vec<(usize, Shard, usize)> {
    let compile_on_this_thread = |jobs: Vec<(usize, Vec<ObjectKey>)>| {
        let index = EndpointIndex::new(inputs.snapshot, inputs.options.allow_loopback_endpoints, inputs.slices);
        let compile = |(at, members)| {
            let mut compiled = 0;
            let shard = compile_shard(inputs, members, &index, &mut compiled);
            (at, shard, compiled)
        };
        jobs.into_iter().map(compile).collect::<Vec<_>>()
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(jobs.len() / PARALLEL_FROM + 1);
    if threads <= 1 {
        return compile_on_this_thread(jobs);
    }
    let mut parts: Vec<Vec<(usize, Vec<ObjectKey>)>> = (0..threads).map(|_| Vec::new()).collect();
    for (n, job) in jobs.into_iter().enumerate() {
        parts[n % threads].push(job);
    }
    std::thread::scope(|scope| {
        let running: Vec<_> = parts.into_iter().map(|part| scope.spawn(move || compile_on_this_thread(part))).collect();
        running
            .into_iter()
            .flat_map(|thread| thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    })
}

/// Shards per extra thread: below this a build compiles on its own thread (a route change compiles one or two).
const PARALLEL_FROM: usize = 64;

/// Admits and compiles the routes of one shard (`members`, keys of `snapshot`'s routes).
fn compile_shard(
    inputs: &Inputs<'_>,
    mut members: Vec<ObjectKey>,
    index: &EndpointIndex<'_>,
    compiled: &mut usize,
) -> Shard {
    let Inputs { snapshot, options, previous, .. } = *inputs;
    members.sort_unstable();
    members.dedup();
    let routes: Vec<(&ObjectKey, &Route)> =
        members.iter().filter_map(|key| snapshot.routes.get(key).map(|route| (key, &**route))).collect();
    let services = routes
        .iter()
        .flat_map(|(key, route)| {
            let services = std::iter::once(&route.spec.to).chain(route.spec.alternate_backends.iter().take(3));
            services.map(|service| name_hash(&[&key.namespace, &service.name]))
        })
        .collect();
    let mut admission = admit_routes(snapshot, sort_oldest_first(routes), &options.admission);
    let mut shard = Shard::default();
    let mut certified_hosts = HashSet::new();

    for admitted in &admission.admitted {
        let (host, wildcard) = (admitted.host.as_str(), admitted.wildcard);
        // The extended validation runs last in OpenShift's chain: a route refused here has already claimed
        // its host.
        let tls = options.tls.route(admitted, snapshot).and_then(|tls| {
            let terminated = matches!(tls.termination, Some(Termination::Edge | Termination::Reencrypt));
            let domain = serves_subdomain(host, wildcard).then(|| wildcard_domain(host));
            match !terminated || shard.client_auth.claim(host, domain, &tls.client_auth) {
                true => Ok(tls),
                false => Err(Rejection::new(
                    CLIENT_TLS_VALIDATION_FAILED,
                    "an older route of this host asks for other client certificates (annotations \
                     router.openshift.io/client-tls-*): every edge or reencrypt route of a host must ask the same",
                )),
            }
        });
        let tls = match tls {
            Ok(tls) => tls,
            Err(rejection) => {
                if let Some(outcome) = admission.outcomes.iter_mut().find(|o| &o.key == admitted.key) {
                    outcome.result = Err(rejection);
                }
                continue;
            }
        };
        let certificate = tls.certificate.clone();
        let backend = match previous.and_then(|previous| previous.reusable(admitted, index, &tls)) {
            Some((backend, route_warnings)) => {
                shard.warnings.extend(route_warnings.iter().map(|w| (admitted.key.clone(), w.clone())));
                backend
            }
            None => {
                *compiled += 1;
                let tls_warning = tls.warning.clone();
                let (backend, route_warnings) = backend_for(admitted, index, &options.defaults, tls);
                let route_warnings = route_warnings.into_iter().chain(tls_warning);
                shard.warnings.extend(route_warnings.map(|w| (admitted.key.clone(), w)));
                if let Some(old) = previous.and_then(|previous| previous.backend_of(admitted)) {
                    backend.inherit_health(old);
                }
                Arc::new(backend)
            }
        };
        match backend.termination {
            Some(Termination::Passthrough) => shard.passthrough.insert(host, wildcard, backend.clone()),
            Some(Termination::Edge | Termination::Reencrypt) => {
                shard.https.insert(host, wildcard, backend.clone());
                // The oldest route of a host serves its certificate; every route carrying one counts as its user.
                if let Some(key) = certificate {
                    shard.certs.uses.push(key.clone());
                    let subdomain = serves_subdomain(host, wildcard);
                    if certified_hosts.insert((host.to_string(), subdomain)) {
                        match subdomain {
                            true => shard.certs.wildcard.push((wildcard_domain(host).to_string(), key)),
                            false => shard.certs.exact.push((host.to_string(), key)),
                        }
                    }
                }
            }
            None => {}
        }
        shard.http.insert(host, wildcard, backend);
    }
    for rules in [&mut shard.http, &mut shard.https, &mut shard.passthrough] {
        rules.sort();
    }
    let considered: HashSet<&ObjectKey> = admission.outcomes.iter().map(|outcome| &outcome.key).collect();
    let skipped = members.iter().filter(|key| !considered.contains(key) && snapshot.routes.contains_key(*key));
    shard.skipped = skipped.cloned().collect();
    shard.outcomes = admission.outcomes;
    // Sized to fit: a shard lives as long as no change touches it.
    shard.outcomes.shrink_to_fit();
    shard.warnings.shrink_to_fit();
    shard.services = services;
    shard
}

/// The certificates of every shard's hosts around `default`.
fn cert_store(default: Arc<CertifiedKey>, shards: &[Arc<Shard>]) -> CertStore {
    let mut store = CertStoreBuilder::new(default);
    for certs in shards.iter().map(|shard| &shard.certs) {
        certs.uses.iter().for_each(|key| store.count_use(key));
        for (host, key) in &certs.exact {
            store.insert_exact(host.as_str(), key.clone());
        }
        for (domain, key) in &certs.wildcard {
            store.insert_wildcard(domain.as_str(), key.clone());
        }
    }
    store.build()
}

/// The previous build's backends, and what changed since its snapshot, for `build_from`.
struct Previous<'p> {
    snapshot: &'p Snapshot,
    table: &'p RouteTable,
    changes: Changes<'p>,
    warnings: HashMap<&'p ObjectKey, Vec<String>>,
}

impl<'p> Previous<'p> {
    fn new(snapshot: &'p Snapshot, table: &'p RouteTable, now: &'p Snapshot) -> Self {
        let mut warnings: HashMap<&ObjectKey, Vec<String>> = HashMap::new();
        for (key, warning) in table.warnings() {
            warnings.entry(key).or_default().push(warning.clone());
        }
        Self { snapshot, table, changes: Changes::between(snapshot, now), warnings }
    }

    /// The previous backend of `admitted`'s route, wherever it was: under the same host, or (a route whose host
    /// changed, rare enough for a scan) under the host its previous outcome names.
    fn backend_of(&self, admitted: &Admitted<'_>) -> Option<&'p Arc<Backend>> {
        let key = admitted.key;
        if let Some(backend) = self.table.http().find(&admitted.host, admitted.wildcard, key) {
            return Some(backend);
        }
        if !self.snapshot.routes.contains_key(key) {
            return None;
        }
        let outcome = self.table.outcomes().find(|o| &o.key == key && o.result.is_ok())?;
        self.table.http().find(&outcome.host, outcome.wildcard_policy == "Subdomain", key)
    }

    /// The previous backend of `admitted` (and its warnings) when nothing it was compiled from has changed.
    fn reusable(
        &self,
        admitted: &Admitted<'_>,
        index: &EndpointIndex<'_>,
        tls: &RouteTls,
    ) -> Option<(Arc<Backend>, &[String])> {
        let (key, route) = (admitted.key, admitted.route);
        if self.changes.route_changed(route) {
            return None;
        }
        // The route is as it was, so its host is too; every admitted route is in `http`, under its host.
        let backend = self.table.http().find(&admitted.host, admitted.wildcard, key)?;
        let same_tls = backend.termination == tls.termination
            && match (&backend.reencrypt, &tls.reencrypt) {
                (None, None) => true,
                (Some(before), Some(now)) => Arc::ptr_eq(before, now),
                _ => false,
            }
            // By value: the check is built anew each time, and its ConfigMap may have changed.
            && backend.client_auth == tls.client_auth;
        let mut services = std::iter::once(&route.spec.to).chain(route.spec.alternate_backends.iter().take(3));
        if !same_tls || !services.all(|service| self.changes.same_endpoints(index, &key.namespace, &service.name)) {
            return None;
        }
        let warnings = self.warnings.get(key).map_or(&[][..], Vec::as_slice);
        Some((Arc::clone(backend), warnings))
    }
}

/// What :80 does with a route, from its TLS settings (admission already refused invalid combinations).
fn http_action(route: &Route) -> HttpAction {
    let Some(tls) = &route.spec.tls else { return HttpAction::Forward };
    match (tls.termination.as_str(), tls.insecure_edge_termination_policy.as_deref().unwrap_or("None")) {
        (_, "Redirect") => HttpAction::RedirectToHttps,
        ("edge", "Allow") => HttpAction::Forward,
        _ => HttpAction::NotOnHttp,
    }
}

fn backend_for(
    admitted: &Admitted<'_>,
    index: &EndpointIndex<'_>,
    defaults: &RouterDefaults,
    tls: RouteTls,
) -> (Backend, Vec<String>) {
    let (key, route) = (admitted.key, admitted.route);
    let target_port = route.spec.port.as_ref().map(|p| &p.target_port);
    let services: Vec<(i32, Vec<_>)> = std::iter::once(&route.spec.to)
        .chain(route.spec.alternate_backends.iter().take(3))
        .map(|service| {
            let found = index.ready(&ObjectKey::new(&key.namespace, &service.name), target_port);
            (service_weight(service.weight), found)
        })
        .collect();
    let weighted_services = services.iter().filter(|(weight, _)| *weight > 0).count();
    let (policy, warnings) = RoutePolicy::build(key, route, weighted_services, defaults);

    let counts: Vec<(i32, usize)> = services.iter().map(|(weight, found)| (*weight, found.len())).collect();
    let weights = endpoint_weights(&counts);
    let freed = Arc::new(Notify::new());
    let mut seen = HashSet::new();
    // Sized to fit: the table keeps it as long as the route is served.
    let mut endpoints = Vec::with_capacity(counts.iter().map(|(_, count)| count).sum());
    for ((_, found), weight) in services.into_iter().zip(weights) {
        for endpoint in found.into_iter().filter(|e| seen.insert(e.addr)) {
            endpoints.push(Endpoint {
                addr: endpoint.addr,
                cookie: CookieValue::of(&endpoint.id),
                id: Arc::from(endpoint.id),
                weight,
                health: EndpointHealth::default(),
                in_flight: InFlight::default(),
                slots: policy.pod_max_connections.map(|max| ConnectionSlots::new(max, freed.clone())),
                h2c: endpoint.h2c,
                proxy: CountersSlot::default(),
            });
        }
    }
    // An address in two services is served once.
    endpoints.shrink_to_fit();

    let prefix = match tls.termination {
        None => "be_http",
        Some(Termination::Edge) => "be_edge_http",
        Some(Termination::Reencrypt) => "be_secure",
        Some(Termination::Passthrough) => "be_tcp",
    };
    let backend = Backend {
        route: key.clone(),
        path: RoutePath::new(route.spec.path.as_deref()),
        conditions: route.spec.request_match.as_ref().map(|request_match| {
            let created = route.metadata.creation_timestamp.as_ref().map(|t| t.0);
            Box::new(Conditions::compile(request_match, route.spec.path.as_deref(), created))
        }),
        labels: BackendLabels {
            backend: format!("{prefix}:{}:{}", key.namespace, key.name).into(),
            namespace: key.namespace.as_str().into(),
            route: key.name.as_str().into(),
        },
        requests: RequestCounters::default(),
        action: http_action(route),
        termination: tls.termination,
        reencrypt: tls.reencrypt,
        client_auth: tls.client_auth,
        balancer: Balancer::new(policy.balance, &endpoints),
        limiter: policy.rate_limits.is_active().then(|| RateLimiter::new(policy.rate_limits)),
        endpoints,
        policy,
    };
    (backend, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(routes: &[(&str, &str)], slices: &[(&str, &str)]) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for (name, extra) in routes {
            let yaml = format!(
                "metadata: {{name: {name}, namespace: ns{extra}}}\nspec: {{host: {name}.example.com, to: {{kind: \
                 Service, name: {name}}}}}\n"
            );
            let route: Route = serde_saphyr::from_str(&yaml).expect("test route");
            snapshot.routes.insert(ObjectKey::new("ns", *name), Arc::new(route));
        }
        for (service, ip) in slices {
            let yaml = format!(
                "metadata: {{name: {service}-1, namespace: ns, labels: {{kubernetes.io/service-name: {service}}}}}\n\
                 addressType: IPv4\nports: [{{name: http, port: 8080, protocol: TCP}}]\n\
                 endpoints: [{{addresses: [\"{ip}\"]}}, {{addresses: [\"10.0.0.99\"]}}]\n"
            );
            let slice: k8s_openapi::api::discovery::v1::EndpointSlice =
                serde_saphyr::from_str(&yaml).expect("test slice");
            snapshot.endpoint_slices.insert(ObjectKey::new("ns", format!("{service}-1")), Arc::new(slice.into()));
        }
        snapshot
    }

    fn backend<'t>(table: &'t RouteTable, name: &str) -> &'t Arc<Backend> {
        table.lookup(&format!("{name}.example.com"), "/").unwrap_or_else(|| panic!("{name} is served"))
    }

    #[test]
    fn build_from_takes_over_exactly_the_unchanged_backends() {
        let options = BuildOptions { allow_loopback_endpoints: true, ..BuildOptions::default() };
        let bad = ", annotations: {haproxy.router.openshift.io/balance: nonsense}";
        let routes = [("a", ""), ("b", ""), ("c", bad), ("d", "")];
        let before = snapshot(&routes, &[("a", "10.0.0.1"), ("b", "10.0.0.2"), ("c", "10.0.0.3"), ("d", "10.0.0.4")]);
        let first = build(&before, &options, 1);
        let warnings: Vec<_> = first.warnings().collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");

        // b's endpoints change, d's route changes, e is new; a and c are as they were.
        let routes = [("a", ""), ("b", ""), ("c", bad), ("d", ", annotations: {x: y}"), ("e", "")];
        let slices = [("a", "10.0.0.1"), ("b", "10.0.0.22"), ("c", "10.0.0.3"), ("d", "10.0.0.4"), ("e", "10.0.0.5")];
        let after = snapshot(&routes, &slices);
        let next = build_from(&after, &options, 2, Some((&before, &first)));
        for (name, kept) in [("a", true), ("b", false), ("c", true), ("d", false)] {
            assert_eq!(Arc::ptr_eq(backend(&first, name), backend(&next, name)), kept, "{name}");
        }
        let fresh = build(&after, &options, 2);
        assert_eq!(
            next.warnings().collect::<Vec<_>>(),
            fresh.warnings().collect::<Vec<_>>(),
            "a kept route keeps its warnings"
        );
        for name in ["a", "b", "c", "d", "e"] {
            let (mine, theirs) = (backend(&next, name), backend(&fresh, name));
            let endpoints =
                |b: &Backend| b.endpoints.iter().map(|e| (e.addr, e.id.clone(), e.weight)).collect::<Vec<_>>();
            assert_eq!(endpoints(mine), endpoints(theirs), "{name}");
            assert_eq!(format!("{:?}", mine.policy), format!("{:?}", theirs.policy), "{name}");
        }
        let outcomes = |t: &RouteTable| t.outcomes().map(|o| (o.key.clone(), o.result.clone())).collect::<Vec<_>>();
        assert_eq!(outcomes(&next), outcomes(&fresh));
    }

    #[test]
    fn a_recompiled_backend_keeps_the_health_of_its_remaining_endpoints() {
        let options = BuildOptions { allow_loopback_endpoints: true, ..BuildOptions::default() };
        let before = snapshot(&[("a", "")], &[("a", "10.0.0.1")]);
        let first = build(&before, &options, 1);
        let down = |table: &RouteTable, addr: &str| {
            let endpoints = &backend(table, "a").endpoints;
            let endpoint = endpoints.iter().find(|e| e.addr.to_string() == addr).expect("endpoint");
            !endpoint.health.is_up()
        };
        let old = backend(&first, "a");
        old.endpoints.iter().for_each(|e| e.health.mark_down());

        // a's first endpoint changes; 10.0.0.99 stays.
        let after = snapshot(&[("a", "")], &[("a", "10.0.0.2")]);
        let next = build_from(&after, &options, 2, Some((&before, &first)));
        assert!(!Arc::ptr_eq(backend(&first, "a"), backend(&next, "a")), "recompiled");
        assert!(down(&next, "10.0.0.99:8080"), "the remaining endpoint is still down");
        assert!(!down(&next, "10.0.0.2:8080"), "the new endpoint starts up");
    }
}
