//! Node addresses: which destination addresses count as "this node" for nodePort traffic.
//!
//! By default, every address on the interface the XDP front is attached to (IPv4 and IPv6,
//! link-local included), read with `getifaddrs(3)` at attach and again on every sync tick, so an
//! address added or removed later is picked up within a second. The `--xdp-node-addresses`
//! setting replaces that list with a fixed one (for a node whose nodePort traffic arrives for
//! addresses held elsewhere, e.g. on a loopback or dummy interface).

#![allow(unsafe_code)]

use std::{ffi::CStr, io, net::IpAddr};

/// The addresses currently on interface `iface`, sorted and without duplicates.
pub(crate) fn interface_addresses(iface: &str) -> io::Result<Vec<IpAddr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `head` is a valid out-pointer; on success the list is freed below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = Vec::new();
    let mut cursor = head;
    while !cursor.is_null() {
        // SAFETY: `cursor` is a non-null node of the list getifaddrs returned, not yet freed.
        let entry = unsafe { &*cursor };
        cursor = entry.ifa_next;
        if entry.ifa_name.is_null() || entry.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: `ifa_name` is a non-null NUL-terminated string owned by the list.
        let name = unsafe { CStr::from_ptr(entry.ifa_name) };
        if name.to_bytes() != iface.as_bytes() {
            continue;
        }
        // SAFETY: `ifa_addr` is non-null and points at a sockaddr whose family says its real type.
        if let Some(ip) = unsafe { sockaddr_ip(entry.ifa_addr) } {
            found.push(ip);
        }
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed exactly once.
    unsafe { libc::freeifaddrs(head) };
    found.sort();
    found.dedup();
    Ok(found)
}

/// The IP address in a `sockaddr`, for `AF_INET`/`AF_INET6`.
///
/// # Safety
/// `addr` must point at a valid `sockaddr` of the size its family implies.
unsafe fn sockaddr_ip(addr: *const libc::sockaddr) -> Option<IpAddr> {
    // SAFETY: guaranteed by the caller.
    match i32::from(unsafe { (*addr).sa_family }) {
        libc::AF_INET => {
            // SAFETY: the family says this is a `sockaddr_in`.
            let v4 = unsafe { &*addr.cast::<libc::sockaddr_in>() };
            Some(IpAddr::from(u32::from_be(v4.sin_addr.s_addr).to_be_bytes()))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this is a `sockaddr_in6`.
            let v6 = unsafe { &*addr.cast::<libc::sockaddr_in6>() };
            Some(IpAddr::from(v6.sin6_addr.s6_addr))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_its_address() {
        let addrs = interface_addresses("lo").expect("getifaddrs");
        assert!(addrs.contains(&IpAddr::from([127, 0, 0, 1])), "{addrs:?}");
        assert!(interface_addresses("no-such-if0").expect("getifaddrs").is_empty());
    }
}
