//! Shared by the network-namespace XDP tests (`xdp_*.rs`): the router and test-backend processes
//! inside a namespace, pin dirs cleaned up even after a crash, and reading the pinned maps back
//! with `bpftool` through their BTF.
#![allow(dead_code)]

pub mod flow_map_fill;
pub mod held_tail;
pub mod in_netns;
pub mod router_service;
pub mod steer_ends;
pub mod steer_rows;
pub mod steer_topology;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    thread,
    time::{Duration, Instant},
};

use router_tests::netns::NetNs;

pub fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Bytes in the file at `path` so far (0 before it exists): how far a download has got.
pub fn file_len(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Panics naming the missing tool, so a machine without `cargo xtask setup` fails clearly.
pub fn require_tools(tools: &[&str]) {
    for tool in tools {
        assert!(on_path(tool), "`{tool}` is missing: run `cargo xtask setup`");
    }
}

/// A process started inside a namespace, killed on drop if still running, with its output in a
/// log file.
pub struct Process {
    pub child: Child,
    pub log: PathBuf,
    pub what: String,
}

impl Process {
    /// Starts `bin args...` in `ns` (nsenter: only the network namespace changes, so
    /// `/sys/fs/bpf` stays visible), logging to `log`.
    pub fn spawn(ns: &NetNs, bin: &Path, args: &[String], envs: &[(&str, &str)], log: &Path) -> Process {
        let log_file = fs::File::create(log).expect("log file");
        let mut cmd = ns.command(bin);
        cmd.args(args).stdin(Stdio::null()).stdout(log_file.try_clone().expect("clone log file")).stderr(log_file);
        for (key, value) in envs {
            cmd.env(key, value);
        }
        kill_with_parent(&mut cmd);
        let child = cmd.spawn().unwrap_or_else(|err| panic!("spawn {} under nsenter: {err}", bin.display()));
        Process {
            child,
            log: log.to_path_buf(),
            what: bin.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        }
    }

    /// Waits up to 60 s for `ready`, panicking with the log if the process exits or time runs out.
    pub fn wait_for(&mut self, what: &str, ready: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !ready() {
            if let Some(status) = self.child.try_wait().expect("poll child") {
                panic!("{} exited ({status}) before {what}:\n{}", self.what, self.log());
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}:\n{}", self.log());
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends SIGTERM (no wait).
    pub fn sigterm(&mut self) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits pid_t");
        // SAFETY: kill(2) on our own child's pid; the child has not been reaped yet, so the pid
        // still names it.
        let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
        assert_eq!(rc, 0, "kill(SIGTERM): {}", std::io::Error::last_os_error());
    }

    /// Waits up to 30 s for the exit.
    pub fn wait_exit(&mut self) -> ExitStatus {
        self.wait_exit_within(Duration::from_secs(30))
    }

    /// Waits up to `limit` for the exit.
    pub fn wait_exit_within(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll child") {
                return status;
            }
            assert!(Instant::now() < deadline, "{} did not exit within {limit:?}:\n{}", self.what, self.log());
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then the exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        self.sigterm();
        self.wait_exit()
    }

    /// The log so far, without the terminal colour sequences the router writes.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).map_or_else(|err| format!("(no log: {err})"), |text| without_ansi(&text))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Makes the spawned process die with the test thread that spawned it, so a crashed or killed
/// test never leaves a router attached. `nsenter` execs the program, which keeps the setting.
fn kill_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: the closure runs in the forked child before exec and only calls prctl(2), which is
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A pin dir `/sys/fs/bpf/router-test-<prefix>-<pid>-<n>` the router should remove; removed here
/// on drop if it did not (a failed test).
pub struct PinDir(pub PathBuf);

impl PinDir {
    pub fn new(prefix: &str, n: u32) -> PinDir {
        PinDir(PathBuf::from(format!("/sys/fs/bpf/router-test-{prefix}-{}-{n}", std::process::id())))
    }
}

impl Drop for PinDir {
    fn drop(&mut self) {
        remove_pin_dir(&self.0);
    }
}

fn remove_pin_dir(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let _ = fs::remove_file(entry.path());
        }
    }
    let _ = fs::remove_dir(dir);
}

/// Removes `/sys/fs/bpf/router-test-<prefix>-<pid>-*` left by runs whose process is gone.
pub fn remove_stale_pin_dirs(prefix: &str) {
    let Ok(entries) = fs::read_dir("/sys/fs/bpf") else {
        return;
    };
    let ours = format!("router-test-{prefix}-");
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(&ours).and_then(|rest| rest.split('-').next()) else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            eprintln!("removing stale pin dir /sys/fs/bpf/{name}");
            remove_pin_dir(&entry.path());
        }
    }
}

pub use router_tests::binaries::{router_binary, test_backend_binary};

/// `router xdp status --json` on `pin_dir`, run in `node`.
pub fn xdp_status(node: &NetNs, pin_dir: &Path) -> serde_json::Value {
    let out = node
        .command(router_binary())
        .args(["xdp", "status", "--json", "--bpf-pin-dir"])
        .arg(pin_dir)
        .output()
        .expect("run router xdp status");
    assert!(out.status.success(), "router xdp status failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("status JSON")
}

/// Counter names by index, as `router xdp status` prints them (the layout is router_common::stats).
pub use router_common::stats::STATS_NAMES as COUNTER_NAMES;

/// Per-counter packets, summed over CPUs, read from the pinned `XDP_STATS` through its BTF.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counters(pub [u64; COUNTER_NAMES.len()]);

impl Counters {
    pub fn get(&self, name: &str) -> u64 {
        let index = COUNTER_NAMES.iter().position(|n| *n == name).unwrap_or_else(|| panic!("no counter {name}"));
        self.0[index]
    }
}

/// `bpftool -j map dump pinned <pin>`, parsed.
pub fn bpftool_dump(pin: &Path) -> Vec<serde_json::Value> {
    let out = Command::new("bpftool").args(["-j", "map", "dump", "pinned"]).arg(pin).output().expect("run bpftool");
    assert!(
        out.status.success(),
        "bpftool map dump {} failed: {}",
        pin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let entries: serde_json::Value = serde_json::from_slice(&out.stdout).expect("bpftool JSON");
    entries.as_array().expect("array of entries").clone()
}

pub fn dump_counters(pin: &Path) -> Counters {
    let mut packets = [0u64; COUNTER_NAMES.len()];
    for entry in bpftool_dump(pin) {
        let formatted =
            entry.get("formatted").unwrap_or_else(|| panic!("no BTF-formatted view in bpftool output: {entry}"));
        let key = formatted["key"].as_u64().expect("numeric key");
        let sum = formatted["values"]
            .as_array()
            .expect("per-CPU values")
            .iter()
            .map(|cpu| cpu["value"]["packets"].as_u64().expect("named `packets` field"))
            .sum();
        let slot = packets
            .get_mut(usize::try_from(key).expect("key fits usize"))
            .unwrap_or_else(|| panic!("unexpected counter index {key}"));
        *slot = sum;
    }
    Counters(packets)
}

/// The BTF-formatted entries (`{"key": {...}, "value": {...}}`) of a pinned hash map.
pub fn dump_formatted(pin: &Path) -> Vec<serde_json::Value> {
    bpftool_dump(pin)
        .into_iter()
        .map(|entry| entry.get("formatted").cloned().unwrap_or_else(|| panic!("no BTF view: {entry}")))
        .collect()
}

/// `text` without the terminal colour sequences (`ESC [ ... m`) the router's log carries.
fn without_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for skipped in chars.by_ref() {
                if skipped == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
