//! XDP steering of passthrough connections: whether to offer them to the datapath, and the port range
//! leg B's source ports come from.

use std::ops::RangeInclusive;

/// `--xdp-steer-passthrough`, `--xdp-steer-ports`.
#[derive(clap::Args, Clone, Debug)]
pub struct SteerArgs {
    /// Hand passthrough connections to the XDP datapath: on by default wherever the XDP front is attached
    /// (--xdp-iface; the pod-facing interfaces are found from the FIB); `false` turns it off. The flow
    /// then runs between client and pod in the kernel; any condition not met leaves it on the userspace
    /// relay, counted by reason in router_xdp_steer_fallbacks_total.
    #[arg(long, env = "ROUTER_XDP_STEER_PASSTHROUGH", default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub xdp_steer_passthrough: bool,

    /// Source ports of the node's connections to pods for steered flows, FIRST-LAST; added to
    /// net.ipv4.ip_local_reserved_ports at start.
    #[arg(long, env = "ROUTER_XDP_STEER_PORTS", default_value = "61000-61999", value_parser = parse_port_range)]
    pub xdp_steer_ports: RangeInclusive<u16>,
}

/// "FIRST-LAST" (or one port) as an inclusive range of non-zero ports.
pub fn parse_port_range(text: &str) -> Result<RangeInclusive<u16>, String> {
    let (first, last) = text.split_once('-').unwrap_or((text, text));
    let port = |s: &str| s.trim().parse::<u16>().map_err(|e| format!("{s:?}: {e}"));
    let (first, last) = (port(first)?, port(last)?);
    if first == 0 || first > last {
        return Err(format!("{text:?}: expected FIRST-LAST with 0 < FIRST <= LAST"));
    }
    Ok(first..=last)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::config::Settings;

    #[test]
    fn port_ranges_parse() {
        assert_eq!(parse_port_range("61000-61999"), Ok(61_000..=61_999));
        assert_eq!(parse_port_range("5000"), Ok(5000..=5000));
        for bad in ["", "0-10", "10-5", "a-b", "1-70000"] {
            assert!(parse_port_range(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn on_by_default_and_switched_off_by_false() {
        let default = Settings::try_parse_from(["router"]).expect("no flags");
        assert!(default.steer.xdp_steer_passthrough);
        assert_eq!(default.steer.xdp_steer_ports, 61_000..=61_999);
        let on = Settings::try_parse_from(["router", "--xdp-steer-passthrough", "--xdp-steer-ports", "50000-50010"])
            .expect("flags");
        assert!(on.steer.xdp_steer_passthrough);
        assert_eq!(on.steer.xdp_steer_ports, 50_000..=50_010);
        let explicit = Settings::try_parse_from(["router", "--xdp-steer-passthrough", "false"]).expect("flags");
        assert!(!explicit.steer.xdp_steer_passthrough);
    }
}
