//! `cargo xtask setup`: installs what building and testing need, and nothing when all is present.
//!
//! - Debian packages the tests and benches run: bpftool, iproute2, ethtool, curl, wrk, openssl,
//!   procps, iputils-ping, cmake (aws-lc-sys's fallback builder), for the benchmark haproxy, nginx,
//!   nghttp2-client (h2load), and for its XDP group iptables and hping3, testssl.sh for the TLS scan test
//!   (checked with `dpkg-query`, installed with `apt-get`).
//! - The `nightly` toolchain with `rust-src` (the eBPF object is built with `-Z build-std=core`).
//! - `bpf-linker` 0.13, built against the nightly toolchain's own libLLVM: `libLLVM.so` is
//!   symlinked to the toolchain's `libLLVM.so.<ver>-rust-<ver>` and the linker is installed with
//!   `LLVM_PREFIX=<sysroot> cargo install bpf-linker --features llvm-<major>`.
//! - cargo-fuzz for the fuzz step of the tests and `cargo xtask fuzz`, kept in the dev cache
//!   (`cargo_fuzz`).
//! - aioquic (PyPI) in a virtual environment in the dev cache, the independent HTTP/3 client of the tests
//!   (`aioquic`; python3-venv from Debian makes the environment).

use std::{
    ffi::OsStr,
    fs,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use anyhow::{bail, Context as _};

use crate::packages::dpkg_installed;

/// Debian packages the tests and benchmarks call.
const APT_PACKAGES: &[&str] = &[
    "bpftool",
    "iproute2",
    "ethtool",
    "curl",
    "wrk",
    "openssl",
    "procps",
    "iputils-ping",
    // aws-lc-sys (the router's aws-lc-rs crypto provider and X25519MLKEM768, built by default): built with the cc
    // crate and gcc here (the C compiler ring needs too); cmake is the
    // builder it falls back to when that cannot build (and the one its FIPS or no-asm builds need).
    "cmake",
    // The benchmark (`cargo xtask bench`): the HAProxy contender, nginx as the pods, h2load for fixed-rate latency.
    "haproxy",
    "nginx",
    "nghttp2-client",
    // bench/instructions.sh: the router's instructions per request, counted by callgrind.
    "valgrind",
    // The bench's XDP group (`cargo xtask bench --only xdp`): kube-proxy-style DNAT rules and a bounded SYN flood.
    "iptables",
    "hping3",
    // tests/tests/tls_testssl.rs: the TLS scanner run against :443.
    "testssl.sh",
    // tests/tests/http3.rs: the virtual environment aioquic (the second HTTP/3 client) is installed into.
    "python3-venv",
];
const NIGHTLY: &str = "nightly";
/// The bpf-linker series that matches aya 0.14 / aya-build 0.2.
const BPF_LINKER_REQ: &str = "^0.13";
const BPF_LINKER_PREFIX: &str = "bpf-linker 0.13.";

/// `cargo xtask setup`: everything [`ensure`] does, plus the apiserver tier's etcd and kube-apiserver.
pub fn run() -> anyhow::Result<()> {
    ensure()?;
    crate::apiserver::ensure()?;
    println!("setup: all prerequisites present");
    Ok(())
}

/// Installs whatever is missing; quick when nothing is. The test runner and the bench call it first.
pub fn ensure() -> anyhow::Result<()> {
    apt_packages()?;
    ensure_build()?;
    crate::cargo_fuzz::ensure()?;
    crate::aioquic::ensure()?;
    Ok(())
}

/// What the fuzz targets need: the nightly toolchain (libFuzzer's instrumentation flags are nightly-only) and
/// cargo-fuzz. Returns the cargo-fuzz binary.
pub fn ensure_fuzz() -> anyhow::Result<PathBuf> {
    nightly_toolchain()?;
    crate::cargo_fuzz::ensure()
}

/// What building the router needs beyond stable Rust (the eBPF object's toolchain), and nothing the tests or
/// the bench call: `cargo xtask run` asks only for this, so the demo does not wait for their packages.
pub fn ensure_build() -> anyhow::Result<()> {
    nightly_toolchain()?;
    let linker = bpf_linker()?;
    println!("setup: ok: {linker}");
    Ok(())
}

fn apt_packages() -> anyhow::Result<()> {
    let missing: Vec<&str> = APT_PACKAGES.iter().copied().filter(|package| !dpkg_installed(package)).collect();
    if missing.is_empty() {
        println!("setup: ok: apt packages ({})", APT_PACKAGES.join(" "));
        return Ok(());
    }
    println!("setup: installing apt packages: {}", missing.join(" "));
    let apt_get = |args: &[&str]| -> anyhow::Result<bool> {
        let mut cmd = privileged("apt-get")?;
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        Ok(cmd.status().with_context(|| format!("running apt-get {}", args.join(" ")))?.success())
    };
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend(&missing);
    // Package lists may be empty or stale on a fresh machine: update once and retry.
    let installed = apt_get(&install)? || (apt_get(&["update"])? && apt_get(&install)?);
    if !installed {
        bail!("apt-get could not install: {}", missing.join(" "));
    }
    let still_missing: Vec<&str> = missing.into_iter().filter(|package| !dpkg_installed(package)).collect();
    if !still_missing.is_empty() {
        bail!("still not installed after apt-get: {}", still_missing.join(" "));
    }
    Ok(())
}

/// `program` run directly as root, or through `sudo` otherwise.
fn privileged(program: &str) -> anyhow::Result<Command> {
    if effective_uid() == 0 {
        return Ok(Command::new(program));
    }
    if !on_path("sudo") {
        bail!("{program} needs root and sudo is not installed: run `cargo xtask setup` as root");
    }
    let mut cmd = Command::new("sudo");
    cmd.arg(program);
    Ok(cmd)
}

/// The effective user id, read from `/proc/self/status` (no libc dependency in xtask).
fn effective_uid() -> u32 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1))
                .and_then(|euid| euid.parse().ok())
        })
        .unwrap_or(u32::MAX)
}

