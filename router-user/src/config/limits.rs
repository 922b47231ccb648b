//! Process limits, from the OpenShift router's variables: request head limits (HAProxy reads a request's line and
//! headers into one `tune.bufsize` buffer, ROUTER_BUF_SIZE, of which `tune.maxrewrite`, ROUTER_MAX_REWRITE_SIZE,
//! is kept back for rewriting, so a longer head is refused; HAProxy lowers a reserve above half the buffer to
//! half), the connection limit (`maxconn`, ROUTER_MAX_CONNECTIONS), the worker threads (`nbthread`,
//! ROUTER_THREADS) and the client and FIN timeouts (`TimeoutArgs`).

use clap::Args;

use super::timeouts::TimeoutArgs;
use super::RoutingError;

/// `maxconn` in OpenShift's template when ROUTER_MAX_CONNECTIONS is unset.
pub const DEFAULT_MAX_CONNECTIONS: usize = 50_000;
/// The ingress operator's `threadCount` default, which it passes as ROUTER_THREADS.
pub const DEFAULT_THREADS: usize = 4;
/// HAProxy's `MAX_THREADS` on 64-bit builds: `nbthread` above it is refused.
const MAX_THREADS: usize = 64;
/// Descriptors HAProxy keeps aside before dividing the rest between client and server sides (`maxconn` auto).
const RESERVED_DESCRIPTORS: u64 = 100;

/// HAProxy refuses a `tune.bufsize` of 256 MiB or more when HTTP is in use.
const MAX_BUF_SIZE: usize = 256 * 1024 * 1024;

#[derive(Args, Clone, Debug)]
pub struct LimitArgs {
    /// Bytes of a connection's buffer: a request line and headers longer than this minus --max-rewrite-size
    /// are refused with 431 (HTTP/1) and over HTTP/2 a header list that large is.
    #[arg(long, env = "ROUTER_BUF_SIZE", default_value_t = 32768)]
    pub buf_size: usize,

    /// Bytes of that buffer kept back for header rewriting (at most half the buffer counts).
    #[arg(long, env = "ROUTER_MAX_REWRITE_SIZE", default_value_t = 8192)]
    pub max_rewrite_size: usize,

    /// Client connections open at once on the HTTP and HTTPS listeners (HAProxy's `maxconn`); past it new
    /// connections wait in the listen backlog. `auto`: half the descriptor limit less a reserve, as HAProxy
    /// computes it when OpenShift's template writes no `maxconn`.
    #[arg(long, env = "ROUTER_MAX_CONNECTIONS", default_value = "50000")]
    pub max_connections: String,

    /// Worker threads serving connections (HAProxy's `nbthread`).
    #[arg(long, env = "ROUTER_THREADS", default_value_t = DEFAULT_THREADS)]
    pub threads: usize,

    /// Client and FIN timeouts.
    #[command(flatten)]
    pub timeouts: TimeoutArgs,
}

impl LimitArgs {
    /// The longest request head accepted, in bytes: the buffer less its rewrite reserve.
    pub fn request_head_limit(&self) -> Result<usize, RoutingError> {
        if self.buf_size < 2 || self.buf_size >= MAX_BUF_SIZE {
            return Err(RoutingError::Value {
                variable: "ROUTER_BUF_SIZE",
                value: self.buf_size.to_string(),
                why: format!("expected at least 2 and less than {MAX_BUF_SIZE}"),
            });
        }
        Ok(self.buf_size - self.max_rewrite_size.min(self.buf_size / 2))
    }

    /// ROUTER_MAX_CONNECTIONS as a number of connections: a positive integer, or `auto`.
    pub fn connection_limit(&self) -> Result<usize, RoutingError> {
        let value = self.max_connections.trim();
        if value.eq_ignore_ascii_case("auto") {
            return Ok(auto_max_connections(descriptor_limit()));
        }
        match value.parse::<usize>() {
            Ok(limit) if limit > 0 => Ok(limit),
            _ => Err(RoutingError::Value {
                variable: "ROUTER_MAX_CONNECTIONS",
                value: self.max_connections.clone(),
                why: "expected a positive integer or auto".into(),
            }),
        }
    }

    /// ROUTER_THREADS checked: 1 to HAProxy's thread limit.
    pub fn worker_threads(&self) -> Result<usize, RoutingError> {
        if (1..=MAX_THREADS).contains(&self.threads) {
            return Ok(self.threads);
        }
        Err(RoutingError::Value {
            variable: "ROUTER_THREADS",
            value: self.threads.to_string(),
            why: format!("expected 1 to {MAX_THREADS}"),
        })
    }
}

/// HAProxy's automatic `maxconn`: each proxied connection holds two descriptors (client and server side).
fn auto_max_connections(descriptors: u64) -> usize {
    let per_side = descriptors.saturating_sub(RESERVED_DESCRIPTORS) / 2;
    usize::try_from(per_side).unwrap_or(usize::MAX).max(1)
}

/// The soft RLIMIT_NOFILE as /proc/self/limits shows it ("Max open files"); unknown: the default limit.
fn descriptor_limit() -> u64 {
    let fallback = (DEFAULT_MAX_CONNECTIONS as u64) * 2 + RESERVED_DESCRIPTORS;
    let Ok(limits) = std::fs::read_to_string("/proc/self/limits") else { return fallback };
    limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .and_then(|line| line.split_whitespace().nth(3))
        .map_or(fallback, |soft| soft.parse().unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn limit(buf_size: usize, max_rewrite_size: usize) -> Result<usize, RoutingError> {
        let mut args = defaults();
        (args.buf_size, args.max_rewrite_size) = (buf_size, max_rewrite_size);
        args.request_head_limit()
    }

    fn defaults() -> LimitArgs {
        super::super::Settings::parse_from(["router"]).limits
    }

    #[test]
    fn the_head_limit_is_the_buffer_less_its_rewrite_reserve() {
        assert_eq!(limit(32768, 8192).ok(), Some(24576), "OpenShift's defaults");
        assert_eq!(limit(65536, 16384).ok(), Some(49152));
        assert_eq!(limit(32768, 0).ok(), Some(32768));
        assert_eq!(limit(32768, 20000).ok(), Some(16384), "a reserve over half the buffer counts as half");
        assert!(limit(0, 0).is_err());
        assert!(limit(MAX_BUF_SIZE, 8192).is_err());
    }

    #[test]
    fn max_connections_is_a_positive_integer_or_auto() {
        let mut args = defaults();
        assert_eq!(args.connection_limit().ok(), Some(DEFAULT_MAX_CONNECTIONS), "OpenShift's default");
        args.max_connections = "20000".into();
        assert_eq!(args.connection_limit().ok(), Some(20000));
        args.max_connections = "auto".into();
        assert!(args.connection_limit().is_ok_and(|limit| limit >= 1));
        for refused in ["0", "-1", "many", ""] {
            args.max_connections = refused.into();
            assert!(args.connection_limit().is_err(), "{refused:?} is refused");
        }
        assert_eq!(auto_max_connections(1_048_576), 524_238, "(nofile - 100) / 2");
        assert_eq!(auto_max_connections(50), 1, "never zero");
    }

    #[test]
    fn threads_follow_the_operator_default_and_haproxy_bounds() {
        let mut args = defaults();
        assert_eq!(args.worker_threads().ok(), Some(4));
        args.threads = 0;
        assert!(args.worker_threads().is_err());
        args.threads = 65;
        assert!(args.worker_threads().is_err());
        args.threads = 2;
        assert_eq!(args.worker_threads().ok(), Some(2));
    }
}
