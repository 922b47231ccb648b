//! What a route made from an HTTPRoute match asks of a request besides its host and path prefix: an exact path,
//! a method, headers, query parameters. Route objects and Ingresses have none; their routes carry `None`. Kept
//! beside the route (never read from or written to a Route object), so that admission and the table see it.

/// The conditions of one HTTPRoute match, and where the match comes from (the Gateway API's last tie-breakers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestMatch {
    pub conditions: RequestConditions,
    pub origin: MatchOrigin,
}

/// What a request must meet, all of it. Headers and query parameters are sorted by name, one entry per name, so
/// that two matches asking the same thing compare equal (and conflict in admission).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestConditions {
    /// The request path must equal the route's path, not only start with it.
    pub exact_path: bool,
    /// An HTTP method, as spelled in the request (`GET`, `POST`, ...).
    pub method: Option<String>,
    /// Header names lowercased.
    pub headers: Vec<ValueCondition>,
    /// Query parameter names as written (they are case-sensitive).
    pub query_params: Vec<ValueCondition>,
}

/// A header or query parameter that must be present with a value equal to `value`, or (`regex`) whose whole value
/// matches the regular expression `value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueCondition {
    pub name: String,
    pub value: String,
    pub regex: bool,
}

/// The HTTPRoute (its creation time is the route's), rule and match a route was made from: between matches of one
/// host that rank the same, the oldest HTTPRoute wins, then the first by namespace/name, then the first rule and
/// match.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct MatchOrigin {
    pub namespace: String,
    pub name: String,
    pub rule: usize,
    pub index: usize,
}

impl ValueCondition {
    /// The regular expression a `regex` condition is checked with: its value must match the whole of the request's
    /// value, as in Envoy and most data planes.
    pub fn whole_value_pattern(&self) -> String {
        format!("^(?:{})$", self.value)
    }
}

impl RequestConditions {
    /// True when the conditions ask nothing beyond the path prefix (such a match needs no `RequestMatch`).
    pub fn is_empty(&self) -> bool {
        !self.exact_path && self.method.is_none() && self.headers.is_empty() && self.query_params.is_empty()
    }
}

/// Whether two routes' conditions ask the same of a request (both none included); their origins do not count.
pub fn same_conditions(a: Option<&RequestMatch>, b: Option<&RequestMatch>) -> bool {
    a.map(|m| &m.conditions) == b.map(|m| &m.conditions)
}
