//! Settings of HTTP/3 on the HTTPS port over UDP (ROUTER_ENABLE_HTTP3, off by default) and of the `Alt-Svc`
//! header that advertises it on HTTP/1.1 and HTTP/2 responses of edge and reencrypt routes.

use std::time::Duration;

use clap::Args;

use crate::duration::parse_haproxy_duration;

#[derive(Args, Clone, Debug)]
pub struct Http3Args {
    /// Serve HTTP/3 (QUIC) on the HTTPS port over UDP, for edge and reencrypt routes, and advertise it with
    /// `Alt-Svc` on their HTTP/1.1 and HTTP/2 responses. On only for `true`.
    #[arg(long, env = "ROUTER_ENABLE_HTTP3", default_value = "false", action = clap::ArgAction::Set)]
    pub enable_http3: bool,

    /// How long clients may remember the `Alt-Svc` advertisement (its `ma` parameter, whole seconds).
    #[arg(long, env = "ROUTER_HTTP3_ALT_SVC_MAX_AGE", default_value = "24h", value_parser = parse_haproxy_duration)]
    pub http3_alt_svc_max_age: Duration,

    /// Request streams a client may have open at once on one HTTP/3 connection (QUIC's bidirectional stream
    /// limit; HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS is hyper's default, 200).
    #[arg(long, env = "ROUTER_HTTP3_MAX_STREAMS", default_value_t = 200)]
    pub http3_max_streams: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Only {
        #[command(flatten)]
        http3: Http3Args,
    }

    #[test]
    fn off_by_default_and_on_for_true() {
        let defaults = Only::parse_from(["router"]).http3;
        assert!(!defaults.enable_http3);
        assert_eq!(defaults.http3_alt_svc_max_age, Duration::from_secs(86_400));
        let on = Only::parse_from(["router", "--enable-http3", "true", "--http3-alt-svc-max-age", "1h"]).http3;
        assert!(on.enable_http3);
        assert_eq!(on.http3_alt_svc_max_age, Duration::from_secs(3600));
        assert!(Only::try_parse_from(["router", "--enable-http3", "yes"]).is_err());
    }
}
