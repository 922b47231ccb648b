//! The machine: what it is (for the results), and whether anything else is using its CPUs (docs/benchmarking.md
//! §6: wait until both CPUs are idle before a run, and reject a run where other processes took noticeable CPU).

use std::process::Command;
use std::time::{Duration, Instant};

/// Busy clock ticks per CPU, from /proc/stat.
#[derive(Clone, Debug, Default)]
pub struct CpuBusy {
    /// user + nice + system: time of processes, the part that can be told apart by process.
    pub per_cpu: Vec<u64>,
    /// user + nice + system + irq + softirq: everything the machine did, including the network stack's work in
    /// interrupt context (XDP, netfilter, a sockmap relay) that no process is charged for.
    pub with_irq: Vec<u64>,
}

impl CpuBusy {
    pub fn sample() -> CpuBusy {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let (per_cpu, with_irq) = stat
            .lines()
            .filter(|line| line.starts_with("cpu") && line.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
            .map(|line| {
                // user nice system idle iowait irq softirq ...
                let fields: Vec<u64> = line.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
                let field = |i: usize| fields.get(i).copied().unwrap_or(0);
                let processes = field(0) + field(1) + field(2);
                (processes, processes + field(5) + field(6))
            })
            .unzip();
        CpuBusy { per_cpu, with_irq }
    }

    /// Ticks each CPU was busy with processes between `earlier` and `self`.
    pub fn since(&self, earlier: &CpuBusy) -> Vec<u64> {
        self.per_cpu.iter().zip(&earlier.per_cpu).map(|(now, then)| now.saturating_sub(*then)).collect()
    }

    /// Ticks the whole machine was busy, interrupt context included, between `earlier` and `self`.
    pub fn machine_since(&self, earlier: &CpuBusy) -> u64 {
        self.with_irq.iter().zip(&earlier.with_irq).map(|(now, then)| now.saturating_sub(*then)).sum()
    }
}

/// Waits (at most `limit`) until every CPU is below 5% busy over a 300 ms window; returns false if it never was.
pub fn wait_for_idle(limit: Duration, ticks_per_second: f64) -> bool {
    let start = Instant::now();
    let window = Duration::from_millis(300);
    let allowed = (ticks_per_second * window.as_secs_f64() * 0.05).max(1.0) as u64;
    loop {
        let before = CpuBusy::sample();
        std::thread::sleep(window);
        let busy = CpuBusy::sample().since(&before);
        if busy.iter().all(|ticks| *ticks <= allowed) {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
    }
}

/// What the results say about the machine and the tree.
#[derive(Clone, Debug)]
pub struct MachineInfo {
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    pub commit: String,
    pub versions: Vec<(String, String)>,
}

impl MachineInfo {
    pub fn collect() -> MachineInfo {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|line| line.strip_prefix("model name"))
            .map(|rest| rest.trim_start_matches([' ', '\t', ':']).trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let cores = std::thread::available_parallelism().map_or(0, usize::from);
        let kernel = first_line("uname", &["-r"]);
        let mut commit = first_line("git", &["rev-parse", "--short=12", "HEAD"]);
        if !first_line("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty() {
            commit.push_str(" (with uncommitted changes)");
        }
        let versions = vec![
            ("haproxy".into(), first_line("haproxy", &["-v"])),
            ("nginx".into(), first_line_stderr("nginx", &["-v"])),
            ("wrk".into(), first_line_stderr("wrk", &["-v"]).split(" [").next().unwrap_or("").to_string()),
            ("h2load".into(), first_line("h2load", &["--version"])),
            ("rustc".into(), first_line("rustc", &["--version"])),
        ];
        MachineInfo { cpu_model, cores, kernel, commit, versions }
    }
}

fn first_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").trim().to_string())
        .unwrap_or_default()
}

/// Some tools print their version on stderr (nginx) or on stdout with a failing status (wrk).
fn first_line_stderr(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|out| {
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            text.lines().next().unwrap_or("").trim().to_string()
        })
        .unwrap_or_default()
}
