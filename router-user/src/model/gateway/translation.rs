//! The routes being made from Gateway API objects before they are final: one draft per route name (a
//! hostname, rule and match seen through several listeners or Gateways is one route), the redirects to https
//! that attach to drafts served on HTTPS, and the report.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};

use super::super::gateway_api::{GatewayReport, Problem, RouteKind};
use super::forward::{Forward, REWRITE_TARGET};
use super::matches::MatchPlan;
use crate::model::{ObjectKey, RequestConditions, RequestMatch, Route, RouteHttpHeaderActions, RouteHttpHeaders};
use crate::model::{RoutePort, RouteSpec, RouteTargetReference, TlsConfig};

#[derive(Default)]
pub struct Translation {
    pub drafts: BTreeMap<ObjectKey, Draft>,
    pub redirects: Vec<Redirect>,
    pub report: GatewayReport,
}

/// A route being made: its object with `tls` still unset, whether an HTTP listener serves it, and the
/// certificate of the HTTPS listener that serves it, if any.
pub struct Draft {
    pub route: Route,
    pub http: bool,
    pub https: Option<(String, String)>,
    pub passthrough: bool,
    pub redirect: bool,
}

/// A rule redirecting plain HTTP to https for a host and match, from parent `parent` of `route`.
pub struct Redirect {
    pub route: (RouteKind, ObjectKey),
    pub parent: usize,
    pub host: String,
    pub matched: MatchPlan,
}

impl Draft {
    /// A route for an HTTPRoute rule's match `at` (rule, match index) on `host`, with its path and conditions.
    pub fn http<K: Resource<DynamicType = ()>>(
        source: &K,
        key: &ObjectKey,
        host: &str,
        (path, request_match): (&str, Option<Arc<RequestMatch>>),
        forward: &Forward,
        at: (usize, usize),
    ) -> Self {
        let mut metadata = metadata(source, key, &format!("{}-{}-{host}", at.0, at.1));
        if let Some(target) = &forward.rewrite_target {
            metadata.annotations.get_or_insert_with(Default::default).insert(REWRITE_TARGET.into(), target.clone());
        }
        let headers =
            (!forward.request_headers.is_empty() || !forward.response_headers.is_empty()).then(|| RouteHttpHeaders {
                actions: Some(RouteHttpHeaderActions {
                    request: forward.request_headers.clone(),
                    response: forward.response_headers.clone(),
                }),
            });
        let mut spec = spec(host, &forward.backends.to, &forward.backends.alternates, forward.backends.port.clone());
        spec.path = Some(path.to_string());
        spec.http_headers = headers.map(Box::new);
        spec.request_match = request_match;
        spec.gateway_filters = (!forward.filters.is_empty()).then(|| Arc::new(forward.filters.clone()));
        Self {
            route: Route { metadata, spec, status: None },
            http: false,
            https: None,
            passthrough: false,
            redirect: false,
        }
    }

    /// A passthrough route for a TLSRoute on `host`.
    pub fn passthrough<K: Resource<DynamicType = ()>>(
        source: &K,
        key: &ObjectKey,
        host: &str,
        to: &RouteTargetReference,
        alternates: &[RouteTargetReference],
        port: Option<RoutePort>,
    ) -> Self {
        let metadata = metadata(source, key, host);
        let spec = spec(host, to, alternates, port);
        Self {
            route: Route { metadata, spec, status: None },
            http: false,
            https: None,
            passthrough: true,
            redirect: false,
        }
    }

