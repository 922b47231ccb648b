//! `spawn_watch`: loads the manifests, then reloads them on filesystem events and a slow poll.
//!
//! notify (inotify on Linux) gives prompt reloads; the poll compares mtimes and sizes every `POLL`
//! so a missed event (network filesystems, a re-created root, a ConfigMap symlink swap) is still
//! picked up, and re-arms the notify watch when it sees a change the watch missed. Each pass runs
//! on the blocking pool; an update is sent only when some file's bytes, the file set or the listing
//! errors changed, so the receiver never sees no-ops.
//!
//! Latency: an event that ends a change (a close after writing, a rename, a removal) starts a pass at
//! once; events that arrive meanwhile are coalesced into the next pass. Events of a change still in progress
//! (a create, a write) wait until `DEBOUNCE` of quiet or such an ending event, so a file is not read
//! half-written. A pass re-reads only the paths the events named, unless one of them needs a full listing (a
//! directory, a file root, a lost event).

use std::collections::BTreeSet;
use std::mem;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::store::{ManifestSource, Pass};
use super::tree::{self, Fingerprint};
use crate::source::SourceUpdate;

/// Quiet time after an event of a change still in progress (a create, a write) before reloading, so an
/// editor's write-rename-chmod is one reload.
const DEBOUNCE: Duration = Duration::from_millis(100);
/// Longest a stream of events can hold a reload back.
const SETTLE_MAX: Duration = Duration::from_secs(1);
/// Period of the mtime/size poll that backs up notify.
const POLL: Duration = Duration::from_secs(2);

/// Loads once, sends the first `SourceUpdate`, then sends a new one after each batch of changes
/// that alters the result. Ends when the receiver is dropped.
pub fn spawn_watch(source: ManifestSource, tx: mpsc::Sender<SourceUpdate>) -> JoinHandle<()> {
    let options = Options { notify: true, poll: POLL };
    tokio::spawn(run(source, tx, options))
}

#[derive(Clone, Copy, Debug)]
struct Options {
    /// Use filesystem events (off in tests of the poll alone).
    notify: bool,
    poll: Duration,
}

/// What the events since the last pass ask for; filled by notify's thread.
#[derive(Debug, Default)]
struct Pending {
    /// Paths the events named.
    paths: BTreeSet<PathBuf>,
    /// An event without paths, a lost event or a watch error: only a full pass is sure to see the change.
    rescan: bool,
    /// Some event ended a change (close after write, rename, removal): reload without waiting for quiet.
    settled: bool,
}

/// `Pending` and the wake-up of the watch loop.
#[derive(Debug, Default)]
struct Events {
    pending: Mutex<Pending>,
    wake: Notify,
}

impl Events {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // A panic while holding this lock cannot leave `Pending` inconsistent: keep using it.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, event: notify::Result<notify::Event>) {
        {
            let mut pending = self.lock();
            match event {
                Ok(event) if !is_change(&event.kind) => return,
                Ok(event) => {
                    pending.settled |= ends_change(&event.kind);
                    pending.rescan |= event.need_rescan() || event.paths.is_empty();
                    pending.paths.extend(event.paths);
                }
                Err(_) => {
                    pending.rescan = true;
                    pending.settled = true;
                }
            }
        }
        self.wake.notify_one();
    }

    fn take(&self) -> Pending {
        mem::take(&mut *self.lock())
    }
}

/// The work of one pass.
enum Work {
    /// List every file and re-read those whose bytes changed.
    Full,
    /// Re-read these paths only (falls back to `Full` when they need a listing).
    Paths(BTreeSet<PathBuf>),
}

