//! HTTPRoutes as routes: one route per hostname, rule and match, named `<httproute>-httproute-<rule>-<match>-
//! <hostname>`. What a route can express is served: the matches of `matches` (path prefixes, and exact paths,
//! methods, headers and query parameters as conditions the route carries), backends with weights, the
//! `RequestHeaderModifier` and `ResponseHeaderModifier` filters' `set` and `remove` (as `httpHeaders.actions`)
//! and `add` (carried beside the route), `URLRewrite` with `ReplacePrefixMatch` (as `rewrite-target`) or
//! `ReplaceFullPath` (carried beside the route) and a `RequestRedirect` to https on an HTTP
//! listener (as `insecureEdgeTerminationPolicy: Redirect` of the same host, path and conditions on an HTTPS
//! listener). A match the router cannot express (a regular-expression path) is left out; a rule with a filter it
//! cannot express is left out whole; each is reported.

use std::sync::Arc;

use kube::ResourceExt;

use super::super::gateway_api::{HTTPRoute, HTTPRouteFilter, HTTPRouteMatch, HTTPRouteRule, HeaderModifier};
use super::super::gateway_api::{Problem, RouteKind};
use super::attach::Attaching;
use super::backends::{backends, Backends};
use super::forward::Forward;
use super::listeners::{Carrier, GatewayListeners};
use super::matches::{plan_match, MatchPlan};
use super::parents::attach_to_parents;
use super::translation::{Draft, Redirect, Translation};
use crate::model::{GatewayFilters, MatchOrigin, ObjectKey, RequestMatch, Snapshot};
use crate::model::{RouteHttpHeader, RouteHttpHeaderAction, RouteSetHttpHeader};

/// What a served rule does.
enum Action {
    Forward(Box<Forward>),
    RedirectToHttps,
}

/// A rule as the router serves it: its matches (by match index) and its action.
struct RulePlan {
    matches: Vec<(usize, MatchPlan)>,
    action: Action,
}

pub fn translate(route: &HTTPRoute, gateways: &mut [GatewayListeners], snapshot: &Snapshot, out: &mut Translation) {
    let namespace = route.namespace().unwrap_or_default();
    let key = ObjectKey::new(&namespace, route.name_any());
    let (mut unresolved, mut unsupported) = (Vec::new(), Vec::new());
    let plans: Vec<Option<RulePlan>> = route
        .spec
        .rules
        .iter()
        .enumerate()
        .map(|(index, rule)| plan(index, rule, &namespace, snapshot, &mut unresolved, &mut unsupported))
        .collect();
    let labels = snapshot.namespaces.get(&namespace).and_then(|ns| ns.metadata.labels.as_ref());
    let attaching = Attaching {
        kind: RouteKind::HTTPRoute,
        key: &key,
        generation: route.metadata.generation,
        parent_refs: &route.spec.parent_refs,
        namespace: &namespace,
        namespace_labels: labels,
        hostnames: &route.spec.hostnames,
    };
    attach_to_parents(&attaching, (&unresolved, &unsupported), gateways, out, |out, outcome, parent, attachments| {
        for attachment in attachments {
            for host in &attachment.hostnames {
                for (rule, plan) in plans.iter().enumerate() {
                    let Some(plan) = plan else { continue };
                    for (index, matched) in &plan.matches {
                        let name = format!("{}-httproute-{rule}-{index}-{}", key.name, host.replace('*', "wildcard"));
                        let piece_key = ObjectKey::new(&namespace, name);
                        match (&plan.action, &attachment.listener.carrier) {
                            (Action::Forward(forward), carrier) => {
                                let draft = out.drafts.entry(piece_key.clone()).or_insert_with(|| {
                                    let origin = MatchOrigin {
                                        namespace: namespace.clone(),
                                        name: key.name.clone(),
                                        rule,
                                        index: *index,
                                    };
                                    let conditions = &matched.conditions;
                                    let request_match = (!conditions.is_empty())
                                        .then(|| Arc::new(RequestMatch { conditions: conditions.clone(), origin }));
                                    let path = (matched.path.as_str(), request_match);
                                    Draft::http(route, &piece_key, host, path, forward, (rule, *index))
                                });
                                match carrier {
                                    Carrier::Https { certificate, key } if draft.https.is_none() => {
                                        draft.https = Some((certificate.clone(), key.clone()));
                                    }
                                    Carrier::Https { .. } => {}
                                    _ => draft.http = true,
                                }
                                if !outcome.routes.contains(&piece_key) {
                                    outcome.routes.push(piece_key);
                                }
                            }
                            (Action::RedirectToHttps, Carrier::Http) => out.redirects.push(Redirect {
                                route: (RouteKind::HTTPRoute, key.clone()),
                                parent,
                                host: host.clone(),
                                matched: matched.clone(),
                            }),
                            (Action::RedirectToHttps, _) => push_once(
                                &mut outcome.unsupported,
                                Problem::new(
                                    "UnsupportedValue",
                                    format!("rule {rule}: a redirect to https on an HTTPS listener"),
                                ),
                            ),
                        }
                    }
                }
            }
        }
    });
}

fn push_once(problems: &mut Vec<Problem>, problem: Problem) {
    if !problems.contains(&problem) {
        problems.push(problem);
    }
}

