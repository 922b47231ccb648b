//! One run of one contender: wait for idle CPUs, run the load generator (with whatever must run beside it, such as
//! the XDP group's SYN flood), read the proxy's and the machine's CPU from /proc, and run again (within the bench's
//! extra-time budget) when other processes took noticeable CPU meanwhile.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::backend::{HUGE_PATH, LARGE_PATH};
use super::beside::Beside;
use super::h3load::H3load;
use super::hostile::HostileClients;
use super::loadgen::{H2load, LatencyOutput, Wrk, CLIENT_CPU};
use super::machine::{wait_for_idle, CpuBusy};
use super::plan::{EXTRA_TIME_BUDGET, IDLE_WAIT, NOISE_LIMIT};
use super::process::{self, reaped_children_ticks};
use super::results::Sample;
use super::scenario::{Load, Scenario, FIXED_RATE};
use super::stage::Stage;

/// Concurrent streams per connection of the HTTP/2 runs (h2load `-m`).
const HTTP2_STREAMS: u32 = 10;
/// wrk's response timeout for the 64 MiB passthrough body (its default, 2 s, is too short on a shared core).
const BULK_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a contender is reached, and the PID whose CPU is the proxy's.
pub struct Endpoint {
    pub addr: SocketAddr,
    /// The route's host (Host header; for TLS also the SNI); none: straight to a pod over HTTP.
    pub host: Option<String>,
    pub proxy_pid: Option<u32>,
}

/// The load generator command of one run.
enum LoadRun {
    Wrk(Wrk),
    H2load(H2load),
    H3load(H3load),
}

/// The measuring side of a bench run: the clock tick rate, the extra-time budget spent so far (idle waits and
/// reruns), and the processes whose CPU is the run's own.
pub struct Meter {
    hz: f64,
    quick: bool,
    /// The pods (nginx): their CPU is the run's own, on the load's CPU.
    pods_pid: u32,
    /// Spent on idle waits and reruns so far.
    pub extra_time: Duration,
    pub reruns: u32,
    pub idle_timeouts: u32,
    /// The proxies of the current group: every one's CPU is the run's own (the idle one's timers are not another
    /// process's noise).
    pub proxy_pids: Vec<u32>,
}

impl Meter {
    pub fn new(stage: &Stage) -> Meter {
        Meter {
            hz: process::clock_ticks_per_second(),
            quick: stage.quick,
            pods_pid: stage.backends.proc.pid(),
            extra_time: Duration::ZERO,
            reruns: 0,
            idle_timeouts: 0,
            proxy_pids: Vec::new(),
        }
    }

    /// Waits for idle CPUs (docs/benchmarking.md §6) while the extra-time budget lasts; the wait counts against it.
    pub fn wait_for_idle(&mut self) {
        if self.quick || self.extra_time >= EXTRA_TIME_BUDGET {
            return;
        }
        let start = Instant::now();
        let limit = IDLE_WAIT.min(EXTRA_TIME_BUDGET - self.extra_time);
        if !wait_for_idle(limit, self.hz) {
            self.idle_timeouts += 1;
        }
        // The first 300 ms window is part of every run's plan; longer waits are extra.
        self.extra_time += start.elapsed().saturating_sub(Duration::from_millis(300));
    }

    /// One run of `scenario` against `endpoint`: waits for idle CPUs, runs the load, reads the proxy's CPU, and
    /// reruns (within the budget) when other processes took noticeable CPU meanwhile.
    pub fn measure(
        &mut self,
        stage: &Stage,
        scenario: &Scenario,
        endpoint: &Endpoint,
        rep: u32,
    ) -> anyhow::Result<(Sample, String)> {
        // With the proxies on every CPU the per-CPU noise accounting (proxies on CPU 1) does not hold.
        self.measure_load(stage, scenario, endpoint, rep, Vec::new(), scenario.threads <= 1)
    }

    /// `measure`, with more processes whose CPU is the run's own (`ours`: PID and CPU), and the noise check off when
    /// `check_noise` is false (work the kernel does for the proxy in kworker threads cannot be told apart from
    /// other processes').
    pub fn measure_load(
        &mut self,
        stage: &Stage,
        scenario: &Scenario,
        endpoint: &Endpoint,
        rep: u32,
        ours: Vec<(u32, usize)>,
        check_noise: bool,
    ) -> anyhow::Result<(Sample, String)> {
        let run = load_run(stage, scenario, endpoint);
        let duration = scenario.duration;
        let watch = Watch { proxy_pid: endpoint.proxy_pid, ours, check_noise };
        if scenario.load == Load::FixedRateHostile {
            let host = endpoint.host.as_deref().unwrap_or_default();
            // They stay through the load's warm-up, run and slack.
            let seconds = duration.as_secs() + 20;
            let start = || HostileClients::start(&stage.work, endpoint.addr, host, LARGE_PATH, seconds);
            let (sample, command, hostile) = self.measure_with(&watch, start, || run.measure(rep, duration))?;
            hostile.finish();
            return Ok((sample, command));
        }
        let (sample, command, ()) = self.measure_with(&watch, || Ok(()), || run.measure(rep, duration))?;
        Ok((sample, command))
    }

