//! The report of a run's `results::Outcome`: a markdown file (tables with median (min–max), ratios ours / HAProxy,
//! the machine, the commit and the exact commands) and an SVG chart beside it, and the terminal's summary tables.
//! It reads the outcome and the plan's stated budget, never the runner's state. Absolute paths of the machine are
//! written relative to the repository or the bench's scratch directory (`paths`).

mod format;
mod paths;
mod svg;
mod tables;
mod targets;
mod tls;
mod xdp;
mod xdp_passthrough;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

pub use paths::ShownPaths;
pub use tables::summary_table;

use super::plan::{EXTRA_TIME_BUDGET, IDLE_WAIT, NOISE_LIMIT};
use super::results::xdp::XdpStatus;
use super::results::{Outcome, Sample};
use super::scenario::FIXED_RATE;
use svg::svg;
use tables::{bulk_table, churn_table, fixed_rate_table, lifecycle_table, scaling_table};
use targets::targets;
pub use tls::tls_table;
use tls::{http3_line, negotiated_table, passthrough_bulk_table, provider_table, unavailable_lines};
pub use xdp::xdp_summary;

/// Writes `<stamp>-<commit>.md` and `.svg` into `dir`, the markdown with its paths shown as `paths` says; returns
/// both paths.
pub fn write(outcome: &Outcome, dir: &Path, paths: &ShownPaths) -> anyhow::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let stamp = command_line("date", &["-u", "+%Y-%m-%dT%H%MZ"]);
    let commit = outcome.info.commit.split_whitespace().next().unwrap_or("unknown").to_string();
    let base = match (outcome.quick, outcome.only.is_empty()) {
        (true, _) => "quick".to_string(),
        (false, true) => format!("{stamp}-{commit}"),
        // A partial run says so in its name.
        (false, false) => format!("{stamp}-{commit}-only-{}", outcome.only.join("+")),
    };
    let markdown_path = dir.join(format!("{base}.md"));
    let svg_path = dir.join(format!("{base}.svg"));
    let svg_name = svg_path.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
    std::fs::write(&markdown_path, markdown(outcome, &stamp, &svg_name, paths))
        .with_context(|| format!("writing {}", markdown_path.display()))?;
    std::fs::write(&svg_path, svg(outcome, &stamp)).with_context(|| format!("writing {}", svg_path.display()))?;
    Ok((markdown_path, svg_path))
}

