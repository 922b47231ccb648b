//! The real Kubernetes control plane the apiserver tests run against: `etcd` from Debian's `etcd-server`, and a
//! `kube-apiserver` built once from Debian's `kubernetes` source package and cached outside the repository.
//!
//! The build: enable `deb-src` for the running release when no source entry exists, `apt-get source
//! --download-only kubernetes`, unpack the upstream tarball, swap the vendored `modern-go/reflect2` 1.0.1 (it
//! crashes on the first custom object under Go 1.19) for Debian's 1.0.2, and run `make WHAT=cmd/kube-apiserver`
//! with `golang-1.19-go`, vendored modules only and cgo off. About five minutes on two cores; afterwards
//! [`ensure`] only checks that the cached binary answers `--version`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context as _};

use crate::dev_cache::cache_dir;
use crate::packages::dpkg_installed;

/// The upstream release inside Debian's `1.20.5+really1.20.2` source package.
const KUBERNETES_VERSION: &str = "1.20.2";
/// Debian packages the build and the tests need.
const APT_PACKAGES: &[&str] =
    &["golang-1.19-go", "golang-github-modern-go-reflect2-dev", "etcd-server", "make", "rsync", "openssl"];
const GO_BIN: &str = "/usr/lib/go-1.19/bin";
const REFLECT2_SOURCE: &str = "/usr/share/gocode/src/github.com/modern-go/reflect2";
const SOURCES_ENTRY: &str = "/etc/apt/sources.list.d/router-dev-src.sources";

/// The binaries the test harness starts.
pub struct ControlPlane {
    pub kube_apiserver: PathBuf,
    pub etcd: PathBuf,
}

impl ControlPlane {
    /// Tells the test processes cargo starts where the binaries are, and that the apiserver tests must run
    /// (they may skip only when nobody provisioned them).
    pub fn export_for_tests(&self) {
        std::env::set_var("ROUTER_TEST_KUBE_APISERVER", &self.kube_apiserver);
        std::env::set_var("ROUTER_TEST_ETCD", &self.etcd);
        std::env::set_var("ROUTER_TEST_REQUIRE_APISERVER", "1");
    }
}

/// Makes sure etcd and a cached kube-apiserver exist; builds the apiserver when it is missing.
pub fn ensure() -> anyhow::Result<ControlPlane> {
    apt_install(APT_PACKAGES)?;
    let etcd = PathBuf::from("/usr/bin/etcd");
    if !etcd.is_file() {
        bail!("etcd-server is installed but {} is missing", etcd.display());
    }
    let cache = cache_dir();
    let kube_apiserver = cache.join(format!("kube-apiserver-{KUBERNETES_VERSION}"));
    if !answers_version(&kube_apiserver) {
        let started = Instant::now();
        build(&cache, &kube_apiserver)?;
        println!("apiserver: built {} in {:.0} s", kube_apiserver.display(), started.elapsed().as_secs_f64());
    }
    println!("apiserver: ok: {} and {}", kube_apiserver.display(), etcd.display());
    Ok(ControlPlane { kube_apiserver, etcd })
}

fn answers_version(binary: &Path) -> bool {
    Command::new(binary).arg("--version").output().is_ok_and(|out| {
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains(&format!("v{KUBERNETES_VERSION}"))
    })
}

