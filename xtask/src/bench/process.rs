//! Processes the bench starts (pinned with `taskset`), stopped by PID when dropped; their CPU time and memory from
//! /proc, and the kernel's softirq threads; programs on PATH; free loopback ports; a minimal HTTP/1.1 probe.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

/// A process started by the bench. Dropping it stops it (SIGTERM, then SIGKILL after a grace period) and reaps it.
pub struct Proc {
    pub name: String,
    child: Child,
}

impl Proc {
    /// Runs `program args` pinned to `cpu`, stdout and stderr appended to `log`.
    pub fn spawn(name: &str, cpu: u32, program: &Path, args: &[String], log: &Path) -> anyhow::Result<Proc> {
        Self::spawn_with_env(name, cpu, program, args, log, &[])
    }

    /// `spawn` with extra environment variables.
    pub fn spawn_with_env(
        name: &str,
        cpu: u32,
        program: &Path,
        args: &[String],
        log: &Path,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Proc> {
        Self::spawn_pinned(name, &cpu.to_string(), program, args, log, env)
    }

    /// `spawn_with_env` on a CPU list (`taskset -c` syntax: `1`, `0,1`).
    pub fn spawn_pinned(
        name: &str,
        cpus: &str,
        program: &Path,
        args: &[String],
        log: &Path,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Proc> {
        let out = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone().context("log file handle")?;
        let mut command = Command::new("taskset");
        command.arg("-c").arg(cpus).arg(program).args(args).envs(env.iter().copied());
        let child = die_with_parent(&mut command)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("starting {} (taskset from util-linux)", program.display()))?;
        Ok(Proc { name: name.into(), child })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Still running (not exited and reaped).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Resident set size in KiB.
    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).context("reading status")?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .context("no VmRSS line")
    }

    pub fn signal(&self, signal: i32) {
        signal_child(&self.child, signal);
    }

    /// Waits for exit with a deadline; true if it exited.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if !self.running() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// SIGTERM, up to 3 s to exit, then SIGKILL; always reaps.
    pub fn stop(&mut self) {
        if !self.running() {
            return;
        }
        self.signal(libc::SIGTERM);
        if !self.wait_exit(Duration::from_secs(3)) {
            println!("bench: {} (pid {}) ignored SIGTERM for 3 s: killing it", self.name, self.pid());
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Makes the child get SIGKILL when the bench dies (even by SIGKILL), so nothing it started outlives it.
pub fn die_with_parent(command: &mut Command) -> &mut Command {
    // SAFETY: the closure runs in the forked child before exec and only calls prctl(2), which is
    // async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// Runs `command` with its output captured; kills it if it has not finished within `limit`.
pub fn output_within(command: &mut Command, limit: Duration) -> anyhow::Result<std::process::Output> {
    output_within_from(command, Stdio::null(), limit)
}

/// `output_within` with `stdin` as the child's standard input.
pub fn output_within_from(
    command: &mut Command,
    stdin: Stdio,
    limit: Duration,
) -> anyhow::Result<std::process::Output> {
    let mut child = die_with_parent(command)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {:?}", command.get_program()))?;
    // Read both pipes on threads so a chatty child cannot block on a full pipe.
    let mut stdout = child.stdout.take().context("stdout pipe")?;
    let mut stderr = child.stderr.take().context("stderr pipe")?;
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let exited = wait_until(limit, Duration::from_millis(20), || !matches!(child.try_wait(), Ok(None)));
    if exited.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        bail!("{:?} did not finish within {} s: killed", command.get_program(), limit.as_secs());
    }
    let status = child.wait().context("waiting for the child")?;
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Ok(std::process::Output { status, stdout, stderr })
}

/// Sends `signal` to our own child (by its PID, while it is not yet reaped, so the PID cannot be reused).
pub fn signal_child(child: &Child, signal: i32) {
    let Ok(pid) = i32::try_from(child.id()) else { return };
    // SAFETY: kill(2) takes plain integers; the PID is our unreaped child's, so it names that process.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// utime + stime of process `pid` (all its threads), in clock ticks.
pub fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat =
        std::fs::read_to_string(format!("/proc/{pid}/stat")).with_context(|| format!("reading stat of {pid}"))?;
    stat_ticks(&stat, 11)
}

/// PID and name (`/proc/PID/comm`) of the processes whose name starts with `prefix`, e.g. the kernel's
/// `ksoftirqd/<cpu>` threads.
pub fn pids_named(prefix: &str) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            comm.starts_with(prefix).then(|| (pid, comm.trim().to_string()))
        })
        .collect()
}