/// The results file. Every path in it (the commands, the HAProxy excerpt, failure messages) goes through `paths`.
fn markdown(outcome: &Outcome, stamp: &str, svg_name: &str, paths: &ShownPaths) -> String {
    let info = &outcome.info;
    let mut out = String::new();
    let _ = writeln!(out, "# Router vs HAProxy vs direct: {stamp}\n");
    if outcome.quick {
        out.push_str(
            "**Smoke run (`cargo xtask bench --quick`): one short run, the debug build of the router. The numbers \
             only show that the bench works; use `cargo xtask bench` for measurements.**\n\n",
        );
    }
    let _ = writeln!(out, "- commit: `{}`", info.commit);
    let _ = writeln!(out, "- machine: {}, {} CPUs, kernel {}", info.cpu_model, info.cores, info.kernel);
    let versions: Vec<String> =
        info.versions.iter().filter(|(_, v)| !v.is_empty()).map(|(name, v)| format!("{name}: `{v}`")).collect();
    let _ = writeln!(out, "- versions: {}", versions.join("; "));
    // The route-set groups' setting (an `--only xdp` run has none; the XDP group describes its own).
    let route_groups = !outcome.results.is_empty();
    if route_groups {
        let _ = writeln!(
            out,
            "- core split: each proxy alone on CPU1 (`taskset -c 1`: HAProxy `nbthread 1`; the router's tokio runtime sees \
             one CPU, so one worker thread, helpers pinned there too); wrk/h2load and nginx (one worker, 4 pods = \
             127.0.0.11-14, one port) on CPU0. Loopback only."
        );
    }
    let _ = writeln!(
        out,
        "- runs: median of {} (min–max), contenders back to back within each repetition, order rotated per \
         repetition; ratios pair the runs of the same repetition. Before each run both CPUs must be idle (<5% over \
         300 ms, waited up to {} s; {} waits timed out); a run where other processes took >{:.0}% of a CPU is run \
         again ({} reruns); waits and reruns stop after {} s in total so the bench stays bounded. Wall time {:.1} min.",
        outcome.runs,
        IDLE_WAIT.as_secs(),
        outcome.idle_timeouts,
        NOISE_LIMIT * 100.0,
        outcome.reruns,
        EXTRA_TIME_BUDGET.as_secs(),
        outcome.wall.as_secs_f64() / 60.0
    );
    if route_groups {
        let cookie = match outcome.cookies {
            Some(true) => {
                "**Both insert the sticky cookie** (the router sets one, so HAProxy gets \
                           `cookie <name> insert indirect nocache httponly`; wrk never sends it back)"
            }
            _ => {
                "**HAProxy runs without the sticky cookie** (the router inserts none: `disable_cookies` on every route)"
            }
        };
        let _ = writeln!(
            out,
            "- equal work: both lowercase Host, drop `Proxy`, append X-Forwarded-For/-Host/-Port/-Proto and `Forwarded`. \
             {cookie}. **Active health checks are off on both** (HAProxy without `check`; the router with \
             `ROUTER_BACKEND_CHECK_INTERVAL=24h`: one round at start, then none): with OpenShift's `check inter 5000ms` \
             each proxy would open 8,000 connections/s to the pods at 10,000 routes x 4 pods, on the load's CPU. HAProxy balances with `random` (OpenShift's default for a route with one service). HAProxy's \
             `maxconn` is lowered to what the machine's open-files limit allows (the bench opens a few hundred \
             connections)."
        );
        out.push_str(
            "- routes: N plain HTTP routes from one generator (`manifest-gen`, through `xtask/src/bench/routes.rs`), \
             host `rNNNNN.bench.example.com`, one Service with 4 pods each; the target is the route in the middle \
             (`r{N/2}`). HAProxy's configuration is what the OpenShift router would write for them \
             (`xtask/src/bench/haproxy.rs`; excerpt at the end); the router reads the same routes as manifests.\n",
        );
    }
    if outcome.results.iter().any(|r| r.scenario.load.is_tls()) {
        out.push_str(
            "- TLS: mixed route sets, N/4 each of HTTP (`r…`), edge (`e…`), reencrypt (`s…`) and passthrough (`p…`) \
             routes, the target of each kind in the middle of its kind. Certificates from the openssl CLI: a CA, one \
             RSA-2048 certificate for `*.bench.example.com` (both proxies' default certificate, HAProxy's `crt` and \
             the router's `DEFAULT_CERTIFICATE_PATH`, and every edge/reencrypt route's own certificate with the CA \
             as caCertificate; in a group with the HTTP/2 scenario, its target edge route carries a second RSA-2048 \
             certificate of its own, since the router, as OpenShift's, offers h2 only on a certificate exactly one \
             route uses), the pods' certificate (`*.bench.example.com`, `*.bench.svc`; reencrypt routes carry \
             the CA as destinationCACertificate). Passthrough and reencrypt pods are nginx TLS listeners (HTTP/2 \
             enabled). Every client (wrk, h2load, curl, s_client) offers TLS 1.3 with TLS_AES_256_GCM_SHA384 only \
             (`OPENSSL_CONF`, and `--tls13-ciphers` for h2load); wrk and h2load send the route's name as SNI and \
             connect to the contender's address (a wrk script overriding `wrk.resolve`, h2load `--connect-to`). \
             wrk resumes the session on each new connection; for full handshakes HAProxy runs with \
             `no-tls-tickets` and `tune.ssl.cachesize 0` and the direct pod with tickets and cache off; the \
             router has no such setting, so the negotiated table says whether it resumed. HAProxy's edge \
             traffic takes its extra hop (`be_sni` -> `fe_sni` over a unix socket with the PROXY protocol) as in \
             OpenShift: a structural cost the router does not have.\n",
        );
    }
    if route_groups {
        let _ = writeln!(
            out,
            "- µs/req is the proxy's CPU (utime+stime from /proc/PID/stat) per request at peak load; lower is better. \
             Ratios are router / HAProxy: above 1 is better for requests/s, below 1 is better for CPU and latency.\n"
        );
    } else {
        out.push('\n');
    }
    let _ = writeln!(out, "![chart]({svg_name})\n");

    if !outcome.results.is_empty() {
        out.push_str("## Proxy CPU, peak requests/s, latency at peak (wrk -t1 -c64)\n\n");
        out.push_str(&summary_table(outcome));
    }
    // Every run, named `scenario / contender`, the XDP group's included.
    let mut runs: Vec<(String, &Sample)> = outcome
        .results
        .iter()
        .flat_map(|r| {
            r.samples.iter().flat_map(move |(c, samples)| {
                samples.iter().map(move |s| (format!("{} / {}", r.scenario.title(), c.label()), s))
            })
        })
        .collect();
    if let Some(xdp) = &outcome.xdp {
        runs.extend(xdp::named_runs(xdp));
    }
    let errors: Vec<String> = runs
        .iter()
        .filter(|(_, s)| s.errors > 0)
        .map(|(name, s)| format!("{name} run {}: {} errors", s.rep + 1, s.errors))
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "\nRuns with errors: {}.", errors.join("; "));
    } else if !runs.is_empty() {
        out.push_str("\nNo run had errors (non-2xx responses or socket errors).\n");
    }
    if !outcome.failed_runs.is_empty() {
        let _ = writeln!(out, "\nRuns that failed (left out of the medians): {}.", outcome.failed_runs.join("; "));
    }
    let noisy: Vec<String> =
        runs.iter().filter(|(_, s)| s.noisy).map(|(name, s)| format!("{name} run {}", s.rep + 1)).collect();
    if !noisy.is_empty() {
        let _ = writeln!(out, "\nRuns kept although other processes took CPU: {}.", noisy.join("; "));
    }

    let fixed = fixed_rate_table(outcome);
    if !fixed.is_empty() {
        let _ = writeln!(
            out,
            "\n## Latency at a fixed rate ({}k requests/s, h2load --h1, 50 connections)\n",
            FIXED_RATE / 1000
        );
        out.push_str(&fixed);
    }
    let bulk = bulk_table(outcome);
    if !bulk.is_empty() {
        out.push_str("\n## Bulk (1 MiB body, wrk -c8)\n\n");
        out.push_str(&bulk);
    }
    let scaling = scaling_table(outcome);
    if !scaling.is_empty() {
        out.push_str("\n## Route count scaling (issue 3: the router's lookup does not grow with the route count)\n\n");
        out.push_str(&scaling);
    }
    let churn = churn_table(outcome);
    if !churn.is_empty() {
        let _ = writeln!(
            out,
            "\n## Route churn under load (route additions, the number planned in the table; HAProxy: rewrite config + maps, reload with `-x` \
             socket transfer and `-sf`; router: one more manifest file, written by rename)\n"
        );
        out.push_str(&churn);
        out.push_str(
            "\nChange-to-traffic runs from the start of writing the change until the new route answers 200 (polled \
             every 2 ms on new connections); the router's manifest watch reloads as soon as a write ends (the rename), \
             re-reading only the files named by the change.\n",
        );
    }
    let lifecycle = lifecycle_table(outcome);
    if !lifecycle.is_empty() {
        out.push_str("\n## Start time and memory\n\n");
        out.push_str(&lifecycle);
    }
    let tls = tls_table(outcome);
    let unavailable = unavailable_lines(outcome);
    if !tls.is_empty() || !unavailable.is_empty() {
        out.push_str("\n## TLS: edge, reencrypt, passthrough (wrk -t1 -c64; HTTP/2: h2load -c16 -m10)\n\n");
        out.push_str(&unavailable);
        if !unavailable.is_empty() {
            out.push('\n');
        }
        out.push_str(&tls);
        out.push_str(
            "\nµs/unit is proxy CPU per request (keep-alive, HTTP/2) or per connection (new connections: one request \
             each). New connections saturate the client core too (the handshake costs the client as much): compare \
             µs per connection.\n",
        );
        let http3 = http3_line(outcome);
        if !http3.is_empty() {
            out.push('\n');
            out.push_str(&http3);
        }
    }
    let providers = provider_table(outcome);
    if !providers.is_empty() {
        out.push_str("\n## The router's TLS crypto provider: ring (default) vs aws-lc-rs (ROUTER_TLS_PROVIDER)\n\n");
        out.push_str(&providers);
        out.push_str(
            "\nOne router binary started twice on the same route set, run back to back with HAProxy in every \
             repetition; ratios are paired run by run. The default changes to aws-lc-rs only where it is faster on \
             full handshakes and not slower elsewhere.\n",
        );
    }
    let passthrough = passthrough_bulk_table(outcome);
    if !passthrough.is_empty() {
        out.push_str("\n## Passthrough download (64 MiB body from a TLS pod, wrk -c4)\n\n");
        out.push_str(&passthrough);
    }
    let negotiated = negotiated_table(outcome);
    if !negotiated.is_empty() {
        out.push_str("\n## TLS as negotiated (openssl s_client probe before the runs)\n\n");
        out.push_str(&negotiated);
    }
    if let Some(xdp) = &outcome.xdp {
        out.push_str(&xdp::xdp_section(xdp));
    }
    let targets = targets(outcome);
    if !targets.is_empty() && !outcome.quick {
        out.push_str("\n## Targets (issue 7)\n\n");
        out.push_str(&targets);
    }
    let mut not_run: Vec<String> = Vec::new();
    if outcome.cookies == Some(false) {
        not_run.push("HTTP with the sticky cookie inserted by both: not yet supported by the router".into());
    }
    if !outcome.only.is_empty() {
        not_run.push(format!("groups other than `--only {}`", outcome.only.join(",")));
    }
    match outcome.xdp.as_ref().map(|xdp| &xdp.status) {
        None if !outcome.quick && outcome.only.is_empty() => not_run.push("the XDP group".into()),
        Some(XdpStatus::Skipped(reason)) => not_run.push(format!("the XDP group: skipped ({reason})")),
        _ => {}
    }
    if !not_run.is_empty() {
        out.push_str("\n## Not run\n\n");
        for name in not_run {
            let _ = writeln!(out, "- {name}");
        }
    }

    out.push_str("\n## Commands\n\n```sh\n");
    for command in &outcome.setup_commands {
        let _ = writeln!(out, "{command}");
    }
    for result in &outcome.results {
        let _ = writeln!(out, "# {}", result.scenario.title());
        for (contender, command) in &result.commands {
            let _ = writeln!(out, "{command}  # {}", contender.label());
        }
    }
    for churn in &outcome.churn {
        let _ = writeln!(out, "# route churn, {}\n{}", churn.contender.label(), churn.command);
    }
    out.push_str("```\n\nRandom path script (`-s random-path.lua`):\n\n```lua\n");
    out.push_str(&outcome.random_path_script);
    out.push_str("```\n");
    if !outcome.haproxy_sample.is_empty() {
        out.push_str("\n<details><summary>Generated HAProxy configuration, 10 routes (excerpt)</summary>\n\n```\n");
        out.push_str(&outcome.haproxy_sample);
        out.push_str("```\n</details>\n");
    }
    paths.show(&out)
}

