//! `haproxy.router.openshift.io/rate-limit-connections` and its `.concurrent-tcp`, `.rate-tcp` and
//! `.rate-http` limits, per client address: concurrent connections, new connections over 3 s, and HTTP
//! requests over 10 s. A client at a limit has its connection closed.

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimits {
    pub concurrent_tcp: Option<u32>,
    pub rate_tcp: Option<u32>,
    pub rate_http: Option<u32>,
}

impl RateLimits {
    pub fn is_active(&self) -> bool {
        self.concurrent_tcp.is_some() || self.rate_tcp.is_some() || self.rate_http.is_some()
    }
}
