//! Hostile clients beside a measured load (`Load::FixedRateHostile`): slowloris connections (a request head that
//! never ends, one more byte each second) and clients that ask for a large answer and never read it. They run as
//! a process of their own (`cargo xtask hostile-clients`, hidden), pinned to the load's CPU, started before the
//! measured run and stopped after it; a slowloris connection the proxy closes (its head timeout) is opened again,
//! as an attacker would.

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use super::beside::Beside;
use super::loadgen::CLIENT_CPU;
use super::process::{log_tail, wait_until, Proc};
use super::scenario::{NON_READERS, SLOWLORIS};

/// How long the clients may take to open their connections before the run is given up.
const OPEN_LIMIT: Duration = Duration::from_secs(30);
/// The line the clients print once every connection is open.
const READY: &str = "hostile clients ready";

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
        let ready = wait_until(OPEN_LIMIT, Duration::from_millis(50), || {
            std::fs::read_to_string(&log).is_ok_and(|text| text.contains(READY))
        });
        if ready.is_none() {
            let running = proc.running();
            bail!(
                "hostile clients not ready in {} s (running: {running}); {}",
                OPEN_LIMIT.as_secs(),
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
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
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
    println!("{READY}: {} non-readers, {} slowloris", non_readers.len(), slow.len());
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
