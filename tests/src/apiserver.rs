//! A real Kubernetes control plane for the apiserver tier: `etcd` and `kube-apiserver` (1.20, built by
//! `cargo xtask test`) on free loopback ports, with token authentication, RBAC, and a serving certificate signed
//! by a CA made for the run. Both processes are ours and are killed by PID when the `ControlPlane` drops.
//!
//! Two identities: `admin` (system:masters) for the test's own changes, and the router's service account
//! `system:serviceaccount:openshift-ingress:router`, which has exactly the rights `deploy/rbac.yaml` grants.
//!
//! Tests call [`ControlPlane::start`] and return early on `None`: that happens only when the apiserver binary is
//! missing and `ROUTER_TEST_REQUIRE_APISERVER` is unset (a plain `cargo test` on a machine nobody provisioned).

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kube::api::{DynamicObject, Patch, PatchParams};
use kube::discovery::pinned_kind;
use kube::{Api, Client};
use router::config::Settings;
use router::source::SourceKind;

pub mod objects;

/// Where `cargo xtask test` caches the apiserver it builds (see xtask/src/apiserver.rs).
const DEFAULT_APISERVER: &str = "/var/cache/router-dev/kube-apiserver-1.20.2";
const DEFAULT_ETCD: &str = "/usr/bin/etcd";
const ADMIN_TOKEN: &str = "admin-token-for-tests";
const ROUTER_TOKEN: &str = "router-token-for-tests";
const NOBODY_TOKEN: &str = "nobody-token-for-tests";
/// The router's service account, as `deploy/rbac.yaml` names it.
pub const ROUTER_USER: &str = "system:serviceaccount:openshift-ingress:router";
/// Bounded waits for the processes to come up.
const START_LIMIT: Duration = Duration::from_secs(90);
/// Ports tried for a first start.
const START_ATTEMPTS: usize = 3;

/// Which identity a kubeconfig authenticates as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
    Admin,
    /// The router's service account (rights from `deploy/rbac.yaml`, once applied).
    Router,
    /// Authenticated but granted nothing.
    Nobody,
}

pub struct ControlPlane {
    dir: tempfile::TempDir,
    apiserver_bin: PathBuf,
    etcd: Option<Child>,
    etcd_port: u16,
    apiserver: Option<Child>,
    pub port: u16,
}

impl ControlPlane {
    /// `start`, then the Route CRD and the router's RBAC (`deploy/`) applied and the CRD established: where every
    /// test of the Kubernetes source begins.
    pub async fn start_with_routes() -> Option<ControlPlane> {
        let plane = Self::start().await?;
        let client = plane.client().await;
        apply_yaml(&client, include_str!("../../deploy/crd.yaml")).await;
        apply_yaml(&client, include_str!("../../deploy/rbac.yaml")).await;
        objects::wait_crd_established(&client).await;
        Some(plane)
    }

