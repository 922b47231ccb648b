//! Network namespaces the bench makes (the XDP group): named `xtask-bench-<pid>-<n>-<role>`, so they never collide
//! with another bench's or the tests'; deleted on drop, on Ctrl-C (registered with `interrupt`), and by a later
//! bench when the process that made them is gone. Veth pairs are created with each end directly in its namespace
//! and vanish with either. Commands run inside with `nsenter --net=/run/netns/<name>`, which switches only the
//! network namespace: unlike `ip netns exec` it does not remount /sys, so bpffs pins stay visible.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{bail, Context as _};

use super::interrupt::{self, Resource};
use super::process::{output_within, Proc};

/// Where `ip netns add` puts the namespace handles.
const NETNS_DIR: &str = "/run/netns";
/// Start of every namespace name the bench makes.
pub const PREFIX: &str = "xtask-bench";
/// Longest any one setup command (`ip`, `iptables`, `ethtool`, `curl`) may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(20);

static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// A named network namespace, deleted on drop together with its interfaces.
#[derive(Debug)]
pub struct NetNs {
    name: String,
}

impl NetNs {
    /// Creates `xtask-bench-<pid>-<n>-<role>` with `lo` up.
    pub fn create(role: &str) -> anyhow::Result<NetNs> {
        let name = format!("{PREFIX}-{}-{}-{role}", std::process::id(), NEXT_ID.fetch_add(1, Ordering::Relaxed));
        // Registered first: an interrupt right after `ip netns add` still removes it.
        interrupt::register(Resource::Netns(name.clone()));
        let ns = NetNs { name };
        run(Command::new("ip").args(["netns", "add", &ns.name]))?;
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace handle, `/run/netns/<name>`.
    pub fn path(&self) -> PathBuf {
        Path::new(NETNS_DIR).join(&self.name)
    }

    /// A command that runs `program` in this network namespace.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new("nsenter");
        command.arg(format!("--net={}", self.path().display())).arg("--").arg(program);
        command
    }

    /// Starts `program args` inside, pinned to `cpu` (`taskset -c CPU nsenter --net=... -- program`: both exec,
    /// so the PID is the program's), stopped when the returned process is dropped.
    pub fn spawn(
        &self,
        name: &str,
        cpu: u32,
        program: &Path,
        args: &[String],
        log: &Path,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Proc> {
        let mut all = vec![format!("--net={}", self.path().display()), "--".into(), program.display().to_string()];
        all.extend(args.iter().cloned());
        Proc::spawn_with_env(name, cpu, Path::new("nsenter"), &all, log, env)
    }

    /// Runs `program args` inside, bounded in time; fails with its stderr; returns stdout.
    pub fn run(&self, program: &str, args: &[&str]) -> anyhow::Result<String> {
        run(self.command(program).args(args))
    }

    /// `ip <args>` inside.
    pub fn ip(&self, args: &[&str]) -> anyhow::Result<String> {
        self.run("ip", args)
    }

    /// Deletes namespaces named `xtask-bench-<pid>-...` whose process is gone (a bench killed with SIGKILL).
    pub fn remove_stale() {
        let Ok(entries) = std::fs::read_dir(NETNS_DIR) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if stale_owner(&name, PREFIX) {
                println!("bench: deleting network namespace {name} left by an earlier bench");
                Resource::Netns(name).remove();
            }
        }
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let resource = Resource::Netns(self.name.clone());
        match Command::new("ip").args(["netns", "del", &self.name]).output() {
            Ok(out) if out.status.success() => {}
            Ok(out) => println!("bench: deleting {}: {}", self.name, String::from_utf8_lossy(&out.stderr).trim()),
            Err(error) => println!("bench: deleting {}: {error}", self.name),
        }
        interrupt::forget(&resource);
    }
}

/// One end of a veth pair: its namespace, interface name (at most 15 bytes) and address in CIDR form.
#[derive(Clone, Copy, Debug)]
pub struct VethEnd<'a> {
    pub ns: &'a NetNs,
    pub name: &'a str,
    pub cidr: &'a str,
}

/// Creates a veth pair with each end directly in its namespace, addresses both ends and brings them up.
pub fn veth_pair(a: VethEnd<'_>, b: VethEnd<'_>) -> anyhow::Result<()> {
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
    ]))?;
    for end in [a, b] {
        end.ns.ip(&["addr", "add", end.cidr, "dev", end.name])?;
        end.ns.ip(&["link", "set", end.name, "up"])?;
    }
    Ok(())
}

/// Whether `name` is `<prefix>-<pid>-...` with no live process `pid` (and not this process).
pub fn stale_owner(name: &str, prefix: &str) -> bool {
    let Some(rest) = name.strip_prefix(prefix).and_then(|r| r.strip_prefix('-')) else { return false };
    let Some(Ok(pid)) = rest.split('-').next().map(str::parse::<u32>) else { return false };
    pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
}

/// Runs `command` bounded in time; fails with its stderr; returns stdout.
fn run(command: &mut Command) -> anyhow::Result<String> {
    let describe = format!("{command:?}");
    let out = output_within(command, COMMAND_LIMIT).with_context(|| describe.clone())?;
    if !out.status.success() {
        bail!("{describe} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_means_our_prefix_and_a_dead_pid() {
        assert!(stale_owner("xtask-bench-4000000-0-node", PREFIX));
        assert!(stale_owner("xtask-bench-4000000", PREFIX));
        assert!(!stale_owner(&format!("xtask-bench-{}-0-node", std::process::id()), PREFIX));
        assert!(!stale_owner("xtask-bench-1-0-node", PREFIX), "pid 1 is alive");
        assert!(!stale_owner("rtx-4000000-0", PREFIX));
        assert!(!stale_owner("xtask-bench-abc-0", PREFIX));
        assert!(!stale_owner("xtask-benchy-4000000-0", PREFIX));
    }
}
