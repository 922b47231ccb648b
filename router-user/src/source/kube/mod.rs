//! The Kubernetes source: reflectors on Routes, Services, EndpointSlices (v1, or v1beta1 on servers before
//! 1.21) or core Endpoints (`ROUTER_WATCH_ENDPOINTS`), Namespaces, TLS Secrets, ConfigMaps (routes' client
//! certificate CA bundles) and Ingresses; the whole state
//! is sent to the publisher as one `SourceUpdate` after the initial sync and after each burst of changes, and
//! route status is written from each published table.
//!
//! - `client`: the client, from a kubeconfig or the pod's service account.
//! - `preflight`: which EndpointSlice version is served; RBAC denial reported at start; an unreachable API
//!   server retried with backoff.
//! - `reflect`: one list+watch reflector per resource, with backoff (`backoff`), signalling changes.
//! - `decoded`: objects decoded one at a time, so one that does not decode cannot fail a whole list or watch.
//! - `sieve`: what a reflector stores; undecodable and unusable objects are left out and reported once.
//! - `skipped`: the objects left out now (shown on `/debug/skipped`).
//! - `kept`: what a store holds of a Service, EndpointSlice or core Endpoints (the part the router reads).
//! - `stores`: the reflector stores and the `Snapshot` built from them.
//! - `endpointslice_v1beta1`: the v1beta1 EndpointSlice type and its conversion to v1.
//! - `batch`: coalescing changes into snapshots.
//! - `secret_access`: whether the router may read each `externalCertificate` Secret (SelfSubjectAccessReview).
//! - `status`: writing this router's `status.ingress[]` entry.
//! - `per_table`: the feed of tables (and retries a second later) both status writers run on.
//! - `gateway_status`: writing Gateway API status (Gateways of `ROUTER_GATEWAY_CLASS`, their routes' parents).
//!
//! Ingresses go into the snapshot as objects; `model::add_ingress_routes` makes their routes, as for manifests.
//! With `ROUTER_GATEWAY_CLASS` set, Gateways, HTTPRoutes and (when served) TLSRoutes are watched too, and
//! `model::add_gateway_routes` makes theirs.

mod backoff;
mod batch;
mod client;
mod decoded;
mod endpointslice_v1beta1;
mod error;
mod gateway_status;
#[cfg(test)]
mod ingress_tests;
mod kept;
mod per_table;
mod preflight;
mod reflect;
mod secret_access;
mod sieve;
mod skipped;
mod status;
mod stores;

use std::fmt::Debug;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::runtime::reflector::{Lookup, Store};
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;
use tracing::info;

pub use endpointslice_v1beta1::EndpointSliceV1beta1;
pub use error::KubeError;
pub use gateway_status::CONTROLLER_NAME;
pub use skipped::{SkippedObject, SkippedObjects};
pub use status::desired_entry;

use self::decoded::Decoded;
use self::kept::Kept;
use self::reflect::{reflect, without_bookkeeping, Watched};
use self::sieve::Usability;
use self::stores::{
    config_map_relevance, gateway_relevance, http_route_relevance, route_relevance, tls_route_relevance, GatewayStores,
    SliceStore, Stores,
};
use crate::metrics::Metrics;
use crate::model::{unusable_address_type, ObjectKey, Route, StoredEndpoints, StoredService, StoredSlice};
use crate::source::SourceUpdate;
use crate::table::RouteTable;

/// How the Kubernetes source connects and behaves.
#[derive(Clone, Debug)]
pub struct KubeOptions {
    /// A kubeconfig file; `None` uses the pod's service account.
    pub kubeconfig: Option<PathBuf>,
    /// `RELOAD_INTERVAL`: the longest a burst of changes is batched before a rebuild.
    pub reload_interval: Duration,
    /// `ROUTER_WATCH_ENDPOINTS`: core Endpoints instead of EndpointSlices.
    pub watch_endpoints: bool,
    /// `ROUTER_UPDATE_STATUS`.
    pub update_status: bool,
    /// `ROUTER_SERVICE_NAME`: this router's name in route status.
    pub router_name: String,
    /// `ROUTER_CANONICAL_HOSTNAME`.
    pub canonical_hostname: Option<String>,
    /// `ROUTER_GATEWAY_CLASS`: empty, the Gateway API is not watched.
    pub gateway_class: String,
}