fn nightly_toolchain() -> anyhow::Result<()> {
    if !on_path("rustup") {
        bail!("rustup is not on PATH; the eBPF build needs rustup's `{NIGHTLY}` toolchain (https://rustup.rs)");
    }
    let toolchains = stdout(Command::new("rustup").args(["toolchain", "list"]))?;
    let has_nightly = toolchains.lines().any(|line| line.starts_with(&format!("{NIGHTLY}-")));
    if !has_nightly {
        println!("setup: installing the {NIGHTLY} toolchain (profile minimal)");
        run_checked(Command::new("rustup").args(["toolchain", "install", NIGHTLY, "--profile", "minimal"]))?;
    }
    let components = stdout(Command::new("rustup").args(["component", "list", "--installed", "--toolchain", NIGHTLY]))?;
    let listed = components.lines().any(|line| line.trim() == "rust-src");
    // What the eBPF build reads (router-user/build.rs checks the same directory): rustup's own record can say
    // installed while the sources are gone (a toolchain directory copied or pruned by hand).
    let sysroot = PathBuf::from(stdout(Command::new("rustup").args(["run", NIGHTLY, "rustc", "--print", "sysroot"]))?);
    let on_disk = sysroot.join("lib/rustlib/src/rust/library/core").is_dir();
    if listed && !on_disk {
        println!("setup: rust-src of the {NIGHTLY} toolchain is recorded but its sources are missing: reinstalling");
        run_checked(Command::new("rustup").args(["component", "remove", "rust-src", "--toolchain", NIGHTLY]))?;
    }
    if !(listed && on_disk) {
        println!("setup: adding rust-src to the {NIGHTLY} toolchain");
        run_checked(Command::new("rustup").args(["component", "add", "rust-src", "--toolchain", NIGHTLY]))?;
    }
    println!("setup: ok: {NIGHTLY} toolchain with rust-src");
    Ok(())
}

/// Makes sure `bpf-linker --version` reports 0.13.x; returns that version line.
fn bpf_linker() -> anyhow::Result<String> {
    if let Some(version) = bpf_linker_version() {
        if version.starts_with(BPF_LINKER_PREFIX) {
            return Ok(version);
        }
        println!("setup: found `{version}`, need {BPF_LINKER_REQ}: reinstalling");
    }

    let sysroot = PathBuf::from(stdout(Command::new("rustup").args(["run", NIGHTLY, "rustc", "--print", "sysroot"]))?);
    let lib_dir = sysroot.join("lib");
    let (llvm_lib, major) = toolchain_libllvm(&lib_dir)?;
    link_libllvm(&lib_dir, &llvm_lib)?;

    let feature = format!("llvm-{major}");
    println!(
        "setup: installing bpf-linker {BPF_LINKER_REQ} against {} (LLVM_PREFIX={}, --features {feature})",
        llvm_lib.display(),
        sysroot.display()
    );
    let mut install = Command::new("rustup");
    install
        .args(["run", NIGHTLY, "cargo", "install", "bpf-linker", "--force"])
        .args(["--version", BPF_LINKER_REQ, "--no-default-features"])
        .args(["--features", &feature])
        .env("LLVM_PREFIX", &sysroot)
        // Outside the workspace, and without the outer cargo's compiler overrides.
        .current_dir(std::env::temp_dir());
    crate::cargo_install::without_outer_overrides(&mut install);
    run_checked(&mut install)?;

    match bpf_linker_version() {
        Some(version) if version.starts_with(BPF_LINKER_PREFIX) => Ok(version),
        other => bail!("bpf-linker installed but `bpf-linker --version` reports {other:?}; is ~/.cargo/bin on PATH?"),
    }
}

