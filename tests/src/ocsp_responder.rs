//! A real OCSP responder on loopback: `openssl ocsp` serving an index of certificate statuses, signing with the
//! CA itself or a delegated responder certificate; started on a port chosen once (so a test can stop it and
//! start another on the same URL) and stopped by its PID.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::pki::{Leaf, PemDir, TestCa};

/// A certificate's line in the responder's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Good,
    Revoked,
}

/// An `openssl ocsp` process; killed when dropped.
pub struct OcspResponder {
    pub addr: SocketAddr,
    files: PemDir,
    child: Option<Child>,
}

impl OcspResponder {
    /// A free loopback port for a responder, and the URL certificates name for it.
    pub fn reserve() -> (SocketAddr, String) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("free port");
        let addr = listener.local_addr().expect("local addr");
        (addr, format!("http://{addr}/"))
    }

    /// Serves `statuses` (serial numbers of certificates of `ca`) at `addr`, signed by `signer` (the CA when
    /// `None`), each response valid for a day; returns once it listens.
    pub fn start(addr: SocketAddr, ca: &TestCa, signer: Option<&Leaf>, statuses: &[(u64, Status)]) -> OcspResponder {
        let files = PemDir::new();
        let ca_file = files.write("ca.pem", &ca.cert_pem);
        let (signer_pem, signer_key) = match signer {
            Some(leaf) => (leaf.cert_pem.clone(), leaf.key_pem.clone()),
            None => (ca.cert_pem.clone(), ca.key_pem.clone()),
        };
        let signer_file = files.write("signer.pem", &signer_pem);
        let key_file = files.write("signer.key", &signer_key);
        let index = files.write("index.txt", &index(statuses));
        let mut responder = OcspResponder { addr, files, child: None };
        responder.spawn(&[ca_file, signer_file, key_file, index]);
        responder
    }

    fn spawn(&mut self, files: &[PathBuf]) {
        let [ca, signer, key, index] = files else { unreachable!("four files") };
        let log = std::fs::File::create(self.files.path().join("ocsp.log")).expect("log file");
        let child = Command::new("openssl")
            .arg("ocsp")
            .arg("-index")
            .arg(index)
            // OpenSSL 3.0 takes a port number only (it listens on every address); clients use 127.0.0.1.
            .args(["-port", &self.addr.port().to_string(), "-ignore_err"])
            .arg("-rsigner")
            .arg(signer)
            .arg("-rkey")
            .arg(key)
            .arg("-CA")
            .arg(ca)
            .args(["-ndays", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("run openssl ocsp");
        self.child = Some(child);
        // Ready once it says so: a probe connection would not do, as `openssl ocsp` answers one connection at a
        // time and stalls on one that closes without a request.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.log().contains("waiting for OCSP client connections") {
            assert!(Instant::now() < deadline, "openssl ocsp did not listen on {}: {}", self.addr, self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the responder wrote on stderr.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.files.path().join("ocsp.log")).unwrap_or_default()
    }

    /// Stops the responder (its port refuses connections afterwards).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OcspResponder {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An OpenSSL CA index: one line per serial, valid until 2099 or revoked in 2024.
fn index(statuses: &[(u64, Status)]) -> String {
    statuses
        .iter()
        .map(|(serial, status)| {
            let (flag, revoked) = match status {
                Status::Good => ("V", ""),
                Status::Revoked => ("R", "240101000000Z,keyCompromise"),
            };
            let mut hex = format!("{serial:X}");
            if hex.len() % 2 == 1 {
                hex.insert(0, '0');
            }
            format!("{flag}\t991231235959Z\t{revoked}\t{hex}\tunknown\t/CN=serial-{serial}\n")
        })
        .collect()
}
