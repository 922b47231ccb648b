//! A route's parents, the same for every route kind: each of the router's Gateways its parentRefs name gets an
//! outcome (attached, or why not) that starts with the route's own problems, the kind's translation adds what
//! the attachments make, and the outcomes go into the report (a route naming none of the router's Gateways is
//! not this router's to report on).

use super::super::gateway_api::{ParentOutcome, Problem, RouteOutcome};
use super::attach::{attach, parent_gateway, Attaching, Attachment};
use super::listeners::GatewayListeners;
use super::translation::Translation;

/// Attaches `route` to each of the router's Gateways it names, with its `unresolved` backend references and the
/// `unsupported` parts of it on every attached parent, and reports the outcomes in `out`. `serve` makes the
/// routes of one parent's attachments: it gets the translation, the parent's outcome (to add routes and
/// problems to), the outcome's index among the route's reported parents, and the attachments.
pub fn attach_to_parents(
    route: &Attaching<'_>,
    (unresolved, unsupported): (&[Problem], &[Problem]),
    gateways: &mut [GatewayListeners],
    out: &mut Translation,
    mut serve: impl FnMut(&mut Translation, &mut ParentOutcome, usize, Vec<Attachment>),
) {
    let mut parents = Vec::new();
    for parent in route.parent_refs {
        let Some(gateway) = parent_gateway(route.namespace, parent, gateways) else { continue };
        let mut outcome = ParentOutcome::new(parent.clone(), Ok(()));
        match attach(route, parent, &mut gateways[gateway]) {
            Err(problem) => outcome.attached = Err(problem),
            Ok(attachments) => {
                outcome.unresolved = unresolved.to_vec();
                outcome.unsupported = unsupported.to_vec();
                serve(out, &mut outcome, parents.len(), attachments);
            }
        }
        parents.push(outcome);
    }
    if !parents.is_empty() {
        let outcome = RouteOutcome { generation: route.generation, parents };
        out.report.routes.insert((route.kind, route.key.clone()), outcome);
    }
}