async fn run(mut source: ManifestSource, tx: mpsc::Sender<SourceUpdate>, options: Options) {
    let root = source.path().to_path_buf();
    let events = Arc::new(Events::default());
    let arm = |watcher: &mut Option<RecommendedWatcher>| {
        if options.notify {
            *watcher = None; // drop the old watch first: one inotify instance at a time
            *watcher = watch_fs(&root, &events);
        }
    };
    let mut watcher = None;
    arm(&mut watcher);
    let mut poll = tokio::time::interval_at(Instant::now() + options.poll, options.poll);
    poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut first = true;
    let mut warned_missing = false;
    let mut seen = Fingerprint::new();
    let mut work = Work::Full;
    loop {
        let pass = tokio::task::spawn_blocking(move || {
            let pass = run_pass(&mut source, &mut seen, work);
            (source, seen, pass)
        });
        let (returned, now_seen, pass) = match pass.await {
            Ok(done) => done,
            Err(err) => {
                tracing::error!(error = %err, "manifest reload failed; manifest watch stopped");
                return;
            }
        };
        source = returned;
        seen = now_seen;
        // No complete state exists before the manifest path does: hold the first update back (the router
        // stays not-ready) until it appears.
        let root_missing = first && !root.exists();
        if root_missing {
            if !warned_missing {
                tracing::warn!(path = %root.display(), "manifest path does not exist yet; waiting for it");
                warned_missing = true;
            }
        } else if first || pass.changed {
            first = false;
            if tx.send(pass.update).await.is_err() {
                return;
            }
        }
        work = loop {
            tokio::select! {
                () = tx.closed() => return,
                () = events.wake.notified() => {
                    settle(&events).await;
                    let pending = events.take();
                    if pending.rescan || root_missing {
                        break Work::Full;
                    }
                    if !pending.paths.is_empty() {
                        break Work::Paths(pending.paths);
                    }
                }
                _ = poll.tick() => {
                    let dir = root.clone();
                    let now = tokio::task::spawn_blocking(move || tree::fingerprint(&dir));
                    let now = now.await.unwrap_or_default();
                    if now != seen {
                        if watcher.is_some() {
                            let path = root.display();
                            tracing::debug!(%path, "poll saw a change the watch missed; re-arming");
                        }
                        arm(&mut watcher);
                        break Work::Full;
                    }
                    if watcher.is_none() {
                        arm(&mut watcher);
                    }
                }
            }
        };
    }
}

/// One pass on the blocking pool. `seen` is brought up to date before reading, so a change made during the
/// pass is seen by the next poll.
fn run_pass(source: &mut ManifestSource, seen: &mut Fingerprint, work: Work) -> Pass {
    if let Work::Paths(paths) = work {
        if let Some(pass) = source.pass_paths(&paths, seen) {
            return pass;
        }
    }
    *seen = tree::fingerprint(source.path());
    source.pass()
}

/// Returns at once when an event ended a change; otherwise waits until events stop for `DEBOUNCE` (at most
/// `SETTLE_MAX`) or one that ends a change arrives.
async fn settle(events: &Events) {
    let deadline = Instant::now() + SETTLE_MAX;
    loop {
        if events.lock().settled {
            return;
        }
        let quiet_at = (Instant::now() + DEBOUNCE).min(deadline);
        match tokio::time::timeout_at(quiet_at, events.wake.notified()).await {
            Ok(()) if Instant::now() < deadline => continue,
            _ => return,
        }
    }
}

/// Starts a notify watch that records every change under `root` in `events`; `None` (and a debug log)
/// if it cannot, e.g. while `root` does not exist. A file is watched through its directory, since
/// editors replace files by rename, which ends a watch on the file itself.
fn watch_fs(root: &Path, events: &Arc<Events>) -> Option<RecommendedWatcher> {
    let events = events.clone();
    let handler = move |event: notify::Result<notify::Event>| events.record(event);
    let (target, mode) = if root.is_dir() {
        (root, RecursiveMode::Recursive)
    } else {
        let parent = root.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
        (parent, RecursiveMode::NonRecursive)
    };
    let armed = notify::recommended_watcher(handler).and_then(|mut watcher| {
        watcher.watch(target, mode)?;
        Ok(watcher)
    });
    match armed {
        Ok(watcher) => Some(watcher),
        Err(err) => {
            let path = target.display();
            tracing::debug!(%path, error = %err, "cannot watch manifests; polling only");
            None
        }
    }
}

/// Events after which the file (or directory) is complete: a close after writing, a rename, a removal, a new
/// directory. A create or a write is followed by more of the same change.
fn ends_change(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Access(AccessKind::Close(AccessMode::Write))
            | EventKind::Modify(ModifyKind::Name(_))
            | EventKind::Remove(_)
            | EventKind::Create(CreateKind::Folder)
    )
}