type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Starts reflectors that share one client, one change signal, the record of skipped objects and the metrics,
/// and collects their futures.
struct Reflectors {
    client: Client,
    changes: Arc<Notify>,
    skipped: Arc<SkippedObjects>,
    metrics: Arc<Metrics>,
    tasks: Vec<Task>,
}

impl Reflectors {
    fn watch<K, S>(&mut self, watched: Watched<K, S>) -> Store<S>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        S: Lookup<DynamicType = ()> + Clone + Send + Sync + 'static,
    {
        let api = Api::<Decoded<K>>::all(self.client.clone());
        let (store, task) = reflect(api, watched, self.changes.clone(), self.skipped.clone(), self.metrics.clone());
        self.tasks.push(Box::pin(task));
        store
    }
}

/// A reflector's settings: every object of `resource`, each update a change, every decoded object usable and
/// kept whole but for its bookkeeping.
fn all<K: Resource>(resource: &'static str) -> Watched<K, K> {
    Watched {
        resource,
        config: watcher::Config::default(),
        relevance: None,
        usability: None,
        keep: without_bookkeeping,
        quiet_updates: None,
    }
}

/// Every object of `resource`, each update a change, stored as the part the router reads (`T`).
fn kept<K: Resource, T: From<K>>(resource: &'static str) -> Watched<K, Kept<K, T>> {
    Watched {
        resource,
        config: watcher::Config::default(),
        relevance: None,
        usability: None,
        keep: Kept::keep,
        quiet_updates: None,
    }
}

/// EndpointSlices, those whose `addressType` gives no backends left out (and reported), stored as the part
/// the router reads.
fn slices<K: Resource>(
    usability: Usability<K>,
    keep: fn(K) -> Kept<K, StoredSlice>,
) -> Watched<K, Kept<K, StoredSlice>> {
    let config = watcher::Config::default();
    Watched {
        resource: "endpointslices",
        config,
        relevance: None,
        usability: Some(usability),
        keep,
        quiet_updates: None,
    }
}

/// A v1beta1 EndpointSlice as the store keeps it: converted to v1 first.
fn keep_v1beta1(slice: EndpointSliceV1beta1) -> Kept<EndpointSliceV1beta1, StoredSlice> {
    let key = ObjectKey::new(ResourceExt::namespace(&slice).unwrap_or_default(), slice.name_any());
    Kept::new(key, slice.into_v1().into())
}

fn slice_v1_usability(slice: &EndpointSlice) -> Option<String> {
    unusable_address_type(&slice.address_type)
}

fn slice_v1beta1_usability(slice: &EndpointSliceV1beta1) -> Option<String> {
    unusable_address_type(&slice.address_type)
}

/// The longest the first access check may take before `start` returns and the checks go on in the background.
const FIRST_CHECK_LIMIT: Duration = Duration::from_secs(10);

/// Connects, checks access, and starts the reflectors, the batcher and the status writer in one task (aborting
/// it stops them all). Snapshots go to `updates`; status is written from the tables published on `tables`;
/// objects left out (undecodable, or slices that give no backends) are recorded in `skipped`.
///
/// RBAC denial, a missing CRD or a bad kubeconfig fail here. An API server that cannot be reached does not:
/// the task retries with backoff, and no snapshot (so no table, so no readiness) comes before the first sync.
pub async fn start(
    options: &KubeOptions,
    updates: mpsc::Sender<SourceUpdate>,
    tables: watch::Receiver<Arc<RouteTable>>,
    skipped: Arc<SkippedObjects>,
    metrics: Arc<Metrics>,
) -> Result<JoinHandle<()>, KubeError> {
    let client = client::connect(options.kubeconfig.as_deref()).await?;
    let gateway_api = !options.gateway_class.is_empty();
    let first = preflight::check(&client, options.watch_endpoints, gateway_api);
    let first = match tokio::time::timeout(FIRST_CHECK_LIMIT, first).await {
        Ok(Ok(served)) => Ok(served),
        Ok(Err(error)) if !error.is_transient() => return Err(error),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(KubeError::Unanswered { after: FIRST_CHECK_LIMIT }),
    };
    let options = options.clone();
    Ok(tokio::spawn(async move {
        let served = match first {
            Ok(served) => served,
            Err(error) => preflight::until_passed(&client, options.watch_endpoints, gateway_api, error).await,
        };
        run(client, &options, served, updates, tables, skipped, metrics).await;
    }))
}

