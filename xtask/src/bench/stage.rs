//! The setting every group of a bench run shares, made once before the first group: the work directory, the router
//! binary, the pods (nginx), the certificates, the TLS clients' configuration and wrk scripts, and how often each
//! run is repeated. Groups read it; nothing in it changes while they run.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use super::backend::Backends;
use super::loadgen::{self, write_random_path_script};
use super::pki::Pki;
use super::tls;

pub struct Stage {
    /// The bench's scratch directory (configs, manifests, logs, sockets).
    pub work: PathBuf,
    /// The router binary under test.
    pub binary: PathBuf,
    /// The HTTP/3 load generator (empty when no scenario uses it).
    pub h3load: PathBuf,
    pub backends: Backends,
    /// The default certificate of both proxies (PEM: certificate and key).
    pub certificate: PathBuf,
    pub pki: Pki,
    /// `OPENSSL_CONF` of every TLS client.
    pub client_config: PathBuf,
    /// wrk scripts that connect to an address whatever the URL's host is (TLS runs: the URL's host is the SNI).
    pub connect_scripts: BTreeMap<IpAddr, PathBuf>,
    /// The wrk script of the random-path runs.
    pub script: PathBuf,
    /// `--quick`: one short run, no idle waits or reruns.
    pub quick: bool,
    /// Repetitions of every run.
    pub runs: u32,
}

impl Stage {
    /// Makes the certificates, starts the pods and writes the clients' files under `work`.
    pub fn prepare(work: &Path, binary: PathBuf, h3load: PathBuf, quick: bool, runs: u32) -> anyhow::Result<Stage> {
        let pki = Pki::create(&work.join("pki"))?;
        let backends = Backends::start(&work.join("nginx"), &pki)?;
        let script = write_random_path_script(work)?;
        let client_config = tls::write_client_config(work)?;
        let mut connect_scripts = BTreeMap::new();
        for ip in [Ipv4Addr::LOCALHOST, backends.tls_pods[0].ip] {
            connect_scripts.insert(ip.into(), tls::write_connect_script(work, ip.into())?);
        }
        Ok(Stage {
            work: work.to_path_buf(),
            binary,
            h3load,
            certificate: pki.default_pem.clone(),
            backends,
            pki,
            client_config,
            connect_scripts,
            script,
            quick,
            runs,
        })
    }

    /// The wrk script that connects to `ip` whatever the URL's host is.
    pub fn connect_script(&self, ip: IpAddr) -> PathBuf {
        self.connect_scripts.get(&ip).cloned().unwrap_or_else(|| self.work.join(format!("connect-{ip}.lua")))
    }

    /// How the pods were started, for the results.
    pub fn pods_command(&self) -> String {
        let backends = &self.backends;
        format!(
            "taskset -c {} nginx -p {dir} -e {dir}/error.log -c {}  # pods: {}; TLS on :{}, without resumption on :{}",
            loadgen::CLIENT_CPU,
            backends.config.display(),
            backends.pods.iter().map(|p| format!("{}:{}", p.ip, p.port)).collect::<Vec<_>>().join(" "),
            backends.tls_pods[0].port,
            backends.tls_full_port,
            dir = backends.config.parent().map_or(String::new(), |d| d.display().to_string()),
        )
    }
}
