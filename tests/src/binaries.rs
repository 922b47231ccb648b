//! The workspace's own binaries (the router, the test backend) for tests that start them as processes.

use std::path::PathBuf;
use std::process::Command;

/// The workspace's binaries that tests start, built by one cargo command: the same package set as `cargo xtask`'s
/// `build_binaries` (xtask/src/cargo.rs), so both resolve the same dependency features and neither rebuilds what
/// the other built (cargo unifies features over the packages of one command: built alone, test-backend would get
/// another rustls).
const BUILD: [&str; 9] =
    ["build", "--package", "router-user", "--bin", "router", "--package", "test-backend", "--bin", "test-backend"];

/// A binary of this workspace next to this test's target profile dir, (re)built first so it is current:
/// `target/<profile>/deps/<test>-*` -> `target/<profile>/<bin>`. `cargo xtask test` builds the binaries with the
/// same command before the tests run, so this build finds nothing to do there.
fn workspace_binary(bin: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("test binary lives in target/<profile>/deps");
    let target_dir = profile_dir.parent().expect("target dir");
    let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    build.args(BUILD).arg("--target-dir").arg(target_dir).current_dir(env!("CARGO_MANIFEST_DIR"));
    // The test runner gives this process the variables cargo sets for a test (CARGO_PKG_NAME, CARGO_MANIFEST_DIR,
    // ..., LD_LIBRARY_PATH, NEXTEST_*). Build scripts watch some of them (`rerun-if-env-changed`, read by cargo
    // from its own environment), so inherited they would rerun ring's C build and the eBPF build, and the next
    // build from a shell would rerun them again.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_for_tests = (name.starts_with("CARGO_") && name != "CARGO_HOME")
            || name.starts_with("NEXTEST")
            || name == "LD_LIBRARY_PATH";
        if set_for_tests {
            build.env_remove(name.as_ref());
        }
    }
    if profile_dir.file_name().is_some_and(|name| name == "release") {
        build.arg("--release");
    }
    let status = build.status().expect("run cargo build");
    assert!(status.success(), "building {bin} failed: {status}");
    let path = profile_dir.join(bin);
    assert!(path.is_file(), "{bin} not found at {}", path.display());
    path
}

/// The `router` binary.
pub fn router_binary() -> PathBuf {
    workspace_binary("router")
}

/// The `test-backend` binary: one process serving several reporting backends (`NAME=ADDR` arguments).
pub fn test_backend_binary() -> PathBuf {
    workspace_binary("test-backend")
}