    /// Starts etcd and kube-apiserver and waits until the apiserver is ready. `None` (with the reason printed)
    /// when the binaries are missing and the tests are not required to run.
    pub async fn start() -> Option<ControlPlane> {
        let (apiserver_bin, etcd_bin) = binaries()?;
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.expect("temp dir");
        write_credentials(dir.path());
        let etcd_port = free_port();
        let peer_port = free_port();
        let etcd = spawn_logged(
            Command::new(&etcd_bin)
                .arg("--name=test")
                .arg(format!("--data-dir={}", dir.path().join("etcd").display()))
                .arg(format!("--listen-client-urls=http://127.0.0.1:{etcd_port}"))
                .arg(format!("--advertise-client-urls=http://127.0.0.1:{etcd_port}"))
                .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"))
                .arg(format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"))
                .arg(format!("--initial-cluster=test=http://127.0.0.1:{peer_port}"))
                .arg("--unsafe-no-fsync"),
            &dir.path().join("etcd.log"),
        );
        let mut plane =
            ControlPlane { dir, apiserver_bin, etcd: Some(etcd), etcd_port, apiserver: None, port: free_port() };
        // A first start can lose its port to another process between `free_port` and the bind: try new ones.
        for _ in 1..START_ATTEMPTS {
            match plane.launch_apiserver().await {
                Ok(()) => return Some(plane),
                Err(log) => eprintln!("kube-apiserver exited at start; trying another port. Its log:\n{log}"),
            }
            plane.port = free_port();
        }
        plane.start_apiserver().await;
        Some(plane)
    }

    /// Starts kube-apiserver (again) on the same port and etcd, and waits until it is ready.
    pub async fn start_apiserver(&mut self) {
        if let Err(log) = self.launch_apiserver().await {
            panic!("kube-apiserver exited: {log}");
        }
    }

    /// Starts kube-apiserver and waits until it is ready; `Err` with its log tail when it exits first.
    async fn launch_apiserver(&mut self) -> Result<(), String> {
        assert!(self.apiserver.is_none(), "the apiserver is already running");
        let dir = self.dir.path();
        let path = |name: &str| dir.join(name).display().to_string();
        let child = spawn_logged(
            Command::new(&self.apiserver_bin)
                .arg(format!("--etcd-servers=http://127.0.0.1:{}", self.etcd_port))
                .arg("--bind-address=127.0.0.1")
                .arg("--advertise-address=127.0.0.1")
                .arg(format!("--secure-port={}", self.port))
                .arg("--insecure-port=0")
                .arg(format!("--cert-dir={}", path("certs")))
                .arg(format!("--tls-cert-file={}", path("server.crt")))
                .arg(format!("--tls-private-key-file={}", path("server.key")))
                .arg(format!("--token-auth-file={}", path("tokens.csv")))
                .arg("--authorization-mode=RBAC")
                .arg("--service-cluster-ip-range=10.96.0.0/16")
                .arg("--service-account-issuer=https://kubernetes.default.svc")
                .arg(format!("--service-account-key-file={}", path("sa.pub")))
                .arg(format!("--service-account-signing-key-file={}", path("sa.key")))
                .arg("--endpoint-reconciler-type=none")
                .arg("--enable-priority-and-fairness=false"),
            &dir.join("apiserver.log"),
        );
        self.apiserver = Some(child);
        self.wait_ready().await
    }

    /// Kills kube-apiserver (etcd keeps the state).
    pub fn stop_apiserver(&mut self) {
        if let Some(child) = self.apiserver.take() {
            stop(child);
        }
    }

    /// A kubeconfig file for `identity`.
    pub fn kubeconfig(&self, identity: Identity) -> PathBuf {
        let (name, token) = match identity {
            Identity::Admin => ("admin", ADMIN_TOKEN),
            Identity::Router => ("router", ROUTER_TOKEN),
            Identity::Nobody => ("nobody", NOBODY_TOKEN),
        };
        let path = self.dir.path().join(format!("{name}.kubeconfig"));
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: https://127.0.0.1:{port}\n    \
             certificate-authority: {ca}\nusers:\n- name: {name}\n  user:\n    token: {token}\ncontexts:\n- name: {name}\n  \
             context:\n    cluster: test\n    user: {name}\ncurrent-context: {name}\n",
            port = self.port,
            ca = self.dir.path().join("ca.crt").display(),
        );
        fs::write(&path, config).expect("write kubeconfig");
        path
    }

    /// An admin client.
    pub async fn client(&self) -> Client {
        router::source::kube::connect(Some(&self.kubeconfig(Identity::Admin))).await.expect("admin client")
    }

    /// Settings for an in-process router on loopback that reads this apiserver as `identity`.
    pub fn router_settings(&self, identity: Identity) -> Settings {
        let mut settings = Settings::for_loopback("/dev/null");
        settings.manifests = None;
        settings.source = Some(SourceKind::Kube);
        settings.kubeconfig = Some(self.kubeconfig(identity));
        settings
    }

