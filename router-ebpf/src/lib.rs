//! Empty library target. It exists so `router-user` can list this crate as a build-dependency,
//! which makes cargo re-run `router-user/build.rs` (and so rebuild the eBPF object) when the eBPF
//! sources change. The programs live in the `router-ebpf` binary target (`src/main.rs`).
#![no_std]