/// Runs the reflectors, the batcher and the status writer until they end (the publisher goes away).
async fn run(
    client: Client,
    options: &KubeOptions,
    served: preflight::Served,
    updates: mpsc::Sender<SourceUpdate>,
    tables: watch::Receiver<Arc<RouteTable>>,
    skipped: Arc<SkippedObjects>,
    metrics: Arc<Metrics>,
) {
    let slices_v1 = served.slices_v1;
    let changes = Arc::new(Notify::new());
    let mut reflectors = Reflectors {
        client: client.clone(),
        changes: changes.clone(),
        skipped,
        metrics: metrics.clone(),
        tasks: Vec::new(),
    };
    // Status-only changes of routes reach the status writer (another writer may have changed our entry).
    let (quiet_updates, quiet_route_updates) = mpsc::unbounded_channel();
    let quiet_updates = options.update_status.then_some(quiet_updates);
    let routes =
        reflectors.watch(Watched { relevance: Some(route_relevance), quiet_updates, ..all::<Route>("routes") });
    let services = reflectors.watch(kept::<Service, StoredService>("services"));
    let slices = match (options.watch_endpoints, slices_v1) {
        (true, _) => SliceStore::Off,
        (false, true) => SliceStore::V1(reflectors.watch(slices(slice_v1_usability, Kept::keep))),
        (false, false) => SliceStore::V1beta1(reflectors.watch(slices(slice_v1beta1_usability, keep_v1beta1))),
    };
    let endpoints = options.watch_endpoints.then(|| reflectors.watch(kept::<Endpoints, StoredEndpoints>("endpoints")));
    let namespaces = reflectors.watch(all::<Namespace>("namespaces"));
    let tls_only = watcher::Config::default().fields("type=kubernetes.io/tls");
    let secrets = reflectors.watch(Watched { config: tls_only, ..all::<Secret>("secrets") });
    let config_maps =
        reflectors.watch(Watched { relevance: Some(config_map_relevance), ..all::<ConfigMap>("configmaps") });
    let ingresses = reflectors.watch(all::<Ingress>("ingresses"));
    let gateway = (!options.gateway_class.is_empty()).then(|| GatewayStores {
        class: options.gateway_class.clone(),
        gateways: reflectors.watch(Watched { relevance: Some(gateway_relevance), ..all("gateways") }),
        http_routes: reflectors.watch(Watched { relevance: Some(http_route_relevance), ..all("httproutes") }),
        tls_routes: served
            .tls_routes
            .then(|| reflectors.watch(Watched { relevance: Some(tls_route_relevance), ..all("tlsroutes") })),
    });
    let mut tasks = reflectors.tasks;

    let stores = Stores { routes, services, slices, endpoints, namespaces, secrets, config_maps, ingresses, gateway };
    if options.update_status && stores.gateway.is_some() {
        let writer = gateway_status::GatewayStatusWriter {
            client: client.clone(),
            stores: stores.clone(),
            written: Default::default(),
        };
        tasks.push(Box::pin(writer.run(tables.clone())));
    }
    if options.update_status {
        let writer = status::StatusWriter {
            client: client.clone(),
            routes: stores.routes.clone(),
            router_name: options.router_name.clone(),
            canonical_hostname: options.canonical_hostname.clone(),
            metrics: metrics.clone(),
            quiet_updates: quiet_route_updates,
        };
        tasks.push(Box::pin(writer.run(tables)));
    }
    let access = secret_access::SecretAccess::new(client);
    tasks.push(Box::pin(batch::run(stores, access, changes, options.reload_interval, updates)));
    let endpoints_api = match (options.watch_endpoints, slices_v1) {
        (true, _) => "core/v1 Endpoints",
        (false, true) => "EndpointSlice v1",
        (false, false) => "EndpointSlice v1beta1",
    };
    info!(
        endpoints = endpoints_api,
        status = options.update_status,
        router_name = %options.router_name,
        "Kubernetes source started"
    );
    futures_util::future::join_all(tasks).await;
}

/// A client for `kubeconfig` (tests and tools use it to talk to the same server as the router).
pub async fn connect(kubeconfig: Option<&std::path::Path>) -> Result<Client, KubeError> {
    client::connect(kubeconfig).await
}
