//! The XDP front end to end (root only): the `router` binary attaches `xdp_front` in generic (skb)
//! mode to a veth inside a test namespace, counts real traffic from a client namespace into its
//! pinned, BTF-typed stats map (read back with `bpftool`), and on SIGTERM detaches and unpins.
//!
//! Topology: client ns `veth-c` 10.203.0.1/24 <-> node ns `veth-n` 10.203.0.2/24. All traffic stays
//! between these two namespaces.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    thread,
    time::{Duration, Instant},
};

use router_tests::netns::{veth_pair, NetNs, VethEnd};

/// Prefix of this test's namespaces and pin dirs (`<prefix>-<pid>-<n>`).
const PREFIX: &str = "rtxdp";
const CLIENT_ADDR: &str = "10.203.0.1";
const NODE_ADDR: &str = "10.203.0.2";
const NODE_IF: &str = "veth-n";
const STATS_PIN: &str = "XDP_STATS";
const PINGS: u64 = 5;
const TCP_CONNECTS: u64 = 3;

#[test]
fn xdp_front_counts_namespace_traffic_and_detaches_on_sigterm() {
    if !is_root() {
        eprintln!("skipping xdp_attach: needs root (network namespaces, XDP, bpffs)");
        return;
    }
    for tool in ["ip", "nsenter", "bpftool", "ping", "curl"] {
        assert!(on_path(tool), "`{tool}` is missing: run `cargo xtask setup`");
    }
    NetNs::remove_stale(PREFIX);
    remove_stale_pin_dirs();
    let router_bin = router_binary();

    let client = NetNs::new(PREFIX);
    let node = NetNs::new(PREFIX);
    veth_pair(
        VethEnd { ns: &client, name: "veth-c", cidr: &format!("{CLIENT_ADDR}/24") },
        VethEnd { ns: &node, name: NODE_IF, cidr: &format!("{NODE_ADDR}/24") },
    );

    let pin_dir = PinDir(PathBuf::from(format!("/sys/fs/bpf/router-test-{PREFIX}-{}-0", std::process::id())));
    let work = tempfile::tempdir().expect("temp dir");
    let manifests = work.path().join("manifests");
    fs::create_dir(&manifests).expect("manifests dir");
    let log = work.path().join("router.log");

    let mut router = Router::spawn(&node, &router_bin, &manifests, &pin_dir.0, &log);
    let stats_pin = pin_dir.0.join(STATS_PIN);
    router.wait_for(|| stats_pin.exists(), "the pinned stats map");

    let link = node.ip(&["link", "show", NODE_IF]);
    assert!(
        link.contains("xdpgeneric") && link.contains("prog/xdp"),
        "expected xdp_front in generic (skb) mode on {NODE_IF}:\n{link}"
    );

    let ping = client
        .command("ping")
        .args(["-c", &PINGS.to_string(), "-i", "0.2", "-W", "2", "-q", NODE_ADDR])
        .output()
        .expect("run ping");
    assert!(
        ping.status.success(),
        "ping {NODE_ADDR} from the client namespace failed: {}",
        String::from_utf8_lossy(&ping.stdout)
    );
    for _ in 0..TCP_CONNECTS {
        // Nothing listens on the node address (the router listens on 127.0.0.1), so each attempt
        // is one SYN answered by a RST; only the SYN matters here.
        let _ = client
            .command("curl")
            .args(["-s", "-o", "/dev/null", "-m", "3"])
            .arg(format!("http://{NODE_ADDR}:80/"))
            .status()
            .expect("run curl");
    }

    let counters = dump_counters(&stats_pin);
    eprintln!("xdp_attach: mode skb, counters after {PINGS} pings and {TCP_CONNECTS} TCP connects: {counters:?}");
    let sent = PINGS + TCP_CONNECTS;
    assert!(counters.total >= sent, "total < {sent}: {counters:?}");
    assert!(counters.ipv4 >= sent, "ipv4 < {sent}: {counters:?}");
    assert!(counters.tcp >= TCP_CONNECTS, "tcp < {TCP_CONNECTS}: {counters:?}");
    assert_eq!(
        counters.total,
        counters.ipv4 + counters.ipv6 + counters.other + counters.unparsed,
        "each packet lands in exactly one of ipv4/ipv6/other/unparsed: {counters:?}"
    );

    let status = router.terminate();
    assert!(status.success(), "router exited with {status} on SIGTERM:\n{}", router.log());
    let link = node.ip(&["link", "show", NODE_IF]);
    assert!(
        !link.contains("prog/xdp") && !link.contains("xdpgeneric"),
        "XDP program still attached after SIGTERM:\n{link}"
    );
    assert!(
        !pin_dir.0.exists(),
        "pin dir {} still exists after SIGTERM: {:?}",
        pin_dir.0.display(),
        fs::read_dir(&pin_dir.0).map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
    );
}

