//! Loopback throughput of a direct connection, the splice(2) relay and the sockmap relay (ignored
//! test, root, run by `bench/passthrough-sockmap.sh`): one direction, a fixed byte count per run, blocking
//! sender and sink threads, the relay on its own single-thread runtime. Prints wall time, throughput, the
//! relay thread's CPU, this process's CPU and the whole machine's busy CPU (from /proc/stat; other load
//! on the machine shows up there), each per GB.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::SockmapRelay;
use crate::relay::splice::splice_relay;
use crate::relay::sys;

const BYTES: u64 = 4 << 30;
const CHUNK: usize = 256 << 10;

#[derive(Clone, Copy, Debug)]
enum Mode {
    Direct,
    Userspace,
    Sockmap,
}

/// Busy CPU seconds of the whole machine (all but idle and iowait).
fn machine_busy() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let line = stat.lines().next().expect("cpu line");
    let fields: Vec<f64> = line.split_whitespace().skip(1).map(|f| f.parse().expect("number")).collect();
    let idle = fields[3] + fields[4];
    let hz = sys::clock_ticks_per_second();
    (fields.iter().take(8).sum::<f64>() - idle) / hz
}

fn pair(listener: &TcpListener) -> (TcpStream, TcpStream) {
    let connected = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
    (connected, listener.accept().expect("accept").0)
}

fn run(mode: Mode, sockmap: &std::sync::Arc<SockmapRelay>) {
    let front = TcpListener::bind("127.0.0.1:0").expect("bind");
    let back = TcpListener::bind("127.0.0.1:0").expect("bind");
    let (mut client, router_client) = pair(&front);
    let (router_pod, mut pod) = pair(&back);
    let relay_cpu = match mode {
        Mode::Direct => {
            // The client's bytes go straight to the pod: no router in between.
            drop((router_client, router_pod));
            let (c, p) = pair(&back);
            (client, pod) = (c, p);
            None
        }
        Mode::Userspace | Mode::Sockmap => {
            let sockmap = sockmap.clone();
            Some(std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
                rt.block_on(async move {
                    router_client.set_nonblocking(true).expect("nonblocking");
                    router_pod.set_nonblocking(true).expect("nonblocking");
                    let c = tokio::net::TcpStream::from_std(router_client).expect("tokio");
                    let p = tokio::net::TcpStream::from_std(router_pod).expect("tokio");
                    let before = sys::cpu_seconds(libc::RUSAGE_THREAD);
                    match mode {
                        Mode::Sockmap => sockmap
                            .relay_in_kernel(c, p, Duration::from_secs(30))
                            .await
                            .expect("taken by the sockmap relay")
                            .expect("relay"),
                        _ => splice_relay(c, p, Duration::from_secs(30)).await.expect("relay"),
                    };
                    sys::cpu_seconds(libc::RUSAGE_THREAD) - before
                })
            }))
        }
    };
    let (self_before, machine_before, start) = (sys::cpu_seconds(libc::RUSAGE_SELF), machine_busy(), Instant::now());
    let sink = std::thread::spawn(move || {
        let (mut buf, mut total) = (vec![0u8; CHUNK], 0u64);
        loop {
            match pod.read(&mut buf).expect("read") {
                0 => return total,
                n => total += n as u64,
            }
        }
    });
    let buf = vec![0x5au8; CHUNK];
    for _ in 0..BYTES / CHUNK as u64 {
        client.write_all(&buf).expect("write");
    }
    client.shutdown(std::net::Shutdown::Write).expect("shutdown");
    assert_eq!(sink.join().expect("sink"), BYTES);
    let wall = start.elapsed().as_secs_f64();
    let (self_cpu, machine) = (sys::cpu_seconds(libc::RUSAGE_SELF) - self_before, machine_busy() - machine_before);
    drop(client);
    let relay_cpu = relay_cpu.map(|t| t.join().expect("relay thread"));
    let gb = BYTES as f64 / 1e9;
    println!(
        "{mode:?}: {:.2} GB/s; CPU s/GB: relay thread {}, process {:.3}, machine {:.3}",
        gb / wall,
        relay_cpu.map_or("-".to_string(), |c| format!("{:.3}", c / gb)),
        self_cpu / gb,
        machine / gb,
    );
}

#[test]
#[ignore = "benchmark: bench/passthrough-sockmap.sh"]
fn passthrough_throughput() {
    let sockmap = std::sync::Arc::new(SockmapRelay::load().expect("root can load the sockmap relay"));
    for _ in 0..2 {
        for mode in [Mode::Direct, Mode::Userspace, Mode::Sockmap] {
            run(mode, &sockmap);
        }
    }
    assert_eq!(sockmap.entries(), (0, 0, 0));
}