    /// One run: waits for idle CPUs, calls `start` (what must run beside the load, e.g. a flood, started after the
    /// idle wait and before the measured window), runs `load`, reads the proxy's and the machine's CPU, and reruns
    /// (within the budget) when other processes took noticeable CPU meanwhile. Returns what `start` made, still
    /// running, for the caller to finish.
    pub fn measure_with<T: Beside>(
        &mut self,
        watch: &Watch,
        mut start: impl FnMut() -> anyhow::Result<T>,
        mut load: impl FnMut() -> anyhow::Result<Measured>,
    ) -> anyhow::Result<(Sample, String, T)> {
        let mut attempt = 0;
        loop {
            self.wait_for_idle();
            let beside = start()?;
            let beside_cpu = CLIENT_CPU as usize;
            let ours: Vec<(u32, usize)> =
                watch.ours.iter().copied().chain(beside.pids().into_iter().map(|pid| (pid, beside_cpu))).collect();
            // Ticks of those processes, per CPU they run on.
            let ours_ticks = || -> [u64; 2] {
                let mut ticks = [0; 2];
                for (pid, cpu) in &ours {
                    ticks[(*cpu).min(1)] += process::cpu_ticks(*pid).unwrap_or(0);
                }
                ticks
            };
            let busy_before = CpuBusy::sample();
            let proxy_before = watch.proxy_pid.map(process::cpu_ticks).transpose()?;
            let proxies_before: u64 = self.proxy_pids.iter().filter_map(|pid| process::cpu_ticks(*pid).ok()).sum();
            let nginx_before = process::cpu_ticks(self.pods_pid)?;
            let ours_before = ours_ticks();
            let children_before = reaped_children_ticks()?;
            let wall = Instant::now();

            let Measured { mut sample, command, requests } = load()?;

            let seconds = wall.elapsed().as_secs_f64();
            let busy_after = CpuBusy::sample();
            let busy = busy_after.since(&busy_before);
            let proxy_ticks = match (watch.proxy_pid, proxy_before) {
                (Some(pid), Some(before)) => Some(process::cpu_ticks(pid)?.saturating_sub(before)),
                _ => None,
            };
            let nginx_ticks = process::cpu_ticks(self.pods_pid)?.saturating_sub(nginx_before);
            let ours_after = ours_ticks();
            let other_ours = [0, 1].map(|cpu| ours_after[cpu].saturating_sub(ours_before[cpu]));
            let client_ticks = reaped_children_ticks()?.saturating_sub(children_before);

            if let Some(ticks) = proxy_ticks {
                let cpu_seconds = ticks as f64 / self.hz;
                sample.cpu_percent = Some(100.0 * cpu_seconds / seconds);
                if requests > 0.0 {
                    sample.us_per_request = Some(cpu_seconds * 1e6 / requests);
                }
            }
            sample.machine_cpu_percent =
                Some(100.0 * busy_after.machine_since(&busy_before) as f64 / self.hz / seconds.max(1e-9));
            // Every proxy of the group is ours (the idle one's timers are not another process's noise), on CPU1; so
            // are nginx, the load generator and what runs beside the load, on CPU0, and `watch.ours` on theirs.
            let proxies_now: u64 = self.proxy_pids.iter().filter_map(|pid| process::cpu_ticks(*pid).ok()).sum();
            let ours = [
                nginx_ticks + client_ticks + other_ours[0],
                proxies_now.saturating_sub(proxies_before) + other_ours[1],
            ];
            let allowed = (NOISE_LIMIT * seconds * self.hz).max(5.0);
            let others: Vec<f64> =
                busy.iter().zip(ours).map(|(total, ours)| total.saturating_sub(ours) as f64).collect();
            let noisy = watch.check_noise && others.iter().any(|ticks| *ticks > allowed);
            if noisy && !self.quick && attempt < 2 && self.extra_time < EXTRA_TIME_BUDGET {
                attempt += 1;
                self.reruns += 1;
                self.extra_time += wall.elapsed();
                println!(
                    "bench:   other processes took CPU ({:.0}% / {:.0}% of CPU0 / CPU1): running again",
                    100.0 * others[0] / (seconds * self.hz),
                    100.0 * others.get(1).copied().unwrap_or(0.0) / (seconds * self.hz)
                );
                continue;
            }
            sample.noisy = noisy && !self.quick;
            return Ok((sample, command, beside));
        }
    }
}