/// Summed per-CPU packet counts read from the pinned map through its BTF (`formatted` output).
#[derive(Debug, Default)]
struct Counters {
    total: u64,
    ipv4: u64,
    ipv6: u64,
    tcp: u64,
    other: u64,
    unparsed: u64,
}

fn dump_counters(pin: &Path) -> Counters {
    let out = Command::new("bpftool").args(["-j", "map", "dump", "pinned"]).arg(pin).output().expect("run bpftool");
    assert!(out.status.success(), "bpftool map dump failed: {}", String::from_utf8_lossy(&out.stderr));
    let entries: serde_json::Value = serde_json::from_slice(&out.stdout).expect("bpftool JSON");
    let mut packets = [0u64; 6];
    for entry in entries.as_array().expect("array of entries") {
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
    // Index layout: router_common::stats.
    let [total, ipv4, ipv6, tcp, other, unparsed] = packets;
    Counters { total, ipv4, ipv6, tcp, other, unparsed }
}

/// The router process inside the node namespace; killed on drop if still running.
struct Router {
    child: Child,
    log: PathBuf,
}

impl Router {
    fn spawn(node: &NetNs, bin: &Path, manifests: &Path, pin_dir: &Path, log: &Path) -> Router {
        let log_file = fs::File::create(log).expect("router log file");
        let mut cmd = node.command(bin);
        cmd.arg("--manifests")
            .arg(manifests)
            .args(["--listen-addr", "127.0.0.1"])
            .args(["--http-port", "0", "--https-port", "0", "--stats-port", "0"])
            .args(["--xdp-iface", NODE_IF, "--xdp-mode", "skb"])
            .arg("--bpf-pin-dir")
            .arg(pin_dir)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("clone log file"))
            .stderr(log_file);
        kill_with_parent(&mut cmd);
        let child = cmd.spawn().expect("spawn the router under nsenter");
        Router { child, log: log.to_path_buf() }
    }

    /// Waits up to 60 s for `ready`, panicking with the router's log if it exits or times out.
    fn wait_for(&mut self, ready: impl Fn() -> bool, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !ready() {
            if let Some(status) = self.child.try_wait().expect("poll router") {
                panic!("router exited ({status}) before {what} appeared:\n{}", self.log());
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}:\n{}", self.log());
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends SIGTERM and waits up to 30 s for the exit.
    fn terminate(&mut self) -> ExitStatus {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits pid_t");
        // SAFETY: kill(2) on our own child's pid; the child has not been reaped yet, so the pid
        // still names it.
        let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
        assert_eq!(rc, 0, "kill(SIGTERM): {}", std::io::Error::last_os_error());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("poll router") {
                return status;
            }
            assert!(Instant::now() < deadline, "router did not exit within 30 s of SIGTERM:\n{}", self.log());
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_else(|err| format!("(no log: {err})"))
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Makes the spawned process die with the test thread that spawned it, so a crashed or killed
/// test never leaves a router attached. `nsenter` execs the router, which keeps the setting.
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

/// A pin dir the router should remove; removed here on drop if it did not (a failed test).
struct PinDir(PathBuf);

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
fn remove_stale_pin_dirs() {
    let Ok(entries) = fs::read_dir("/sys/fs/bpf") else {
        return;
    };
    let ours = format!("router-test-{PREFIX}-");
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(&ours).and_then(|rest| rest.split('-').next()) else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            eprintln!("xdp_attach: removing stale pin dir /sys/fs/bpf/{name}");
            remove_pin_dir(&entry.path());
        }
    }
}

/// The `router` binary next to this test's target profile dir, (re)built first so it is current:
/// `target/<profile>/deps/xdp_attach-*` -> `target/<profile>/router`.
fn router_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe.parent().and_then(Path::parent).expect("test binary lives in target/<profile>/deps");
    let target_dir = profile_dir.parent().expect("target dir");
    let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    build
        .args(["build", "--package", "router-user", "--bin", "router"])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|name| name == "release") {
        build.arg("--release");
    }
    let status = build.status().expect("run cargo build for the router");
    assert!(status.success(), "building the router binary failed: {status}");
    let bin = profile_dir.join("router");
    assert!(bin.is_file(), "router binary not found at {}", bin.display());
    bin
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
