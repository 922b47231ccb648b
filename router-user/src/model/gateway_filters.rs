//! What a route made from an HTTPRoute rule does that no Route field expresses: header values appended (the header
//! modifiers' `add`) and the whole path replaced (`URLRewrite` with `ReplaceFullPath`). Kept beside the route
//! (never read from or written to a Route object), as `RequestMatch` is.

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GatewayFilters {
    /// `(name, value)` appended to the request's headers (after the route's set and remove actions).
    pub request_header_adds: Vec<(String, String)>,
    /// `(name, value)` appended to the response's headers.
    pub response_header_adds: Vec<(String, String)>,
    /// The path the request goes to the pod with, whatever its path was; the query string is kept.
    pub replace_full_path: Option<String>,
}

impl GatewayFilters {
    pub fn is_empty(&self) -> bool {
        *self == GatewayFilters::default()
    }
}