/// The served form of rule `index`, or `None` (reported in `unsupported`) when it cannot be served.
fn plan(
    index: usize,
    rule: &HTTPRouteRule,
    namespace: &str,
    snapshot: &Snapshot,
    unresolved: &mut Vec<Problem>,
    unsupported: &mut Vec<Problem>,
) -> Option<RulePlan> {
    let refuse = |unsupported: &mut Vec<Problem>, message: String| {
        unsupported.push(Problem::new("UnsupportedValue", format!("rule {index}: {message}")));
        None
    };
    let default_match = [HTTPRouteMatch::default()];
    let matches = if rule.matches.is_empty() { &default_match[..] } else { &rule.matches };
    let mut served = Vec::new();
    for (match_index, one) in matches.iter().enumerate() {
        match plan_match(one) {
            Ok(matched) => served.push((match_index, matched)),
            Err(what) => {
                unsupported.push(Problem::new("UnsupportedValue", format!("rule {index} match {match_index}: {what}")));
            }
        }
    }
    if served.is_empty() {
        return None;
    }
    let mut forward = Forward {
        backends: Backends { to: Default::default(), alternates: Vec::new(), port: None },
        request_headers: Vec::new(),
        response_headers: Vec::new(),
        rewrite_target: None,
        filters: GatewayFilters::default(),
    };
    let mut redirect = false;
    for filter in &rule.filters {
        if let Err(what) = apply_filter(filter, &mut forward, &mut redirect) {
            return refuse(unsupported, what);
        }
    }
    if redirect {
        let changes = !forward.request_headers.is_empty() || forward.rewrite_target.is_some();
        if !rule.backend_refs.is_empty() || changes || !forward.filters.is_empty() {
            return refuse(unsupported, "a RequestRedirect with other filters or backendRefs".into());
        }
        return Some(RulePlan { matches: served, action: Action::RedirectToHttps });
    }
    let (chosen, problems) = backends(namespace, &rule.backend_refs, snapshot);
    for problem in problems {
        unresolved.push(Problem::new(problem.reason, format!("rule {index}: {}", problem.message)));
    }
    match chosen {
        Ok(backends) => forward.backends = backends,
        Err(problem) => return refuse(unsupported, problem.message),
    }
    Some(RulePlan { matches: served, action: Action::Forward(Box::new(forward)) })
}

fn apply_filter(filter: &HTTPRouteFilter, forward: &mut Forward, redirect: &mut bool) -> Result<(), String> {
    match filter.kind.as_str() {
        "RequestHeaderModifier" => header_actions(
            filter.request_header_modifier.as_ref(),
            &mut forward.request_headers,
            &mut forward.filters.request_header_adds,
        ),
        "ResponseHeaderModifier" => header_actions(
            filter.response_header_modifier.as_ref(),
            &mut forward.response_headers,
            &mut forward.filters.response_header_adds,
        ),
        "URLRewrite" => {
            let rewrite = filter.url_rewrite.as_ref().ok_or("URLRewrite without its settings")?;
            if rewrite.hostname.is_some() {
                return Err("URLRewrite of the hostname is not served".into());
            }
            match rewrite.path.as_ref() {
                None => Ok(()),
                Some(path) if path.kind == "ReplacePrefixMatch" => {
                    forward.rewrite_target = Some(path.replace_prefix_match.clone().unwrap_or_else(|| "/".into()));
                    Ok(())
                }
                Some(path) if path.kind == "ReplaceFullPath" => match path.replace_full_path.as_deref() {
                    Some(full) if full.starts_with('/') => {
                        forward.filters.replace_full_path = Some(full.to_string());
                        Ok(())
                    }
                    other => Err(format!("URLRewrite ReplaceFullPath {other:?} does not start with /")),
                },
                Some(path) => Err(format!("URLRewrite {} is not served", path.kind)),
            }
        }
        "RequestRedirect" => {
            let to = filter.request_redirect.as_ref().ok_or("RequestRedirect without its settings")?;
            let https_only = to.scheme.as_deref() == Some("https")
                && to.hostname.is_none()
                && to.path.is_none()
                && to.port.is_none_or(|port| port == 443)
                && to.status_code.is_none_or(|code| code == 302);
            if !https_only {
                return Err("RequestRedirect is served only as scheme https, status 302, nothing else changed".into());
            }
            *redirect = true;
            Ok(())
        }
        other => Err(format!("filter {other} is not served")),
    }
}

/// A header modifier's `set` and `remove` as route actions, its `add` as values to append.
fn header_actions(
    modifier: Option<&HeaderModifier>,
    actions: &mut Vec<RouteHttpHeader>,
    adds: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let Some(modifier) = modifier else { return Ok(()) };
    for header in &modifier.add {
        if http::HeaderName::from_bytes(header.name.as_bytes()).is_err()
            || http::HeaderValue::from_str(&header.value).is_err()
        {
            return Err(format!("header modifier add {:?}: not a valid header", header.name));
        }
        adds.push((header.name.clone(), header.value.clone()));
    }
    for header in &modifier.set {
        actions.push(RouteHttpHeader {
            name: header.name.clone(),
            action: RouteHttpHeaderAction {
                kind: "Set".into(),
                // Route values are templates where `%` starts an expression; Gateway API values are literal.
                set: Some(RouteSetHttpHeader { value: header.value.replace('%', "%%") }),
            },
        });
    }
    for name in &modifier.remove {
        actions.push(RouteHttpHeader {
            name: name.clone(),
            action: RouteHttpHeaderAction { kind: "Delete".into(), set: None },
        });
    }
    Ok(())
}
