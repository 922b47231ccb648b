//! The bpf filesystem: mounting it at `/sys/fs/bpf` when nothing is mounted there, and the
//! router's pin directory (created on attach, removed on drop together with the pins in it).

#![allow(unsafe_code)]

use std::{
    ffi::CString,
    fs, io,
    mem::MaybeUninit,
    os::unix::ffi::OsStrExt as _,
    path::{Path, PathBuf},
};

use super::XdpError;

/// Where bpffs is conventionally mounted (and where systemd mounts it).
pub(crate) const BPFFS_ROOT: &str = "/sys/fs/bpf";

/// `statfs.f_type` of a bpf filesystem (`BPF_FS_MAGIC`, linux/magic.h).
const BPF_FS_MAGIC: u64 = 0xcafe_4a11;

/// Returns whether `path` lies on a bpf filesystem.
pub(crate) fn is_bpffs(path: &Path) -> io::Result<bool> {
    let c_path = c_path(path)?;
    let mut buf = MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `c_path` is a valid NUL-terminated string and `buf` points at writable memory of
    // the size `statfs` writes.
    let rc = unsafe { libc::statfs(c_path.as_ptr(), buf.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `statfs` returned 0, so it filled `buf`.
    let buf = unsafe { buf.assume_init() };
    // `f_type`'s integer type differs between architectures; the magic fits in 32 bits.
    #[allow(clippy::unnecessary_cast)]
    Ok(buf.f_type as u64 & 0xffff_ffff == BPF_FS_MAGIC)
}

/// Mounts bpffs at [`BPFFS_ROOT`] unless a bpf filesystem is already mounted there. Returns
/// whether it mounted one (the mount is left in place on exit, as systemd would have it).
pub(crate) fn ensure_mounted() -> Result<bool, XdpError> {
    let root = Path::new(BPFFS_ROOT);
    let mount_err = |cause| XdpError::MountBpffs { path: root.to_path_buf(), cause };
    if is_bpffs(root).map_err(mount_err)? {
        return Ok(false);
    }
    let source = c"bpf";
    let fstype = c"bpf";
    let data = c"mode=0700";
    let target = c_path(root).map_err(mount_err)?;
    // SAFETY: all four pointers are valid NUL-terminated strings that outlive the call.
    let rc = unsafe { libc::mount(source.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, data.as_ptr().cast()) };
    if rc != 0 {
        return Err(mount_err(io::Error::last_os_error()));
    }
    tracing::info!(path = BPFFS_ROOT, "mounted bpffs");
    Ok(true)
}

/// The router's pin directory. Remembers the directories and pins it created so dropping it
/// deletes exactly those, leaving anything that existed before.
#[derive(Debug)]
pub(crate) struct PinDir {
    path: PathBuf,
    /// Directories this router created, outermost first.
    created: Vec<PathBuf>,
    /// Pin files this router created.
    pins: Vec<PathBuf>,
}

impl PinDir {
    /// Creates `path` (and missing parents), then checks it is on a bpf filesystem.
    pub(crate) fn create(path: &Path) -> Result<PinDir, XdpError> {
        let dir_err = |cause| XdpError::PinDir { path: path.to_path_buf(), cause };
        let mut missing: Vec<PathBuf> = path
            .ancestors()
            .take_while(|dir| !dir.as_os_str().is_empty() && !dir.exists())
            .map(Path::to_path_buf)
            .collect();
        missing.reverse();
        let mut dir = PinDir { path: path.to_path_buf(), created: Vec::new(), pins: Vec::new() };
        // On an early return, dropping `dir` removes what was created so far.
        for step in missing {
            match fs::create_dir(&step) {
                Ok(()) => dir.created.push(step),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(dir_err(err)),
            }
        }
        if !is_bpffs(path).map_err(dir_err)? {
            return Err(XdpError::NotBpffs { path: path.to_path_buf() });
        }
        Ok(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The pin path of map `name`: `<pin_dir>/<name>`.
    pub(crate) fn pin_path(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Records a pin this router created, so dropping the `PinDir` deletes it.
    pub(crate) fn record_pin(&mut self, pin: PathBuf) {
        self.pins.push(pin);
    }

    /// Leaves every pin and directory in place when dropped (the next router owns them).
    pub(crate) fn keep_all(&mut self) {
        self.pins.clear();
        self.created.clear();
    }

    /// Removes the pins this router created, the pin dir itself if it is then empty (it may be
    /// left over from a router that crashed), and the parent directories this router created.
    /// Failures are logged, not returned: this runs on shutdown.
    fn remove(&mut self) {
        for pin in self.pins.drain(..) {
            if let Err(err) = fs::remove_file(&pin) {
                if err.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(pin = %pin.display(), %err, "removing BPF pin");
                }
            }
        }
        if self.created.last() != Some(&self.path) && is_bpffs(&self.path).unwrap_or(false) {
            // Not created by us: remove it only if empty (ENOTEMPTY means someone else uses it).
            let _ = fs::remove_dir(&self.path);
        }
        while let Some(dir) = self.created.pop() {
            if let Err(err) = fs::remove_dir(&dir) {
                if err.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(dir = %dir.display(), %err, "removing BPF pin dir");
                }
            }
        }
    }
}

impl Drop for PinDir {
    fn drop(&mut self) {
        self.remove();
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, err))
}
