//! The local syslog listener of the access-log scenario: a UDP socket on loopback read by one thread pinned to the
//! client CPU (CPU0, beside the load), counting the datagrams the proxy under test sends and dropping them, as a
//! syslog daemon that writes nowhere would. Both proxies log to it (one at a time is loaded).

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context as _;

use super::loadgen::CLIENT_CPU;

pub struct SyslogSink {
    pub addr: SocketAddr,
    received: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SyslogSink {
    pub fn start() -> anyhow::Result<SyslogSink> {
        let socket = UdpSocket::bind("127.0.0.1:0").context("binding the syslog listener")?;
        // Wakes the thread now and then to see whether it must stop.
        socket.set_read_timeout(Some(Duration::from_millis(200))).context("syslog listener timeout")?;
        let addr = socket.local_addr().context("syslog listener address")?;
        let received = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, stopping) = (received.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("syslog-sink".into())
            .spawn(move || {
                pin_to_cpu(CLIENT_CPU);
                let mut buf = vec![0u8; 65536];
                while !stopping.load(Ordering::Relaxed) {
                    if socket.recv(&mut buf).is_ok() {
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
            .context("starting the syslog listener")?;
        Ok(SyslogSink { addr, received, stop, thread: Some(thread) })
    }

    /// Datagrams received so far.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

impl Drop for SyslogSink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Pins the calling thread to `cpu` (best effort: the count is right either way, only the CPU split would not be).
fn pin_to_cpu(cpu: u32) {
    // SAFETY: `set` is a plain bit set on the stack, sized for sched_setaffinity; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
