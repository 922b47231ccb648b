//! Debian package queries, shared by `setup` and the apiserver build (a leaf: it knows neither).

use std::process::Command;

/// True when Debian package `package` is installed.
pub fn dpkg_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .is_ok_and(|out| out.status.success() && String::from_utf8_lossy(&out.stdout).ends_with("installed"))
}
