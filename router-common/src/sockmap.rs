//! Key and value layouts of the passthrough sockmap relay maps (`SOCKMAP_SOCKS`, `SOCKMAP_TARGETS`,
//! `SOCKMAP_PEERS`), used by the `sockmap_verdict` `sk_skb` program and `router-user`'s
//! `relay::sockmap`.
//!
//! Sockets are named by their socket cookie (`SO_COOKIE` in userspace, `bpf_get_socket_cookie` in
//! the program): a `u64` the kernel assigns once per socket and never reuses while the system is up,
//! so a key can never name a newer socket that reused a closed one's 4-tuple, and the program needs
//! no address parsing (the cookie is the same for IPv4 and IPv6). Every field is host byte order.

/// Key of all three sockmap relay maps: one socket.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SockKey {
    /// The socket's cookie (`SO_COOKIE`).
    pub cookie: u64,
}

/// Value of `SOCKMAP_PEERS`: where a relayed socket's received bytes go, and how many went.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SockmapPeer {
    /// Cookie of the peer socket, whose `SOCKMAP_TARGETS` entry receives the bytes (on its egress).
    pub peer: u64,
    /// Bytes redirected to the peer so far (sum of `skb->len` of redirected skbs). Written by the
    /// program only; a socket's skbs are handled one at a time (under its lock), so plain adds do.
    pub bytes: u64,
    /// skbs redirected to the peer so far.
    pub skbs: u64,
}

const _: () = assert!(core::mem::size_of::<SockKey>() == 8);
const _: () = assert!(core::mem::size_of::<SockmapPeer>() == 24);
const _: () = assert!(core::mem::align_of::<SockmapPeer>() == 8);

// SAFETY (both impls): each type is `#[repr(C)]`, made only of `u64`s (no padding, sizes asserted
// above), and every bit pattern is a valid value.
#[cfg(feature = "user")]
mod pod {
    use super::*;

    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for SockKey {}
    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for SockmapPeer {}
}