    /// The finished route: plain HTTP; edge with the listener's certificate (HTTP allowed when an HTTP listener
    /// serves it too, redirected when a redirect rule asks); or passthrough.
    pub fn finish(mut self) -> Route {
        let tls = |termination: &str| TlsConfig { termination: termination.into(), ..TlsConfig::default() };
        self.route.spec.tls = match (self.passthrough, self.https) {
            (true, _) => Some(tls("passthrough")),
            (false, Some((certificate, key))) => Some(TlsConfig {
                certificate: Some(certificate.into()),
                key: Some(key.into()),
                insecure_edge_termination_policy: Some(
                    match (self.redirect, self.http) {
                        (true, _) => "Redirect",
                        (false, true) => "Allow",
                        (false, false) => "None",
                    }
                    .into(),
                ),
                ..tls("edge")
            }),
            (false, None) => None,
        }
        .map(Box::new);
        self.route
    }
}

impl Translation {
    /// Attaches each redirect to the draft its host, path and conditions are served by on HTTPS; a redirect
    /// without one is reported on its parent.
    pub fn attach_redirects(&mut self) {
        for redirect in std::mem::take(&mut self.redirects) {
            let target = self.drafts.iter_mut().find(|(_, draft)| {
                let spec = &draft.route.spec;
                let conditions = spec.request_match.as_ref().map(|m| &m.conditions);
                draft.https.is_some()
                    && spec.path.as_deref() == Some(redirect.matched.path.as_str())
                    && conditions.unwrap_or(&RequestConditions::default()) == &redirect.matched.conditions
                    && spec.host.as_deref() == Some(&*route_host(&redirect.host).0)
            });
            let Some(parent) = self
                .report
                .routes
                .get_mut(&redirect.route)
                .and_then(|outcome| outcome.parents.get_mut(redirect.parent))
            else {
                continue;
            };
            match target {
                Some((key, draft)) => {
                    draft.redirect = true;
                    if !parent.routes.contains(key) {
                        parent.routes.push(key.clone());
                    }
                }
                None => {
                    let message = format!(
                        "the redirect to https of {}{} is served only where an HTTPS listener serves the same host and match",
                        redirect.host, redirect.matched.path
                    );
                    let problem = Problem::new("UnsupportedValue", message);
                    if !parent.unsupported.contains(&problem) {
                        parent.unsupported.push(problem);
                    }
                }
            }
        }
    }
}

/// The route host and wildcard policy of a Gateway API hostname (`*.example.com` becomes
/// `wildcard.example.com` with `Subdomain`, as for Ingresses).
pub fn route_host(host: &str) -> (String, &'static str) {
    match host.strip_prefix("*.") {
        Some(domain) => (format!("wildcard.{domain}"), "Subdomain"),
        None => (host.to_string(), "None"),
    }
}

fn spec(
    host: &str,
    to: &RouteTargetReference,
    alternates: &[RouteTargetReference],
    port: Option<RoutePort>,
) -> RouteSpec {
    let (host, wildcard_policy) = route_host(host);
    RouteSpec {
        host: Some(host),
        to: to.clone(),
        alternate_backends: alternates.to_vec(),
        port,
        wildcard_policy: Some(wildcard_policy.into()),
        ..RouteSpec::default()
    }
}

/// The route's metadata: the source object's labels, annotations, creation time (admission's age) and a UID
/// made unique with `suffix`, owned by the source object.
fn metadata<K: Resource<DynamicType = ()>>(source: &K, key: &ObjectKey, suffix: &str) -> ObjectMeta {
    let meta = source.meta();
    ObjectMeta {
        name: Some(key.name.clone()),
        namespace: Some(key.namespace.clone()),
        labels: meta.labels.clone(),
        annotations: meta.annotations.clone(),
        creation_timestamp: meta.creation_timestamp.clone(),
        uid: meta.uid.as_ref().map(|uid| format!("{uid}-{suffix}")),
        owner_references: meta.uid.as_ref().map(|uid| {
            vec![OwnerReference {
                api_version: K::api_version(&()).into_owned(),
                kind: K::kind(&()).into_owned(),
                name: source.name_any(),
                uid: uid.clone(),
                controller: Some(true),
                ..OwnerReference::default()
            }]
        }),
        ..ObjectMeta::default()
    }
}
