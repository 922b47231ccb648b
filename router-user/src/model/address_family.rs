//! Which EndpointSlices give backends: only `addressType` `IPv4` and `IPv6`, and only addresses of that family.
//! `FQDN` slices (and any type a later API adds) name no address the router can connect to.

use std::net::IpAddr;

/// The address family an EndpointSlice's `addressType` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressFamily {
    V4,
    V6,
}

impl AddressFamily {
    /// The family of `address_type`; `None` for `FQDN` or an unknown type, which give no backends.
    pub fn of(address_type: &str) -> Option<Self> {
        match address_type {
            "IPv4" => Some(Self::V4),
            "IPv6" => Some(Self::V6),
            _ => None,
        }
    }

    /// `address` as an IP of this family; `None` when it is not one.
    pub fn parse(self, address: &str) -> Option<IpAddr> {
        let ip = address.parse::<IpAddr>().ok()?;
        match (self, ip) {
            (Self::V4, IpAddr::V4(_)) | (Self::V6, IpAddr::V6(_)) => Some(ip),
            _ => None,
        }
    }
}

/// Why a slice of `address_type` gives no backends, or `None` when it gives them.
pub fn unusable_address_type(address_type: &str) -> Option<String> {
    match AddressFamily::of(address_type) {
        Some(_) => None,
        None => Some(format!("addressType {address_type:?} gives no backends (only IPv4 and IPv6 do)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ipv4_and_ipv6_slices_give_addresses_of_their_family() {
        assert_eq!(AddressFamily::of("IPv4"), Some(AddressFamily::V4));
        assert_eq!(AddressFamily::of("IPv6"), Some(AddressFamily::V6));
        for other in ["FQDN", "", "ipv4", "IPv5"] {
            assert_eq!(AddressFamily::of(other), None, "{other:?}");
            assert!(unusable_address_type(other).is_some(), "{other:?}");
        }
        assert_eq!(unusable_address_type("IPv6"), None);
        assert!(AddressFamily::V4.parse("10.0.0.1").is_some());
        assert_eq!(AddressFamily::V4.parse("2001:db8::1"), None, "an IPv6 address in an IPv4 slice");
        assert_eq!(AddressFamily::V6.parse("10.0.0.1"), None, "an IPv4 address in an IPv6 slice");
        assert!(AddressFamily::V6.parse("2001:db8::1").is_some());
        assert_eq!(AddressFamily::V4.parse("web.example.com"), None);
    }
}
