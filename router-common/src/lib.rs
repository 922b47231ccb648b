//! Types shared by the eBPF programs and userspace: map names, map key/value layouts and the
//! counter index layout. Everything here is `#![no_std]`, `#[repr(C)]` with no implicit padding,
//! and pinned by a size assertion, because the eBPF object and the loader must agree byte for
//! byte.
#![no_std]

pub mod maps;
pub mod stats;
