//! Kernel pipes for the splice relay, kept for reuse: a passthrough connection takes two and gives them back
//! empty when it ends, saving pipe2(2) and two close(2) per pipe on every connection (HAProxy pools its
//! pipes too).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Mutex;

/// Empty pipes kept at most; the rest are closed.
const MAX_IDLE_PIPES: usize = 256;

/// The relay's pipes.
pub static PIPES: PipePool = PipePool::new();

/// Empty pipes waiting for a relay.
#[derive(Debug)]
pub struct PipePool {
    idle: Mutex<Vec<Pipe>>,
}

impl PipePool {
    pub const fn new() -> PipePool {
        PipePool { idle: Mutex::new(Vec::new()) }
    }

    /// A kept pipe, or a new one.
    pub fn take(&self) -> io::Result<Pipe> {
        let kept = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        kept.map_or_else(Pipe::new, Ok)
    }

    /// Keeps `pipe` for another relay if it is empty; a pipe with bytes left in it is closed.
    pub fn give_back(&self, pipe: Pipe) {
        if pipe.held != 0 {
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < MAX_IDLE_PIPES {
                idle.push(pipe);
            }
        }
    }

    #[cfg(test)]
    fn idle_count(&self) -> usize {
        self.idle.lock().map(|idle| idle.len()).unwrap_or_default()
    }
}

/// A non-blocking pipe and the bytes in it.
#[derive(Debug)]
pub struct Pipe {
    pub read: OwnedFd,
    pub write: OwnedFd,
    pub held: usize,
}

impl Pipe {
    pub fn new() -> io::Result<Pipe> {
        let mut fds: [libc::c_int; 2] = [-1, -1];
        // SAFETY: `fds` is a writable array of two c_ints, which is what pipe2 fills; the flags are valid.
        let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let [read, write] = fds;
        // SAFETY: pipe2 succeeded, so both descriptors are open, and nothing else owns them.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(read), OwnedFd::from_raw_fd(write)) };
        Ok(Pipe { read, write, held: 0 })
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn empty_pipes_come_back_and_full_ones_do_not() {
        let pool = PipePool::new();
        let pipe = pool.take().expect("pipe");
        let fd = pipe.write.as_raw_fd();
        pool.give_back(pipe);
        assert_eq!(pool.idle_count(), 1);
        let mut again = pool.take().expect("pipe");
        assert_eq!(again.write.as_raw_fd(), fd, "the kept pipe is handed out again");
        assert_eq!(pool.idle_count(), 0);

        again.held = 10;
        pool.give_back(again);
        assert_eq!(pool.idle_count(), 0, "a pipe with bytes in it is closed, not kept");
    }
}