/// Everything but reads: our own reloads open and read the files, which must not trigger another
/// reload.
fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::model::ObjectKey;

    /// Generous bound on how long an update may take; tests return as soon as it arrives.
    const WAIT: Duration = Duration::from_secs(20);

    fn route(name: &str, host: &str) -> String {
        let meta = format!("metadata: {{name: {name}, namespace: ns}}");
        let spec = format!("spec: {{host: {host}, to: {{kind: Service, name: {name}}}}}");
        format!("apiVersion: route.openshift.io/v1\nkind: Route\n{meta}\n{spec}\n")
    }

    fn host(update: &SourceUpdate, name: &str) -> Option<String> {
        update.snapshot.routes.get(&ObjectKey::new("ns", name)).and_then(|route| route.spec.host.clone())
    }

    /// Receives updates until one satisfies `want`; panics if none does within `WAIT`.
    async fn until(rx: &mut mpsc::Receiver<SourceUpdate>, want: impl Fn(&SourceUpdate) -> bool) -> SourceUpdate {
        let deadline = Instant::now() + WAIT;
        loop {
            let update = tokio::time::timeout_at(deadline, rx.recv()).await.expect("an update in time");
            let update = update.expect("the watch is running");
            if want(&update) {
                return update;
            }
        }
    }

    #[tokio::test]
    async fn file_changes_send_new_updates() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a.yaml");
        fs::write(&a, route("a", "one.example.com")).expect("write");
        let (tx, mut rx) = mpsc::channel(4);
        let watch = spawn_watch(ManifestSource::new(dir.path()), tx);

        let first = until(&mut rx, |_| true).await;
        assert_eq!(host(&first, "a").as_deref(), Some("one.example.com"));
        fs::write(&a, route("a", "two.example.com")).expect("write");
        until(&mut rx, |u| host(u, "a").as_deref() == Some("two.example.com")).await;
        fs::write(dir.path().join("b.yaml"), route("b", "b.example.com")).expect("write");
        until(&mut rx, |u| u.snapshot.routes.len() == 2).await;
        fs::write(&a, "kind: [").expect("write");
        let broken = until(&mut rx, |u| !u.errors.is_empty()).await;
        assert_eq!(host(&broken, "a").as_deref(), Some("two.example.com"), "last good kept");
        fs::remove_file(&a).expect("rm");
        let gone = until(&mut rx, |u| host(u, "a").is_none()).await;
        assert!(gone.errors.is_empty());
        drop(rx);
        tokio::time::timeout(WAIT, watch).await.expect("the watch ends").expect("no panic");
    }

    #[tokio::test]
    async fn the_poll_alone_picks_up_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("later");
        let (tx, mut rx) = mpsc::channel(4);
        let options = Options { notify: false, poll: Duration::from_millis(50) };
        let watch = tokio::spawn(run(ManifestSource::new(&root), tx, options));
        // The root does not exist yet: no state is complete, so nothing is sent (several polls pass).
        let early = tokio::time::timeout(Duration::from_millis(300), rx.recv()).await;
        assert!(early.is_err(), "no update before the manifest path exists");
        fs::create_dir(&root).expect("mkdir");
        fs::write(root.join("a.yaml"), route("a", "one.example.com")).expect("write");
        let update = until(&mut rx, |u| host(u, "a").is_some()).await;
        assert!(update.errors.is_empty());
        fs::write(root.join("a.yaml"), route("a", "three.example.com")).expect("write");
        until(&mut rx, |u| host(u, "a").as_deref() == Some("three.example.com")).await;
        drop(rx);
        tokio::time::timeout(WAIT, watch).await.expect("the watch ends").expect("no panic");
    }

    #[test]
    fn reads_do_not_count_as_changes() {
        assert!(!is_change(&EventKind::Access(AccessKind::Open(AccessMode::Any))));
        assert!(!is_change(&EventKind::Access(AccessKind::Close(AccessMode::Read))));
        assert!(is_change(&EventKind::Access(AccessKind::Close(AccessMode::Write))));
        assert!(is_change(&EventKind::Remove(notify::event::RemoveKind::File)));
    }

    #[test]
    fn a_close_after_writing_or_a_rename_ends_a_change() {
        use notify::event::{DataChange, RenameMode};
        assert!(ends_change(&EventKind::Access(AccessKind::Close(AccessMode::Write))));
        assert!(ends_change(&EventKind::Modify(ModifyKind::Name(RenameMode::To))));
        assert!(ends_change(&EventKind::Remove(notify::event::RemoveKind::File)));
        assert!(!ends_change(&EventKind::Create(CreateKind::File)));
        assert!(!ends_change(&EventKind::Modify(ModifyKind::Data(DataChange::Any))));
    }
}
