//! Network namespaces for root-only tests: a fresh namespace per use, deleted on drop, and veth
//! pairs between them. Names are `<prefix>-<pid>-<n>`, so a later run can delete what a crashed
//! run left behind ([`NetNs::remove_stale`]) without touching a concurrent run's namespaces.
//!
//! Commands run inside a namespace with `nsenter --net=/run/netns/<name>`, which switches only the
//! network namespace: unlike `ip netns exec`, it does not remount `/sys`, so `/sys/fs/bpf` (and
//! the pins a router makes there) stay visible.

use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
    process::Command,
    sync::atomic::{AtomicU32, Ordering},
};

/// Where `ip netns add` puts the namespace handles.
const NETNS_DIR: &str = "/run/netns";

static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// A named network namespace (`ip netns add`), deleted on drop together with its interfaces.
#[derive(Debug)]
pub struct NetNs {
    name: String,
}

impl NetNs {
    /// Creates `<prefix>-<pid>-<n>` and brings its `lo` up. Panics when `ip netns add` fails (the
    /// caller must be root).
    pub fn new(prefix: &str) -> NetNs {
        let name = format!("{prefix}-{}-{}", std::process::id(), NEXT_ID.fetch_add(1, Ordering::Relaxed));
        run(Command::new("ip").args(["netns", "add", &name]));
        let ns = NetNs { name };
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace handle, `/run/netns/<name>`.
    pub fn path(&self) -> PathBuf {
        Path::new(NETNS_DIR).join(&self.name)
    }

    /// A command that runs `program` in this network namespace (and the caller's mount namespace).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net={}", self.path().display())).arg("--").arg(program);
        cmd
    }

    /// Runs `ip -n <name> <args>`; panics on failure; returns stdout.
    pub fn ip(&self, args: &[&str]) -> String {
        run(Command::new("ip").arg("-n").arg(&self.name).args(args))
    }

    /// Deletes namespaces named `<prefix>-<pid>-<n>` whose creating process is gone.
    pub fn remove_stale(prefix: &str) {
        let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if stale_owner(&name, prefix) {
                eprintln!("netns: deleting stale namespace {name} left by an earlier run");
                let _ = Command::new("ip").args(["netns", "del", &name]).status();
            }
        }
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        match Command::new("ip").args(["netns", "del", &self.name]).output() {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!("netns: deleting {}: {}", self.name, String::from_utf8_lossy(&out.stderr).trim()),
            Err(err) => eprintln!("netns: deleting {}: {err}", self.name),
        }
    }
}

/// One end of a veth pair: its namespace, interface name and address in CIDR form.
#[derive(Clone, Copy, Debug)]
pub struct VethEnd<'a> {
    pub ns: &'a NetNs,
    pub name: &'a str,
    pub cidr: &'a str,
}

/// Creates a veth pair with each end directly in its namespace, addresses both ends and brings
/// them up. The pair disappears with either namespace.
pub fn veth_pair(a: VethEnd<'_>, b: VethEnd<'_>) {
    run(Command::new("ip").args([
        "link",
        "add",
        a.name,
        "netns",
        a.ns.name(),
        "type",
        "veth",
        "peer",
        "name",
        b.name,
        "netns",
        b.ns.name(),
    ]));
    for end in [a, b] {
        end.ns.ip(&["addr", "add", end.cidr, "dev", end.name]);
        end.ns.ip(&["link", "set", end.name, "up"]);
    }
}

/// Whether `name` is `<prefix>-<pid>-<n>` with no live process `pid`.
fn stale_owner(name: &str, prefix: &str) -> bool {
    let Some(rest) = name.strip_prefix(prefix).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    let Some((pid, n)) = rest.split_once('-') else {
        return false;
    };
    let (Ok(pid), Ok(_)) = (pid.parse::<u32>(), n.parse::<u32>()) else {
        return false;
    };
    pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
}

/// Runs `cmd`, panicking with its stderr when it fails; returns stdout.
fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|err| panic!("running {cmd:?}: {err}"));
    assert!(out.status.success(), "{cmd:?} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_means_our_prefix_and_a_dead_pid() {
        assert!(stale_owner("rtx-4000000-0", "rtx"));
        assert!(!stale_owner(&format!("rtx-{}-0", std::process::id()), "rtx"));
        assert!(!stale_owner("rtx-1-0", "rtx")); // pid 1 is alive
        assert!(!stale_owner("other-4000000-0", "rtx"));
        assert!(!stale_owner("rtx-abc-0", "rtx"));
        assert!(!stale_owner("rtxy-4000000-0", "rtx"));
    }
}
