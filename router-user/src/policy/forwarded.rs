//! `haproxy.router.openshift.io/set-forwarded-headers` and `ROUTER_SET_FORWARDED_HEADERS`: what the router
//! does with X-Forwarded-* and `Forwarded` request headers.

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ForwardedPolicy {
    /// Add the router's values after any the client sent (the default).
    #[default]
    Append,
    /// Drop what the client sent, then add the router's values.
    Replace,
    /// Add each header only when the client did not send it.
    IfNone,
    /// Leave the headers alone.
    Never,
}

impl ForwardedPolicy {
    pub fn parse(value: &str) -> Option<ForwardedPolicy> {
        match value.trim().to_ascii_lowercase().as_str() {
            "append" => Some(ForwardedPolicy::Append),
            "replace" => Some(ForwardedPolicy::Replace),
            "if-none" => Some(ForwardedPolicy::IfNone),
            "never" => Some(ForwardedPolicy::Never),
            _ => None,
        }
    }
}
