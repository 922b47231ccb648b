//! TLSRoutes as passthrough routes: one per hostname, named `<tlsroute>-tlsroute-<hostname>`, to the backends
//! of the first rule (the only one a route can hold; further rules are reported and not served). They attach
//! to `TLS` listeners in `Passthrough` mode only.

use kube::ResourceExt;

use super::super::gateway_api::TLSRoute;
use super::super::gateway_api::{Problem, RouteKind};
use super::attach::Attaching;
use super::backends::backends;
use super::listeners::GatewayListeners;
use super::parents::attach_to_parents;
use super::translation::{Draft, Translation};
use crate::model::{ObjectKey, Snapshot};

pub fn translate(route: &TLSRoute, gateways: &mut [GatewayListeners], snapshot: &Snapshot, out: &mut Translation) {
    let namespace = route.namespace().unwrap_or_default();
    let key = ObjectKey::new(&namespace, route.name_any());
    let mut unsupported = Vec::new();
    if route.spec.rules.len() > 1 {
        unsupported.push(Problem::new("UnsupportedValue", "only the first rule of a TLSRoute is served"));
    }
    let refs = route.spec.rules.first().map(|rule| rule.backend_refs.as_slice()).unwrap_or_default();
    let (chosen, unresolved) = backends(&namespace, refs, snapshot);
    let chosen = match chosen {
        Ok(chosen) => Some(chosen),
        Err(problem) => {
            unsupported.push(problem);
            None
        }
    };
    let labels = snapshot.namespaces.get(&namespace).and_then(|ns| ns.metadata.labels.as_ref());
    let attaching = Attaching {
        kind: RouteKind::TLSRoute,
        key: &key,
        generation: route.metadata.generation,
        parent_refs: &route.spec.parent_refs,
        namespace: &namespace,
        namespace_labels: labels,
        hostnames: &route.spec.hostnames,
    };
    attach_to_parents(&attaching, (&unresolved, &unsupported), gateways, out, |out, outcome, _, attachments| {
        let Some(chosen) = &chosen else { return };
        for host in attachments.iter().flat_map(|attachment| &attachment.hostnames) {
            let name = format!("{}-tlsroute-{}", key.name, host.replace('*', "wildcard"));
            let piece_key = ObjectKey::new(&namespace, name);
            out.drafts.entry(piece_key.clone()).or_insert_with(|| {
                Draft::passthrough(route, &piece_key, host, &chosen.to, &chosen.alternates, chosen.port.clone())
            });
            if !outcome.routes.contains(&piece_key) {
                outcome.routes.push(piece_key);
            }
        }
    });
}
