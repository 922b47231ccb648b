//! `haproxy.router.openshift.io/ip_allowlist` (and the legacy `ip_whitelist`): space-separated IPv4/IPv6
//! addresses and CIDRs; a client outside the list is refused before any byte is proxied.

use std::net::IpAddr;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let network: IpAddr = address.parse().map_err(|_| format!("{text:?} is not an IP address or CIDR"))?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => {
                p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(|| format!("{text:?}: bad prefix length"))?
            }
        };
        Ok(Cidr { network, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) if self.network.is_ipv4() => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            other => other,
        };
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                masked(u32::from(net) as u128, 32, self.prefix) == masked(u32::from(ip) as u128, 32, self.prefix)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                masked(u128::from(net), 128, self.prefix) == masked(u128::from(ip), 128, self.prefix)
            }
            _ => false,
        }
    }
}

fn masked(bits: u128, width: u32, prefix: u8) -> u128 {
    if prefix == 0 {
        return 0;
    }
    bits >> (width - u32::from(prefix))
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IpAllowlist {
    entries: Vec<Cidr>,
}

impl IpAllowlist {
    /// Parses the annotation value; entries that do not parse are returned as errors and left out.
    pub fn parse(value: &str) -> (IpAllowlist, Vec<String>) {
        let mut entries = Vec::new();
        let mut errors = Vec::new();
        for word in value.split_whitespace() {
            match Cidr::parse(word) {
                Ok(cidr) => entries.push(cidr),
                Err(error) => errors.push(error),
            }
        }
        (IpAllowlist { entries }, errors)
    }

    pub fn allows(&self, ip: IpAddr) -> bool {
        self.entries.iter().any(|cidr| cidr.contains(ip))
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("ip")
    }

    #[test]
    fn cidrs_and_addresses_of_both_families() {
        let (list, errors) = IpAllowlist::parse("192.168.1.0/24 10.0.0.7  2001:db8::/32 ::1");
        assert!(errors.is_empty(), "{errors:?}");
        for (address, allowed) in [
            ("192.168.1.77", true),
            ("192.168.2.1", false),
            ("10.0.0.7", true),
            ("10.0.0.8", false),
            ("2001:db8:1::5", true),
            ("2001:db9::1", false),
            ("::1", true),
            ("::ffff:192.168.1.3", true),
        ] {
            assert_eq!(list.allows(ip(address)), allowed, "{address}");
        }
    }

    #[test]
    fn bad_entries_are_reported_and_skipped() {
        let (list, errors) = IpAllowlist::parse("10.0.0.0/8 not-an-ip 10.0.0.0/33");
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(list.allows(ip("10.1.2.3")));
        assert!(Cidr::parse("0.0.0.0/0").expect("any").contains(ip("8.8.8.8")));
    }
}
