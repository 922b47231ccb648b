//! What a served HTTPRoute rule does with a request: its backends, header changes and path rewrite, as the
//! route made of it carries them.

use super::backends::Backends;
use crate::model::{GatewayFilters, RouteHttpHeader};

/// The annotation the rewrite is carried in.
pub const REWRITE_TARGET: &str = "haproxy.router.openshift.io/rewrite-target";

pub struct Forward {
    pub backends: Backends,
    pub request_headers: Vec<RouteHttpHeader>,
    pub response_headers: Vec<RouteHttpHeader>,
    pub rewrite_target: Option<String>,
    /// Header values appended and a full path replacement, which Route fields cannot carry.
    pub filters: GatewayFilters,
}