/// The command line of `scenario`'s load against `endpoint`.
fn load_run(stage: &Stage, scenario: &Scenario, endpoint: &Endpoint) -> LoadRun {
    let load = scenario.load;
    let host = endpoint.host.clone();
    if !load.is_tls() {
        let path = if load == Load::Bulk { LARGE_PATH } else { "/" };
        let url = format!("http://{}{path}", endpoint.addr);
        if matches!(load, Load::FixedRate | Load::FixedRateHostile) {
            let log = stage.work.join("h2load.log");
            return LoadRun::H2load(H2load::fixed_rate(
                url,
                host,
                scenario.connections,
                FIXED_RATE,
                scenario.duration,
                log,
            ));
        }
        let mut wrk = Wrk::new(url, host, scenario.connections, scenario.duration);
        wrk.script = (load == Load::RandomPath).then(|| stage.script.clone());
        wrk.close = load.closes();
        return LoadRun::Wrk(wrk);
    }
    // TLS: the URL names the route (SNI), the connection goes to the endpoint's address.
    let name = host.clone().unwrap_or_default();
    let path = if load == Load::PassthroughBulk { HUGE_PATH } else { "/" };
    let url = format!("https://{name}:{}{path}", endpoint.addr.port());
    if load == Load::EdgeHttp3 {
        return LoadRun::H3load(H3load {
            binary: stage.h3load.clone(),
            url: format!("https://{name}/"),
            connect_to: endpoint.addr,
            ca: stage.pki.ca.clone(),
            clients: scenario.connections,
            streams: HTTP2_STREAMS,
            duration: scenario.duration,
            log: stage.work.join("h3load.log"),
            requests: None,
        });
    }
    if load == Load::EdgeHttp2 {
        return LoadRun::H2load(H2load {
            url,
            host,
            clients: scenario.connections,
            rate: None,
            http1: false,
            streams: HTTP2_STREAMS,
            duration: scenario.duration,
            log: stage.work.join("h2load.log"),
            connect_to: Some(endpoint.addr),
            client_config: Some(stage.client_config.clone()),
        });
    }
    let mut wrk = Wrk::new(url, host, scenario.connections, scenario.duration);
    wrk.script = Some(stage.connect_script(endpoint.addr.ip()));
    wrk.close = load.closes();
    wrk.timeout = (load == Load::PassthroughBulk).then_some(BULK_TIMEOUT);
    wrk.env = vec![("OPENSSL_CONF".into(), stage.client_config.display().to_string())];
    LoadRun::Wrk(wrk)
}

/// What the load of one run measured, before the CPU readings are added.
pub struct Measured {
    pub sample: Sample,
    /// The load generator's command line, for the results.
    pub command: String,
    /// Requests the CPU readings are divided by.
    pub requests: f64,
}

/// How a run is watched besides its load generator (reaped, so its CPU is counted as the bench's own).
pub struct Watch {
    /// The proxy whose CPU per request the sample reports.
    pub proxy_pid: Option<u32>,
    /// Other processes busy for the run, with the CPU each runs on (pods in network namespaces, the kernel's
    /// softirq threads doing their packets): their CPU is not noise.
    pub ours: Vec<(u32, usize)>,
    /// Rerun when other processes took noticeable CPU; off where the kernel does the proxy's work in kworker
    /// threads (a sockmap relay), which cannot be told apart from other processes'.
    pub check_noise: bool,
}

impl LoadRun {
    /// Runs the load once.
    fn measure(&self, rep: u32, duration: Duration) -> anyhow::Result<Measured> {
        match self {
            LoadRun::H2load(h2load) => Ok(logged_measured(h2load.run()?, h2load.command_line(), rep, duration)),
            LoadRun::H3load(h3load) => Ok(logged_measured(h3load.run()?, h3load.command_line(), rep, duration)),
            LoadRun::Wrk(wrk) => wrk_measured(wrk, rep),
        }
    }
}

/// A run of a load generator that logs every request after a one-second warm-up (h2load, h3load).
fn logged_measured(out: LatencyOutput, command: String, rep: u32, duration: Duration) -> Measured {
    let sample = Sample {
        rep,
        requests_per_second: out.requests as f64 / out.seconds.max(1e-9),
        p50_ms: out.p50_ms,
        p99_ms: out.p99_ms,
        p999_ms: Some(out.p999_ms),
        errors: out.failed,
        ..Sample::default()
    };
    // The log covers the measured duration; the CPU also covers the warm-up second.
    let requests = (out.requests as f64) * (1.0 + 1.0 / duration.as_secs_f64().max(1.0));
    Measured { sample, command, requests }
}

/// Runs `wrk` once: its sample (before the CPU readings) and command line.
pub fn wrk_measured(wrk: &Wrk, rep: u32) -> anyhow::Result<Measured> {
    let out = wrk.run()?;
    let sample = Sample {
        rep,
        requests_per_second: out.requests_per_second,
        p50_ms: out.p50_ms,
        p99_ms: out.p99_ms,
        errors: out.non_2xx_3xx + out.socket_errors,
        bytes_per_second: out.bytes_per_second,
        ..Sample::default()
    };
    Ok(Measured { sample, command: wrk.command_line(), requests: out.requests as f64 })
}
