//! Keeps the tail of a paced download for after a router change: a download that must still be
//! running when a router leaves or restarts cannot rely on its pace alone, since a loaded machine
//! can take longer to start a router than the download takes to finish. A watcher stops the client
//! (SIGSTOP: it stops reading, the TCP window closes, the connection stays open and steered) once
//! all but the tail has arrived; `release` lets it go on (SIGCONT).

use std::{
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread,
    time::Duration,
};

pub struct HeldTail {
    pid: libc::pid_t,
    done: Arc<AtomicBool>,
    watcher: Option<thread::JoinHandle<bool>>,
}

impl HeldTail {
    /// Stops the process `pid` once `out` holds `hold_from` bytes, unless released first.
    pub fn new(pid: u32, out: PathBuf, hold_from: u64) -> HeldTail {
        let pid = libc::pid_t::try_from(pid).expect("pid fits pid_t");
        let done = Arc::new(AtomicBool::new(false));
        let watching = done.clone();
        let watcher = thread::spawn(move || {
            while !watching.load(Ordering::Acquire) {
                if super::file_len(&out) >= hold_from {
                    signal(pid, libc::SIGSTOP);
                    return true;
                }
                thread::sleep(Duration::from_millis(10));
            }
            false
        });
        HeldTail { pid, done, watcher: Some(watcher) }
    }

    /// Lets the client read on; true if it had been stopped.
    pub fn release(mut self) -> bool {
        self.stop_watching()
    }

    fn stop_watching(&mut self) -> bool {
        let Some(watcher) = self.watcher.take() else {
            return false;
        };
        self.done.store(true, Ordering::Release);
        let held = watcher.join().expect("tail watcher");
        signal(self.pid, libc::SIGCONT);
        held
    }
}

impl Drop for HeldTail {
    fn drop(&mut self) {
        self.stop_watching();
    }
}

fn signal(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill(2) on the test's own unreaped child (the caller holds its `Child`), so the pid
    // still names it.
    unsafe { libc::kill(pid, sig) };
}