    /// The last lines of a process log, for failure messages.
    pub fn log_tail(&self, name: &str) -> String {
        let text = fs::read_to_string(self.dir.path().join(format!("{name}.log"))).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let client = self.client().await;
        let deadline = tokio::time::Instant::now() + START_LIMIT;
        loop {
            let request = http::Request::get("/readyz").body(Vec::new()).expect("request");
            if client.request_text(request).await.is_ok_and(|body| body.trim() == "ok") {
                return Ok(());
            }
            if let Some(child) = self.apiserver.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.apiserver = None;
                    return Err(format!("{status}:\n{}", self.log_tail("apiserver")));
                }
            }
            if tokio::time::Instant::now() > deadline {
                panic!("kube-apiserver not ready after {START_LIMIT:?}:\n{}", self.log_tail("apiserver"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop_apiserver();
        if let Some(etcd) = self.etcd.take() {
            stop(etcd);
        }
    }
}

/// Creates or updates every object in `yaml` (a multi-document file). Returns `kind/name` of each object.
pub async fn apply_yaml(client: &Client, yaml: &str) -> Vec<String> {
    let mut applied = Vec::new();
    // Empty and null documents are skipped.
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(yaml).expect("YAML documents");
    for value in documents {
        let object: DynamicObject = serde_json::from_value(value).expect("manifest object");
        applied.push(apply(client, object).await);
    }
    applied
}

/// Creates or updates `object` (server-side apply as the test's field manager), resolving its kind through API
/// discovery. Returns `kind/name`.
pub async fn apply(client: &Client, object: DynamicObject) -> String {
    let types = object.types.clone().expect("apiVersion and kind");
    let name = object.metadata.name.clone().expect("object name");
    let api = dynamic_api(client, &types, object.metadata.namespace.as_deref()).await;
    let params = PatchParams::apply("router-tests").force();
    api.patch(&name, &params, &Patch::Apply(&object))
        .await
        .unwrap_or_else(|e| panic!("applying {} {name}: {e}", types.kind));
    format!("{}/{name}", types.kind)
}

/// Applies a JSON object (with apiVersion and kind).
pub async fn apply_json(client: &Client, value: serde_json::Value) -> String {
    apply(client, serde_json::from_value(value).expect("object JSON")).await
}

/// Deletes `kind` `namespace/name` of `api_version` and waits until it is gone.
pub async fn delete(client: &Client, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) {
    let types = kube::api::TypeMeta { api_version: api_version.into(), kind: kind.into() };
    let api = dynamic_api(client, &types, namespace).await;
    api.delete(name, &Default::default()).await.unwrap_or_else(|e| panic!("deleting {kind} {name}: {e}"));
}

/// Reads `kind` `namespace/name` of `api_version`, if it exists.
pub async fn get(
    client: &Client,
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> Option<DynamicObject> {
    let types = kube::api::TypeMeta { api_version: api_version.into(), kind: kind.into() };
    dynamic_api(client, &types, namespace).await.get_opt(name).await.expect("get object")
}

async fn dynamic_api(client: &Client, types: &kube::api::TypeMeta, namespace: Option<&str>) -> Api<DynamicObject> {
    let gvk = kube::api::GroupVersionKind::try_from(types).expect("group/version/kind");
    let (resource, capabilities) = pinned_kind(client, &gvk).await.unwrap_or_else(|e| panic!("{gvk:?}: {e}"));
    match (&capabilities.scope, namespace) {
        (kube::discovery::Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        (kube::discovery::Scope::Namespaced, None) => Api::default_namespaced_with(client.clone(), &resource),
        (kube::discovery::Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
    }
}

/// The kube-apiserver and etcd binaries, or `None` when the tests may be skipped.
fn binaries() -> Option<(PathBuf, PathBuf)> {
    let apiserver =
        std::env::var_os("ROUTER_TEST_KUBE_APISERVER").map_or(PathBuf::from(DEFAULT_APISERVER), PathBuf::from);
    let etcd = std::env::var_os("ROUTER_TEST_ETCD").map_or(PathBuf::from(DEFAULT_ETCD), PathBuf::from);
    let missing: Vec<String> =
        [&apiserver, &etcd].iter().filter(|path| !path.is_file()).map(|path| path.display().to_string()).collect();
    if missing.is_empty() {
        return Some((apiserver, etcd));
    }
    if std::env::var_os("ROUTER_TEST_REQUIRE_APISERVER").is_some() {
        panic!("ROUTER_TEST_REQUIRE_APISERVER is set but {} missing", missing.join(" and "));
    }
    eprintln!(
        "SKIPPED: {} missing; `cargo xtask test` builds and provides the control plane (set \
         ROUTER_TEST_REQUIRE_APISERVER=1 to make this a failure)",
        missing.join(" and ")
    );
    None
}

/// CA, serving certificate for 127.0.0.1, service-account key pair, and the token file.
fn write_credentials(dir: &Path) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl").args(args).current_dir(dir).output().expect("run openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    let mut ca =
        vec!["req", "-x509", "-days", "2", "-subj", "/CN=router-tests-ca", "-keyout", "ca.key", "-out", "ca.crt"];
    ca.extend(ec);
    openssl(&ca);
    let mut csr = vec!["req", "-subj", "/CN=kube-apiserver", "-keyout", "server.key", "-out", "server.csr"];
    csr.extend(ec);
    openssl(&csr);
    fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write extensions");
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "server.crt",
    ]);
    openssl(&["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key"]);
    openssl(&["ec", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);
    let groups = "system:serviceaccounts,system:serviceaccounts:openshift-ingress";
    fs::write(
        dir.join("tokens.csv"),
        format!(
            "{ADMIN_TOKEN},admin,admin-uid,system:masters\n{ROUTER_TOKEN},{ROUTER_USER},router-uid,\"{groups}\"\n\
             {NOBODY_TOKEN},nobody,nobody-uid\n"
        ),
    )
    .expect("write token file");
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("free port");
    listener.local_addr().expect("local address").port()
}

fn spawn_logged(command: &mut Command, log: &Path) -> Child {
    let file = fs::File::create(log).expect("log file");
    let stderr = file.try_clone().expect("log file");
    command.stdin(Stdio::null()).stdout(file).stderr(stderr);
    command.spawn().unwrap_or_else(|e| panic!("starting {:?}: {e}", command.get_program()))
}

/// Kills a process we started (by its PID) and reaps it.
fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}
