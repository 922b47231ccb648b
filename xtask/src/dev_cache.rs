//! Where slow-to-make tools are kept between runs: outside the repository, so every clone on the machine and
//! every later run reuses them (`ROUTER_DEV_CACHE` moves it). A leaf: it knows nothing of what is kept.

use std::path::PathBuf;

const DEFAULT_CACHE_DIR: &str = "/var/cache/router-dev";

pub fn cache_dir() -> PathBuf {
    std::env::var_os("ROUTER_DEV_CACHE").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(DEFAULT_CACHE_DIR))
}
