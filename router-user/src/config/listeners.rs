//! Settings of how the client listeners are bound: the address families (ROUTER_IP_V4_V6_MODE) and whether
//! :80 and :443 wait for the first complete route table (ROUTER_BIND_PORTS_AFTER_SYNC).

use clap::Args;

use crate::listen::IpMode;

#[derive(Args, Clone, Debug)]
pub struct ListenerArgs {
    /// Address families of the wildcard listeners: `v4` (IPv4), `v6` (IPv6 only) or `v4v6` (both, one port).
    #[arg(long, env = "ROUTER_IP_V4_V6_MODE", value_enum, default_value_t = IpMode::V4)]
    pub ip_v4_v6_mode: IpMode,

    /// Listen on the HTTP and HTTPS ports only once the first complete route table is live (the admin port
    /// listens from the start, not ready until then). On only for exactly `true`, as OpenShift reads it.
    #[arg(long, env = "ROUTER_BIND_PORTS_AFTER_SYNC", default_value = "false", value_parser = exactly_true, action = clap::ArgAction::Set)]
    pub bind_ports_after_sync: bool,
}

/// OpenShift compares ROUTER_BIND_PORTS_AFTER_SYNC with the string `true`.
fn exactly_true(value: &str) -> Result<bool, std::convert::Infallible> {
    Ok(value == "true")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Only {
        #[command(flatten)]
        listeners: ListenerArgs,
    }

    #[test]
    fn openshifts_defaults_and_words() {
        let defaults = Only::parse_from(["router"]).listeners;
        assert_eq!(defaults.ip_v4_v6_mode, IpMode::V4);
        assert!(!defaults.bind_ports_after_sync);
        let dual = Only::parse_from(["router", "--ip-v4-v6-mode", "v4v6", "--bind-ports-after-sync", "true"]).listeners;
        assert_eq!(dual.ip_v4_v6_mode, IpMode::V4v6);
        assert!(dual.bind_ports_after_sync);
        assert!(!Only::parse_from(["router", "--bind-ports-after-sync", "TRUE"]).listeners.bind_ports_after_sync);
        assert!(Only::try_parse_from(["router", "--ip-v4-v6-mode", "v5"]).is_err());
    }
}
