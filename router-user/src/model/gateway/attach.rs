//! Route attachment: which served listeners of which Gateways a route's `parentRefs` reach (by `sectionName`
//! and `port`, the listener's allowed kinds and namespaces), and the hostnames the route gets on each (its
//! `hostnames` intersected with the listener's `hostname`; `*.` wildcards on either side).

use std::collections::BTreeMap;

use super::super::gateway_api::{ParentReference, GROUP};
use super::super::gateway_api::{Problem, RouteKind};
use super::listeners::{GatewayListeners, Namespaces, Served};
use crate::model::ObjectKey;

/// A route on one served listener, with the hostnames it is served under there.
pub struct Attachment {
    pub listener: Served,
    pub hostnames: Vec<String>,
}

/// The route being attached.
pub struct Attaching<'a> {
    pub kind: RouteKind,
    pub key: &'a ObjectKey,
    /// `metadata.generation`, reported as each parent's `observedGeneration`.
    pub generation: Option<i64>,
    pub parent_refs: &'a [ParentReference],
    pub namespace: &'a str,
    /// Labels of the route's namespace (for `Selector` listeners).
    pub namespace_labels: Option<&'a BTreeMap<String, String>>,
    pub hostnames: &'a [String],
}

/// The index in `gateways` of the Gateway a parentRef names, when it is one of the router's: `None` for
/// references to other kinds or to Gateways that are not (their status belongs to another controller).
pub fn parent_gateway(route_namespace: &str, parent: &ParentReference, gateways: &[GatewayListeners]) -> Option<usize> {
    let group_ok = parent.group.as_deref().is_none_or(|g| g == GROUP);
    let kind_ok = parent.kind.as_deref().is_none_or(|k| k == "Gateway");
    if !group_ok || !kind_ok {
        return None;
    }
    let key = ObjectKey::new(parent.namespace.as_deref().unwrap_or(route_namespace), &parent.name);
    gateways.iter().position(|gateway| gateway.key == key)
}

/// The listeners of `gateway` that take the route through `parent`; `Err` says why none does. Counts each
/// attachment in the listener's outcome.
pub fn attach(
    route: &Attaching<'_>,
    parent: &ParentReference,
    gateway: &mut GatewayListeners,
) -> Result<Vec<Attachment>, Problem> {
    let mut named = false;
    let mut allowed = false;
    let mut attached_indexes = Vec::new();
    let mut hostnames_by_listener = Vec::new();
    for (index, served) in gateway.served.iter().enumerate() {
        let name = &gateway.outcomes[index].name;
        if parent.section_name.as_deref().is_some_and(|section| section != name) {
            continue;
        }
        let listener_port = served.as_ref().map(|s| s.port);
        if parent.port.is_some() && parent.port != listener_port {
            continue;
        }
        named = true;
        let Some(served) = served else { continue };
        if !served.kinds.contains(&route.kind) || !namespace_allowed(&served.namespaces, route, &gateway.key) {
            continue;
        }
        allowed = true;
        let hostnames = intersect(served.hostname.as_deref(), route.hostnames);
        if hostnames.is_empty() {
            continue;
        }
        attached_indexes.push(index);
        hostnames_by_listener.push(hostnames);
    }
    if !named {
        return Err(Problem::new("NoMatchingParent", "no listener of the Gateway matches sectionName and port"));
    }
    if !allowed {
        return Err(Problem::new(
            "NotAllowedByListeners",
            format!("no served listener takes a {} from namespace {}", route.kind.name(), route.namespace),
        ));
    }
    if attached_indexes.is_empty() {
        return Err(Problem::new("NoMatchingListenerHostname", "no hostname of the route matches a listener's"));
    }
    for &index in &attached_indexes {
        gateway.outcomes[index].attached_routes += 1;
    }
    let served = &gateway.served;
    Ok(attached_indexes
        .into_iter()
        .zip(hostnames_by_listener)
        .filter_map(|(index, hostnames)| Some(Attachment { listener: served[index].clone()?, hostnames }))
        .collect())
}

fn namespace_allowed(namespaces: &Namespaces, route: &Attaching<'_>, gateway: &ObjectKey) -> bool {
    match namespaces {
        Namespaces::Same => route.namespace == gateway.namespace,
        Namespaces::All => true,
        Namespaces::Labels(wanted) => {
            let labels = route.namespace_labels;
            wanted.iter().all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
        }
    }
}

/// The hostnames a route gets on a listener. A listener without a hostname takes the route's as they are; a
/// route without hostnames takes the listener's; otherwise each pair that overlaps gives the narrower name.
/// Empty when nothing overlaps, and when neither side names a host (a catch-all the router cannot serve).
pub fn intersect(listener: Option<&str>, route: &[String]) -> Vec<String> {
    let route: Vec<String> = route.iter().map(|h| h.to_ascii_lowercase()).collect();
    let mut hostnames: Vec<String> = match listener {
        None => route,
        Some(listener) if route.is_empty() => vec![listener.to_string()],
        Some(listener) => route.iter().filter_map(|host| narrower(listener, host)).collect(),
    };
    hostnames.dedup();
    hostnames
}

/// The narrower of two hostnames when one covers the other (`*.example.com` covers `a.example.com` and
/// `*.a.example.com`, as in the Gateway API: any number of labels).
fn narrower(a: &str, b: &str) -> Option<String> {
    if a == b {
        return Some(a.to_string());
    }
    if covers(a, b) {
        Some(b.to_string())
    } else if covers(b, a) {
        Some(a.to_string())
    } else {
        None
    }
}

fn covers(wildcard: &str, host: &str) -> bool {
    let Some(domain) = wildcard.strip_prefix("*.") else { return false };
    let host = host.strip_prefix("*.").unwrap_or(host);
    host.len() > domain.len() && host.ends_with(domain) && host[..host.len() - domain.len()].ends_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_intersect_as_the_gateway_api_says() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(intersect(None, &names(&["A.example.com"])), ["a.example.com"]);
        assert_eq!(intersect(Some("a.example.com"), &[]), ["a.example.com"]);
        assert!(intersect(None, &[]).is_empty(), "a catch-all is not served");
        assert_eq!(
            intersect(
                Some("*.example.com"),
                &names(&["a.example.com", "x.b.example.com", "other.org", "example.com", "badexample.com"])
            ),
            ["a.example.com", "x.b.example.com"]
        );
        assert_eq!(intersect(Some("a.example.com"), &names(&["*.example.com"])), ["a.example.com"]);
        assert_eq!(intersect(Some("*.example.com"), &names(&["*.a.example.com"])), ["*.a.example.com"]);
        assert!(intersect(Some("a.example.com"), &names(&["b.example.com"])).is_empty());
    }
}