/// The kernel's `ksoftirqd/<cpu>` threads and the CPU each serves.
pub fn softirq_threads() -> Vec<(u32, usize)> {
    pids_named("ksoftirqd/")
        .into_iter()
        .filter_map(|(pid, name)| Some((pid, name.strip_prefix("ksoftirqd/")?.parse().ok()?)))
        .collect()
}

/// Whether `program` is an executable file in a PATH directory.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Clock ticks of children this process has waited for (cutime + cstime): how the CPU of a finished `wrk` is read.
pub fn reaped_children_ticks() -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat")?;
    stat_ticks(&stat, 13)
}

/// Sum of the two fields at `index` and `index + 1`, counted from the state field after the command name.
fn stat_ticks(stat: &str, index: usize) -> anyhow::Result<u64> {
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).context("stat format")?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |i: usize| -> anyhow::Result<u64> {
        fields.get(i).and_then(|f| f.parse().ok()).with_context(|| format!("stat field {i}"))
    };
    Ok(field(index)? + field(index + 1)?)
}

/// Clock ticks per second (`getconf CLK_TCK`).
pub fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// A port that is free on every one of `ips` right now.
pub fn free_port(ips: &[Ipv4Addr]) -> anyhow::Result<u16> {
    for _ in 0..50 {
        let first = TcpListener::bind((ips[0], 0)).context("binding a probe port")?;
        let port = first.local_addr()?.port();
        if ips[1..].iter().all(|ip| TcpListener::bind((*ip, port)).is_ok()) {
            return Ok(port);
        }
    }
    bail!("no port free on all of {ips:?}")
}

/// Status code of `GET path` with `Host: host` on a new connection, or an error.
pub fn http_status(addr: SocketAddr, host: &str, path: &str, timeout: Duration) -> anyhow::Result<u16> {
    http_head(addr, host, path, timeout).map(|(status, _)| status)
}

/// Status code and response header lines (`name: value`, names lowercased) of `GET path` with `Host: host`.
pub fn http_head(addr: SocketAddr, host: &str, path: &str, timeout: Duration) -> anyhow::Result<(u16, Vec<String>)> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_nodelay(true)?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")?;
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| status_line.strip_prefix("HTTP/1.0 "))
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("no status line from {addr}: {status_line:?}"))?;
    let headers = lines
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| format!("{}: {}", name.trim().to_ascii_lowercase(), value.trim()))
        .collect();
    Ok((status, headers))
}

/// The last `lines` lines of a log file, for error messages (the work directory is removed at the end).
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let tail = all[all.len().saturating_sub(lines)..].join("\n");
    format!("{}:\n{tail}", path.display())
}

/// Polls `check` every `every` until it is true or `timeout` passes; returns the time it took.
pub fn wait_until(timeout: Duration, every: Duration, mut check: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if check() {
            return Some(start.elapsed());
        }
        if start.elapsed() >= timeout {
            return None;
        }
        std::thread::sleep(every);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let stat = "42 (wrk (x) y) S 1 42 42 0 -1 4194560 100 0 0 0 250 30 7 3 20 0 1 0 100 1000 10";
        assert_eq!(stat_ticks(stat, 11).expect("utime+stime"), 280);
        assert_eq!(stat_ticks(stat, 13).expect("cutime+cstime"), 10);
    }

    #[test]
    fn processes_are_found_by_name() {
        let comm = std::fs::read_to_string("/proc/self/comm").expect("own comm");
        assert!(pids_named(comm.trim()).contains(&(std::process::id(), comm.trim().to_string())));
        assert!(pids_named("no-such-process-name-xyz").is_empty());
    }

    #[test]
    fn own_cpu_ticks_are_readable() {
        assert!(cpu_ticks(std::process::id()).is_ok());
        assert!(reaped_children_ticks().is_ok());
    }
}
