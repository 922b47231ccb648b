//! Types shared by the eBPF programs and userspace: map names, map key/value layouts, the counter
//! index layout, the flow hash and the checksum arithmetic. Everything here is `#![no_std]`,
//! `#[repr(C)]` with no implicit padding, and pinned by a size assertion, because the eBPF object
//! and the loader must agree byte for byte.
#![no_std]

pub mod checksum;
pub mod hash;
pub mod maps;
pub mod nat;
pub mod sockmap;
pub mod stats;
pub mod steer;
pub mod tls;
