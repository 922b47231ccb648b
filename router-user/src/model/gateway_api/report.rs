//! What the Gateway API step found, for status: per Gateway its listeners (accepted or why not, how many routes
//! attached), per HTTPRoute/TLSRoute and parent the attachment (accepted or why not), the references that did
//! not resolve, what was left out as unsupported, and the keys of the routes made for it (their admission
//! decides the rest, after the table is built).

use std::collections::BTreeMap;

use super::super::object_key::ObjectKey;
use super::objects::{ParentReference, RouteGroupKind};

/// Why a condition is False (or, for left-out parts, why a part is not served): a Gateway API reason
/// (`NotAllowedByListeners`, `BackendNotFound`, `UnsupportedValue`, ...) and a message for people.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    pub reason: &'static str,
    pub message: String,
}

impl Problem {
    pub fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Self { reason, message: message.into() }
    }
}

/// The kinds of route objects the step reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteKind {
    HTTPRoute,
    TLSRoute,
}

impl RouteKind {
    pub fn name(self) -> &'static str {
        match self {
            RouteKind::HTTPRoute => "HTTPRoute",
            RouteKind::TLSRoute => "TLSRoute",
        }
    }

    pub fn group_kind(self) -> RouteGroupKind {
        RouteGroupKind { group: Some(super::objects::GROUP.into()), kind: self.name().into() }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct GatewayReport {
    /// Gateways of the router's class.
    pub gateways: BTreeMap<ObjectKey, GatewayOutcome>,
    /// Routes with at least one parentRef naming a Gateway of the router's class: an entry per such parentRef.
    pub routes: BTreeMap<(RouteKind, ObjectKey), RouteOutcome>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct GatewayOutcome {
    pub generation: Option<i64>,
    pub listeners: Vec<ListenerOutcome>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ListenerOutcome {
    pub name: String,
    pub supported_kinds: Vec<RouteGroupKind>,
    /// Routes attached to this listener (accepted by it, whatever their admission).
    pub attached_routes: i32,
    /// `Err`: the listener is not served (Accepted and Programmed are False with this reason).
    pub accepted: Result<(), Problem>,
    /// References that did not resolve (a certificate Secret, a route kind).
    pub unresolved: Option<Problem>,
}

impl ListenerOutcome {
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), supported_kinds: Vec::new(), attached_routes: 0, accepted: Ok(()), unresolved: None }
    }

    pub fn programmed(&self) -> bool {
        self.accepted.is_ok() && self.unresolved.as_ref().is_none_or(|p| p.reason == "InvalidRouteKinds")
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RouteOutcome {
    pub generation: Option<i64>,
    pub parents: Vec<ParentOutcome>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ParentOutcome {
    pub parent_ref: ParentReference,
    /// `Err`: the route is not attached to this parent at all.
    pub attached: Result<(), Problem>,
    /// Backend references that did not resolve (empty: ResolvedRefs is True).
    pub unresolved: Vec<Problem>,
    /// Rules, matches or filters left out because the router cannot serve them.
    pub unsupported: Vec<Problem>,
    /// The routes made for this parent (their admission outcomes complete the Accepted condition).
    pub routes: Vec<ObjectKey>,
}

impl ParentOutcome {
    pub fn new(parent_ref: ParentReference, attached: Result<(), Problem>) -> Self {
        Self { parent_ref, attached, unresolved: Vec::new(), unsupported: Vec::new(), routes: Vec::new() }
    }
}