fn build(cache: &Path, target: &Path) -> anyhow::Result<()> {
    ensure_source_entries()?;
    let work = cache.join("kubernetes-build");
    if work.exists() {
        fs::remove_dir_all(&work).with_context(|| format!("clearing {}", work.display()))?;
    }
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    println!("apiserver: building kube-apiserver {KUBERNETES_VERSION} from Debian's source package (about 5 min)");

    let mut download = Command::new("apt-get");
    download.args(["source", "--download-only", "kubernetes"]).current_dir(&work);
    if !run(&mut download)? {
        // The source index may be missing or stale: refresh once.
        apt_get(&["update"])?;
        if !run(&mut download)? {
            bail!("apt-get source --download-only kubernetes failed");
        }
    }
    let tarball = find_entry(&work, |name| name.starts_with("kubernetes_") && name.ends_with(".orig.tar.gz"))?;
    let mut unpack = Command::new("tar");
    unpack.arg("xzf").arg(&tarball).current_dir(&work);
    if !run(&mut unpack)? {
        bail!("unpacking {} failed", tarball.display());
    }
    let tree = find_entry(&work, |name| name.starts_with("kubernetes-"))?;

    let vendored = tree.join("vendor/github.com/modern-go/reflect2");
    fs::remove_dir_all(&vendored).with_context(|| format!("removing {}", vendored.display()))?;
    copy_dir(Path::new(REFLECT2_SOURCE), &vendored)?;

    let path = format!("{GO_BIN}:{}", std::env::var("PATH").unwrap_or_default());
    let mut make = Command::new("make");
    make.arg("WHAT=cmd/kube-apiserver")
        .current_dir(&tree)
        .env("PATH", path)
        .env("GOFLAGS", "-mod=vendor")
        .env("GOPROXY", "off")
        .env("CGO_ENABLED", "0")
        .env("GOCACHE", work.join("gocache"))
        .env("GOPATH", work.join("gopath"));
    if !run(&mut make)? {
        bail!("make WHAT=cmd/kube-apiserver failed in {}", tree.display());
    }
    let built = tree.join("_output/local/bin/linux/amd64/kube-apiserver");
    let staging = target.with_extension("partial");
    fs::copy(&built, &staging).with_context(|| format!("copying {}", built.display()))?;
    fs::rename(&staging, target).with_context(|| format!("installing {}", target.display()))?;
    fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    if !answers_version(target) {
        bail!("{} was built but does not answer --version with v{KUBERNETES_VERSION}", target.display());
    }
    Ok(())
}

/// Adds a `deb-src` entry for the running Debian release unless apt already has one.
fn ensure_source_entries() -> anyhow::Result<()> {
    let mut lists = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(entries) = fs::read_dir("/etc/apt/sources.list.d") {
        lists.extend(entries.flatten().map(|entry| entry.path()));
    }
    let has_source = lists.iter().filter_map(|path| fs::read_to_string(path).ok()).any(|text| {
        text.lines().any(|line| {
            let line = line.trim_start();
            line.starts_with("deb-src ") || (line.starts_with("Types:") && line.contains("deb-src"))
        })
    });
    if has_source {
        return Ok(());
    }
    let release = fs::read_to_string("/etc/os-release").context("reading /etc/os-release")?;
    let Some(codename) = release.lines().find_map(|line| line.strip_prefix("VERSION_CODENAME=")) else {
        bail!("no VERSION_CODENAME in /etc/os-release: cannot add a deb-src entry");
    };
    let entry = format!(
        "Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: {codename} {codename}-updates\nComponents: main\n\
         Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    );
    println!("apiserver: adding {SOURCES_ENTRY} (deb-src for {codename})");
    fs::write(SOURCES_ENTRY, entry).with_context(|| format!("writing {SOURCES_ENTRY} (needs root)"))?;
    apt_get(&["update"])
}

fn apt_install(packages: &[&str]) -> anyhow::Result<()> {
    let missing: Vec<&str> = packages.iter().copied().filter(|package| !dpkg_installed(package)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    println!("apiserver: installing apt packages: {}", missing.join(" "));
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend(&missing);
    if apt_get(&install).is_err() {
        apt_get(&["update"])?;
        apt_get(&install)?;
    }
    Ok(())
}

fn apt_get(args: &[&str]) -> anyhow::Result<()> {
    let mut cmd = Command::new("apt-get");
    cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
    if !run(&mut cmd)? {
        bail!("apt-get {} failed (it needs root)", args.join(" "));
    }
    Ok(())
}

fn run(cmd: &mut Command) -> anyhow::Result<bool> {
    let status = cmd.status().with_context(|| format!("running {:?}", cmd.get_program()))?;
    Ok(status.success())
}

/// The one entry of `dir` whose file name satisfies `wanted`.
fn find_entry(dir: &Path, wanted: impl Fn(&str) -> bool) -> anyhow::Result<PathBuf> {
    let entries = fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))?;
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_some_and(&wanted) {
            return Ok(entry.path());
        }
    }
    bail!("expected entry not found in {}", dir.display())
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("listing {}", from.display()))? {
        let entry = entry.with_context(|| format!("listing {}", from.display()))?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if entry.file_name() != "go.mod" {
            // A vendored package carries no go.mod of its own.
            fs::copy(entry.path(), &target).with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}