fn bpf_linker_version() -> Option<String> {
    let out = Command::new("bpf-linker").arg("--version").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Finds the toolchain's real libLLVM (`libLLVM.so.<major>.<minor>-rust-<version>`) in `lib_dir`
/// and returns it with its LLVM major version.
fn toolchain_libllvm(lib_dir: &Path) -> anyhow::Result<(PathBuf, u32)> {
    let entries = fs::read_dir(lib_dir).with_context(|| format!("listing {}", lib_dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", lib_dir.display()))?;
        let name = entry.file_name();
        let Some(major) = name.to_str().and_then(libllvm_major) else {
            continue;
        };
        return Ok((entry.path(), major));
    }
    bail!(
        "no libLLVM.so.<version>-rust-* in {}; the {NIGHTLY} toolchain ships it as part of the `rustc` component",
        lib_dir.display()
    )
}

/// `libLLVM.so.22.1-rust-1.97.0-nightly` -> `Some(22)`.
fn libllvm_major(file_name: &str) -> Option<u32> {
    let version = file_name.strip_prefix("libLLVM.so.")?;
    if !version.contains("-rust-") {
        return None;
    }
    version.split(['.', '-']).next()?.parse().ok()
}

/// Points `<lib_dir>/libLLVM.so` at `target` (what bpf-linker's build links with `-lLLVM`).
fn link_libllvm(lib_dir: &Path, target: &Path) -> anyhow::Result<()> {
    let link = lib_dir.join("libLLVM.so");
    if fs::read_link(&link).is_ok_and(|current| current == target) {
        return Ok(());
    }
    if fs::symlink_metadata(&link).is_ok() {
        fs::remove_file(&link).with_context(|| format!("replacing {}", link.display()))?;
    }
    println!("setup: symlinking {} -> {}", link.display(), target.display());
    std::os::unix::fs::symlink(target, &link)
        .with_context(|| format!("symlinking {} -> {}", link.display(), target.display()))
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn stdout(cmd: &mut Command) -> anyhow::Result<String> {
    let Output { status, stdout, stderr } = cmd.output().with_context(|| format!("running {}", describe(cmd)))?;
    if !status.success() {
        bail!("{} failed ({status}): {}", describe(cmd), String::from_utf8_lossy(&stderr).trim());
    }
    Ok(String::from_utf8_lossy(&stdout).trim().to_owned())
}

fn run_checked(cmd: &mut Command) -> anyhow::Result<()> {
    let status = cmd.status().with_context(|| format!("running {}", describe(cmd)))?;
    if !status.success() {
        bail!("{} failed ({status})", describe(cmd));
    }
    Ok(())
}

fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program()).chain(cmd.get_args()).map(OsStr::to_string_lossy).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libllvm_symlink_is_created_then_left_alone_then_repointed() {
        let dir = std::env::temp_dir().join(format!("xtask-setup-test-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("temp dir");
        let real = dir.join("libLLVM.so.22.1-rust-1.97.0-nightly");
        fs::write(&real, b"").expect("fake lib");
        fs::write(dir.join("libLLVM-22-rust-1.97.0-nightly.so"), b"").expect("fake stub");
        let (found, major) = toolchain_libllvm(&dir).expect("finds the versioned lib");
        assert_eq!((found.as_path(), major), (real.as_path(), 22));

        link_libllvm(&dir, &real).expect("create");
        link_libllvm(&dir, &real).expect("idempotent");
        assert_eq!(fs::read_link(dir.join("libLLVM.so")).expect("link"), real);
        let newer = dir.join("libLLVM.so.23.0-rust-1.99.0-nightly");
        link_libllvm(&dir, &newer).expect("repoint");
        assert_eq!(fs::read_link(dir.join("libLLVM.so")).expect("link"), newer);
        fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn llvm_major_comes_from_the_versioned_library_name() {
        assert_eq!(libllvm_major("libLLVM.so.22.1-rust-1.97.0-nightly"), Some(22));
        assert_eq!(libllvm_major("libLLVM.so.23.0-rust-1.99.0-nightly"), Some(23));
        assert_eq!(libllvm_major("libLLVM-22-rust-1.97.0-nightly.so"), None);
        assert_eq!(libllvm_major("libLLVM.so"), None);
    }
}
