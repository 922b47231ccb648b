//! The eBPF programs' debug records (aya-log; what they record is in `router-ebpf/src/unusual.rs`:
//! packets passed unparsed, fragments, steered packets dropped or handed to TC, nodePort drops),
//! forwarded to tracing under the target `router::ebpf` at their own level.
//!
//! Off by default (`--xdp-debug-log` / ROUTER_XDP_DEBUG_LOG=true turns them on): the loader sets
//! aya-log's `AYA_LOG_LEVEL` global, which lives in the object's read-only data, so with 0 the
//! verifier removes every record and the packet path costs nothing more. When on, a thread reads
//! the `AYA_LOGS` ring buffer as records arrive (it wakes on the ring buffer's descriptor).

#![allow(unsafe_code)]

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use aya::Ebpf;
use aya_log::EbpfLogger;

use super::XdpError;

/// The global aya-log's eBPF side reads before each record.
pub(crate) const LEVEL_GLOBAL: &str = "AYA_LOG_LEVEL";
/// aya-log's level numbers: 0 writes nothing, 4 is debug (1 error ... 5 trace).
const OFF: u8 = 0;
const DEBUG: u8 = 4;
/// How long the reader sleeps between looks at its stop flag when no record comes.
const POLL_TIMEOUT_MS: i32 = 200;

/// The value of [`LEVEL_GLOBAL`] for a front with (`true`) or without debug records.
pub(crate) fn level(debug_log: bool) -> u8 {
    if debug_log {
        DEBUG
    } else {
        OFF
    }
}

/// Reads the object's `AYA_LOGS` into tracing until dropped.
pub(crate) struct EbpfLogReader {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EbpfLogReader {
    /// Takes the `AYA_LOGS` map out of `ebpf` and starts the reader thread.
    pub(crate) fn start(ebpf: &mut Ebpf) -> Result<Self, XdpError> {
        Self::start_with(ebpf, TracingLog)
    }

    /// As [`Self::start`], writing records to `sink` (tests read them back).
    pub(crate) fn start_with<L: log::Log + 'static>(ebpf: &mut Ebpf, sink: L) -> Result<Self, XdpError> {
        let mut logger = EbpfLogger::init_with_logger(ebpf, sink).map_err(|cause| XdpError::Log { cause })?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("ebpf-log".into())
            .spawn(move || {
                let fd = logger.as_raw_fd();
                while !stopped.load(Ordering::Relaxed) {
                    let mut wanted = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
                    // SAFETY: one valid pollfd; `logger` keeps the descriptor open for the whole loop.
                    let ready = unsafe { libc::poll(&mut wanted, 1, POLL_TIMEOUT_MS) };
                    if ready > 0 {
                        logger.flush();
                    }
                }
                logger.flush();
            })
            .map_err(|cause| XdpError::LogThread { cause })?;
        Ok(Self { stop, thread: Some(thread) })
    }
}

impl Drop for EbpfLogReader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// aya-log's records as tracing events (target `router::ebpf`, the record's level).
struct TracingLog;

impl log::Log for TracingLog {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let message = record.args();
        match record.level() {
            log::Level::Error => tracing::error!(target: "router::ebpf", "{message}"),
            log::Level::Warn => tracing::warn!(target: "router::ebpf", "{message}"),
            log::Level::Info => tracing::info!(target: "router::ebpf", "{message}"),
            log::Level::Debug => tracing::debug!(target: "router::ebpf", "{message}"),
            log::Level::Trace => tracing::trace!(target: "router::ebpf", "{message}"),
        }
    }

    fn flush(&self) {}
}