fn command_line(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::machine::MachineInfo;
    use super::super::results::ScenarioResult;
    use super::super::scenario::{Contender, Load, Scenario};
    use super::*;

    /// A run whose commands name the work directory, the repository and a binary beside it.
    fn outcome() -> Outcome {
        let scenario = Scenario {
            load: Load::RandomPath,
            routes: 10,
            contenders: vec![Contender::Haproxy, Contender::Router],
            duration: Duration::from_secs(8),
            connections: 64,
            access_log: false,
            threads: 1,
        };
        let mut result = ScenarioResult::new(&scenario);
        result.commands.insert(
            Contender::Router,
            "taskset -c 0 wrk -t1 -c64 -d8s --latency -s /tmp/xtask-bench-4242/random-path.lua http://127.0.0.1:1/"
                .into(),
        );
        Outcome {
            info: MachineInfo {
                cpu_model: "test CPU".into(),
                cores: 2,
                kernel: "6.18".into(),
                commit: "0123456789ab".into(),
                versions: Vec::new(),
            },
            quick: false,
            runs: 1,
            results: vec![result],
            lifecycle: Vec::new(),
            churn: Vec::new(),
            setup_commands: vec![
                "taskset -c 1 haproxy -f /tmp/xtask-bench-4242/haproxy-10/haproxy.cfg -db".into(),
                "taskset -c 1 /home/ci/repo/target/release/router --manifests /tmp/xtask-bench-4242/manifests-10"
                    .into(),
                "taskset -c 1 nsenter --net=<node> /home/ci/bins/router-abc --bpf-pin-dir /sys/fs/bpf/<pins>".into(),
            ],
            reruns: 0,
            idle_timeouts: 0,
            h2load: true,
            wall: Duration::from_secs(60),
            haproxy_sample: "bind unix@/tmp/xtask-bench-4242/haproxy-10/run/fe_sni.sock\n".into(),
            failed_runs: Vec::new(),
            cookies: Some(true),
            xdp: None,
            only: vec!["http-10".into()],
            random_path_script: String::new(),
        }
    }

    #[test]
    fn the_commands_name_no_absolute_path_of_the_machine() {
        let paths = ShownPaths::new(
            Path::new("/tmp/xtask-bench-4242"),
            Path::new("/home/ci/repo"),
            &[Path::new("/home/ci/bins/router-abc")],
        );
        let text = markdown(&outcome(), "2026-01-01T0000Z", "chart.svg", &paths);
        let commands = &text[text.find("## Commands").expect("a commands section")..];
        for line in [
            "taskset -c 1 haproxy -f <work>/haproxy-10/haproxy.cfg -db\n",
            "taskset -c 1 target/release/router --manifests <work>/manifests-10\n",
            "taskset -c 1 nsenter --net=<node> ../bins/router-abc --bpf-pin-dir /sys/fs/bpf/<pins>\n",
            "-s <work>/random-path.lua http://127.0.0.1:1/  # router\n",
            "bind unix@<work>/haproxy-10/run/fe_sni.sock\n",
        ] {
            assert!(commands.contains(line), "{line:?} in\n{commands}");
        }
        assert!(!text.contains("/tmp/") && !text.contains("/home/"), "{text}");
    }
}
