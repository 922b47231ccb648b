//! Filling the pinned `STEER_FLOWS` map from the test with entries no packet will ever match, so
//! that the router's next steering setup finds the map full: bpf(2) on the pin, as `bpftool` would
//! do one entry per process.

use std::{
    ffi::CString,
    io,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    path::Path,
};

use router_common::{
    nat::{FlowKey, FAMILY_IPV4, PROTO_TCP},
    steer::{SteerFlow, STEER_FLOWS_MAX},
};

const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_OBJ_GET: libc::c_long = 7;
/// `BPF_NOEXIST`: create only.
const BPF_NOEXIST: u64 = 1;

/// `union bpf_attr`, as far as these commands read it (the kernel wants the rest zero).
#[repr(C, align(8))]
#[derive(Default)]
struct BpfAttr([u64; 8]);

fn bpf(cmd: libc::c_long, attr: &mut BpfAttr) -> io::Result<i64> {
    // SAFETY: bpf(2) with an attribute buffer that lives across the call, of the size passed; every
    // pointer stored in it points at memory that lives across the call too.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr as *mut BpfAttr, size_of::<BpfAttr>()) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// An open pinned map.
pub struct PinnedMap(OwnedFd);

impl PinnedMap {
    pub fn open(pin: &Path) -> PinnedMap {
        let path = CString::new(pin.as_os_str().as_encoded_bytes()).expect("pin path without NUL");
        let mut attr = BpfAttr::default();
        attr.0[0] = path.as_ptr() as u64;
        let fd = bpf(BPF_OBJ_GET, &mut attr).unwrap_or_else(|err| panic!("BPF_OBJ_GET {}: {err}", pin.display()));
        // SAFETY: BPF_OBJ_GET returned a new file descriptor that nothing else owns.
        PinnedMap(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }

    fn update(&self, key: &FlowKey, value: &SteerFlow) -> io::Result<()> {
        let mut attr = BpfAttr::default();
        attr.0[0] = self.0.as_raw_fd() as u64;
        attr.0[1] = (key as *const FlowKey) as u64;
        attr.0[2] = (value as *const SteerFlow) as u64;
        attr.0[3] = BPF_NOEXIST;
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
    }

    fn delete(&self, key: &FlowKey) -> io::Result<()> {
        let mut attr = BpfAttr::default();
        attr.0[0] = self.0.as_raw_fd() as u64;
        attr.0[1] = (key as *const FlowKey) as u64;
        bpf(BPF_MAP_DELETE_ELEM, &mut attr).map(drop)
    }
}

/// The `n`th filler key: 10.255.x.y:1 -> 10.254.0.1:1, addresses no test topology uses.
fn filler_key(n: u32) -> FlowKey {
    let mut key = FlowKey { family: FAMILY_IPV4, protocol: PROTO_TCP, src_port: 1, dst_port: 1, ..FlowKey::default() };
    key.src_addr[..4].copy_from_slice(&[10, 255, (n >> 8) as u8, n as u8]);
    key.dst_addr[..4].copy_from_slice(&[10, 254, (n >> 16) as u8, 1]);
    key
}

/// Adds filler entries (state `STEER_PENDING`: the datapath passes their packets by) until the map
/// refuses one as full (E2BIG); returns how many were added.
pub fn fill(map: &PinnedMap) -> u32 {
    let value = SteerFlow::default();
    for n in 0..=STEER_FLOWS_MAX {
        match map.update(&filler_key(n), &value) {
            Ok(()) => {}
            Err(err) if err.raw_os_error() == Some(libc::E2BIG) => return n,
            Err(err) => panic!("adding filler entry {n} to STEER_FLOWS: {err}"),
        }
    }
    panic!("STEER_FLOWS took {} entries without refusing one", STEER_FLOWS_MAX + 1)
}

/// Removes the filler entries `from..to`.
pub fn remove(map: &PinnedMap, from: u32, to: u32) {
    for n in from..to {
        map.delete(&filler_key(n)).unwrap_or_else(|err| panic!("removing filler entry {n}: {err}"));
    }
}
