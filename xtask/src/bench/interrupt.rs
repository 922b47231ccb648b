//! Ctrl-C (SIGINT) and SIGTERM while the bench holds machine-wide things that outlive a process: network namespaces
//! (`ip netns add` bind-mounts them) and bpffs pin directories. While a [`Guard`] lives, a signal makes a watcher
//! thread remove everything registered and exit (128 + the signal); the processes the bench started die with it
//! (`PR_SET_PDEATHSIG`). What a SIGKILL leaves behind is removed by the next bench (`remove_stale` in `netns` and
//! `xdp::topology`), which can tell it from a concurrent bench's by the PID in the name.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Something to remove when the bench is interrupted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resource {
    /// A named network namespace (`ip netns del NAME`).
    Netns(String),
    /// A bpffs directory of pins (its files, then itself).
    PinDir(PathBuf),
}

impl Resource {
    /// Removes it; quiet when it is already gone.
    pub fn remove(&self) {
        match self {
            Resource::Netns(name) => {
                let _ = std::process::Command::new("ip")
                    .args(["netns", "del", name])
                    .stderr(std::process::Stdio::null())
                    .status();
            }
            Resource::PinDir(dir) => {
                if let Ok(entries) = std::fs::read_dir(dir) {
                    for entry in entries.flatten() {
                        let _ = std::fs::remove_file(entry.path());
                    }
                }
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

static REGISTERED: Mutex<Vec<Resource>> = Mutex::new(Vec::new());
/// The signal received (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// A guard is installed (the watcher thread runs while this is true).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Registers `resource` for removal on interrupt (its owner removes it normally and then calls [`forget`]).
pub fn register(resource: Resource) {
    if let Ok(mut registered) = REGISTERED.lock() {
        registered.push(resource);
    }
}

/// Takes `resource` off the list (its owner removed it).
pub fn forget(resource: &Resource) {
    if let Ok(mut registered) = REGISTERED.lock() {
        registered.retain(|r| r != resource);
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    SIGNAL.store(signal, Ordering::SeqCst);
}

/// SIGINT and SIGTERM handled (as above) while it lives; the default actions come back on drop.
pub struct Guard {
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl Guard {
    pub fn install() -> Guard {
        SIGNAL.store(0, Ordering::SeqCst);
        ACTIVE.store(true, Ordering::SeqCst);
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
            unsafe {
                libc::signal(signal, handler);
            }
        }
        let watcher = std::thread::spawn(|| loop {
            // The signal first: one that came before the guard was dropped is still acted on.
            let signal = SIGNAL.load(Ordering::SeqCst);
            if signal != 0 {
                let resources = REGISTERED.lock().map(|r| r.clone()).unwrap_or_default();
                println!("bench: interrupted (signal {signal}): removing {} namespaces/pin dirs", resources.len());
                for resource in resources.iter().rev() {
                    resource.remove();
                }
                std::process::exit(128 + signal);
            }
            if !ACTIVE.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        });
        Guard { watcher: Some(watcher) }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: restores the default action.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        ACTIVE.store(false, Ordering::SeqCst);
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
    }
}
