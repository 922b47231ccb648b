//! Request head limits, from the OpenShift router's buffer variables: HAProxy reads a request's line and headers
//! into one `tune.bufsize` buffer (ROUTER_BUF_SIZE) of which `tune.maxrewrite` (ROUTER_MAX_REWRITE_SIZE) is kept
//! back for rewriting, so a longer head is refused. HAProxy lowers a reserve above half the buffer to half.

use clap::Args;

use super::RoutingError;

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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(buf_size: usize, max_rewrite_size: usize) -> Result<usize, RoutingError> {
        LimitArgs { buf_size, max_rewrite_size }.request_head_limit()
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
}
