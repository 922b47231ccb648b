//! The Gateway API step of every snapshot: Gateways of the router's class (`ROUTER_GATEWAY_CLASS`), and the
//! HTTPRoutes and TLSRoutes attached to their listeners, become routes of the same table as Route objects and
//! Ingresses, so one admission (oldest first) decides between all of them. What the step could not serve, and
//! why, goes into `Snapshot::gateway_report` for status.
//!
//! - `forward`: what a served HTTPRoute rule does with a request.
//! - `listeners`: which listeners are served (HTTP :80, HTTPS :443 terminating, TLS :443 passthrough).
//! - `attach`: parentRefs to listeners, hostname intersection.
//! - `parents`: a route's outcome per parent Gateway, the same for every route kind.
//! - `backends`: backendRefs as `to` and `alternateBackends`.
//! - `matches`: an HTTPRoute match as a route path and the conditions carried beside it.
//! - `http`, `tls`: HTTPRoutes and TLSRoutes as routes.
//! - `translation`: the routes being made, and how they are finished.
//!
//! The types (objects read, the report status is written from) are in `model::gateway_api`, re-exported here.

mod attach;
mod backends;
mod forward;
mod http;
mod listeners;
mod matches;
mod parents;
mod tls;
mod translation;

use std::sync::Arc;

use kube::ResourceExt;

pub use super::gateway_api::*;

use super::object_key::ObjectKey;
use super::snapshot::Snapshot;
use translation::Translation;

/// Adds the routes of the Gateway API objects of `snapshot` attached to Gateways of class `class` (none when
/// `class` is empty) and sets `snapshot.gateway_report`. A Route object of the same name keeps its place.
pub fn add_gateway_routes(snapshot: &mut Snapshot, class: &str) {
    if class.is_empty() || snapshot.gateways.is_empty() {
        snapshot.gateway_report = Arc::default();
        return;
    }
    let translation = translate(snapshot, class);
    for (key, draft) in translation.drafts {
        if !snapshot.routes.contains_key(&key) {
            snapshot.routes.insert(key, Arc::new(draft.finish()));
        }
    }
    snapshot.gateway_report = Arc::new(translation.report);
}

fn translate(snapshot: &Snapshot, class: &str) -> Translation {
    let mut gateways: Vec<listeners::GatewayListeners> = snapshot
        .gateways
        .values()
        .filter(|gateway| gateway.spec.gateway_class_name == class)
        .map(|gateway| listeners::evaluate(gateway, snapshot))
        .collect();
    let mut out = Translation::default();
    for route in snapshot.http_routes.values() {
        http::translate(route, &mut gateways, snapshot, &mut out);
    }
    for route in snapshot.tls_routes.values() {
        tls::translate(route, &mut gateways, snapshot, &mut out);
    }
    out.attach_redirects();
    for (gateway, evaluated) in snapshot.gateways.values().filter(|g| g.spec.gateway_class_name == class).zip(gateways)
    {
        let key = ObjectKey::new(gateway.namespace().unwrap_or_default(), gateway.name_any());
        let outcome = GatewayOutcome { generation: gateway.metadata.generation, listeners: evaluated.outcomes };
        out.report.gateways.insert(key, outcome);
    }
    out
}

#[cfg(test)]
mod tests;
