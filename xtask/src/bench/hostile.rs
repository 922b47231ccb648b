//! Hostile clients beside a measured load (`Load::FixedRateHostile`): slowloris connections (a request head that
//! never ends, one more byte each second) and clients that ask for a large answer and never read it. They run as
//! a process of their own (`cargo xtask hostile-clients`, hidden), pinned to the load's CPU, started before the
//! measured run and stopped after it; a slowloris connection the proxy closes (its head timeout) is opened again,
//! as an attacker would.

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use super::beside::Beside;
use super::loadgen::CLIENT_CPU;
use super::process::{log_tail, wait_until, Proc};
use super::scenario::{NON_READERS, SLOWLORIS};

/// How long the clients may take to open their connections before the run is given up.
const OPEN_LIMIT: Duration = Duration::from_secs(30);
/// The line the clients print once every connection is open and the answers have stalled.
const READY: &str = "hostile clients ready";
/// The non-readers' answers count as stalled when their unread bytes have not changed for this long.
const SETTLED: Duration = Duration::from_secs(1);
const SETTLE_POLL: Duration = Duration::from_millis(100);
/// The longest wait for that (on this machine a few seconds: 3,000 answers pushed until their buffers fill).
const SETTLE_LIMIT: Duration = Duration::from_secs(20);

#[derive(clap::Args, Debug)]
pub struct HostileArgs {
    /// The proxy's HTTP address.
    #[arg(long)]
    addr: SocketAddr,
    /// The route's host.
    #[arg(long)]
    host: String,
    /// What the non-readers ask for (a large answer).
    #[arg(long)]
    path: String,
    #[arg(long)]
    slowloris: usize,
    #[arg(long)]
    non_readers: usize,
    /// Run at most this long, then close everything.
    #[arg(long)]
    seconds: u64,
}

/// The clients, running beside a measured load.
pub struct HostileClients {
    proc: Proc,
}

impl HostileClients {
    /// Starts them against `addr` (route `host`) and waits until every connection is open.
    pub fn start(
        work: &Path,
        addr: SocketAddr,
        host: &str,
        path: &str,
        seconds: u64,
    ) -> anyhow::Result<HostileClients> {
        let log = work.join("hostile-clients.log");
        let exe = std::env::current_exe().context("the xtask binary")?;
        let args: Vec<String> = [
            "hostile-clients".to_string(),
            format!("--addr={addr}"),
            format!("--host={host}"),
            format!("--path={path}"),
            format!("--slowloris={SLOWLORIS}"),
            format!("--non-readers={NON_READERS}"),
            format!("--seconds={seconds}"),
        ]
        .into();
        let mut proc = Proc::spawn("hostile-clients", CLIENT_CPU, &exe, &args, &log)?;
        let ready = wait_until(OPEN_LIMIT + SETTLE_LIMIT, Duration::from_millis(50), || {
            std::fs::read_to_string(&log).is_ok_and(|text| text.contains(READY))
        });
        if ready.is_none() {
            let running = proc.running();
            bail!(
                "hostile clients not ready in {} s (running: {running}); {}",
                (OPEN_LIMIT + SETTLE_LIMIT).as_secs(),
                log_tail(&log, 5)
            );
        }
        Ok(HostileClients { proc })
    }

    /// Stops them (every connection closes with the process).
    pub fn finish(mut self) {
        self.proc.stop();
    }
}

impl Beside for HostileClients {
    fn pids(&self) -> Vec<u32> {
        vec![self.proc.pid()]
    }
}

/// `cargo xtask hostile-clients`: opens the connections, keeps the slowloris ones dribbling until `seconds` pass.
pub fn run(args: &HostileArgs) -> anyhow::Result<()> {
    raise_open_files_limit();
    let request = format!("GET {} HTTP/1.1\r\nHost: {}\r\n\r\n", args.path, args.host);
    let mut non_readers = Vec::with_capacity(args.non_readers);
    for _ in 0..args.non_readers {
        let mut stream = connect(args.addr)?;
        stream.write_all(request.as_bytes()).context("sending a non-reader's request")?;
        non_readers.push(stream);
    }
    let mut slow = Vec::with_capacity(args.slowloris);
    for _ in 0..args.slowloris {
        slow.push(open_slowloris(args)?);
    }
    let (unread, settling) = settle(&non_readers);
    println!(
        "{READY}: {} non-readers ({} MiB unread, settled in {:.1} s), {} slowloris",
        non_readers.len(),
        unread >> 20,
        settling.as_secs_f64(),
        slow.len()
    );
    // The measured run starts now: the clients last `seconds` from here.
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let mut reopened = 0u64;
    while Instant::now() < deadline {
        let round = Instant::now();
        for stream in &mut slow {
            if !dribble(stream) {
                // Closed by the proxy (its head timeout): open another while the run lasts.
                *stream = open_slowloris(args)?;
                reopened += 1;
            }
        }
        std::thread::sleep(Duration::from_secs(1).saturating_sub(round.elapsed()));
    }
    println!("hostile clients done: {reopened} slowloris connections opened again");
    drop(non_readers);
    Ok(())
}

/// Waits until the non-readers' answers have stalled: the bytes waiting unread in their sockets unchanged for
/// [`SETTLED`] (or [`SETTLE_LIMIT`] passed). Until then the proxy is still pushing the first part of each answer
/// (what the sockets' buffers take, a few hundred KiB each), a burst that ends by itself: the measured run is
/// beside clients that hold their connections, not beside their arrival. Returns the bytes and the wait.
fn settle(non_readers: &[TcpStream]) -> (u64, Duration) {
    let started = Instant::now();
    let unread = || non_readers.iter().map(queued_bytes).sum::<u64>();
    let (mut last, mut still_since) = (unread(), Instant::now());
    while still_since.elapsed() < SETTLED && started.elapsed() < SETTLE_LIMIT {
        std::thread::sleep(SETTLE_POLL);
        let now = unread();
        if now != last {
            (last, still_since) = (now, Instant::now());
        }
    }
    (last, started.elapsed())
}

/// Bytes received on `stream` and not read yet (FIONREAD).
fn queued_bytes(stream: &TcpStream) -> u64 {
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD on an open socket writes one c_int through a valid pointer.
    let done = unsafe { libc::ioctl(stream.as_raw_fd(), libc::FIONREAD, &mut queued) };
    if done == 0 {
        u64::try_from(queued).unwrap_or(0)
    } else {
        0
    }
}

fn connect(addr: SocketAddr) -> anyhow::Result<TcpStream> {
    TcpStream::connect_timeout(&addr, Duration::from_secs(5)).with_context(|| format!("connecting to {addr}"))
}

/// A connection with the start of a request head; never finished.
fn open_slowloris(args: &HostileArgs) -> anyhow::Result<TcpStream> {
    let mut stream = connect(args.addr)?;
    stream.write_all(format!("GET / HTTP/1.1\r\nHost: {}\r\nX-Slow: ", args.host).as_bytes()).context("slowloris")?;
    stream.set_nonblocking(true).context("non-blocking")?;
    Ok(stream)
}

/// One more byte of the head; false when the proxy has answered (408) or closed the connection.
fn dribble(stream: &mut TcpStream) -> bool {
    let mut answer = [0u8; 256];
    match stream.read(&mut answer) {
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        _ => return false,
    }
    stream.write(b"a").is_ok_and(|written| written == 1)
}

/// Every connection is a descriptor: the soft limit up to the hard one.
fn raise_open_files_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid pointer to an rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
