//! Certificates for the TLS scenarios, made with the openssl CLI in the bench's work directory: a CA, one RSA-2048
//! certificate for `*.bench.example.com` signed by it (the default certificate of both proxies, and the own
//! certificate of every edge and reencrypt route), and the pods' certificate (`*.bench.example.com` for passthrough,
//! `*.bench.svc` for the `<service>.<namespace>.svc` name reencrypt checks).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;

use super::routes::{Certificates, DOMAIN, NAMESPACE};

pub struct Pki {
    /// The CA certificate (PEM file), as clients and reencrypt verify against.
    pub ca: PathBuf,
    pub ca_pem: String,
    pub route_certificate: String,
    pub route_key: String,
    /// The route certificate and its key in one PEM file: the default certificate of both proxies.
    pub default_pem: PathBuf,
    pub pod_certificate: PathBuf,
    pub pod_key: PathBuf,
}

impl Pki {
    pub fn create(dir: &Path) -> anyhow::Result<Pki> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let ca = dir.join("ca.pem");
        let ca_key = dir.join("ca.key");
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-sha256",
            "-days",
            "30",
            "-subj",
            "/CN=bench CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            &path(&ca_key),
            "-out",
            &path(&ca),
        ])?;
        let (route_cert, route_key) = signed(dir, "route", &ca, &ca_key, &format!("DNS:*.{DOMAIN},DNS:{DOMAIN}"))?;
        let (pod_certificate, pod_key) =
            signed(dir, "pod", &ca, &ca_key, &format!("DNS:*.{DOMAIN},DNS:*.{NAMESPACE}.svc"))?;
        let read = |p: &Path| std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()));
        let (ca_pem, route_certificate, route_key) = (read(&ca)?, read(&route_cert)?, read(&route_key)?);
        let default_pem = dir.join("default.pem");
        std::fs::write(&default_pem, format!("{route_certificate}{route_key}"))
            .context("writing the default certificate")?;
        Ok(Pki { ca, ca_pem, route_certificate, route_key, default_pem, pod_certificate, pod_key })
    }

    /// An edge route's `spec.tls` (certificate, key, caCertificate); reencrypt adds destinationCACertificate.
    pub fn route_tls(&self, reencrypt: bool) -> Certificates {
        Certificates {
            certificate: self.route_certificate.clone(),
            key: self.route_key.clone(),
            ca_certificate: Some(self.ca_pem.clone()),
            destination_ca: reencrypt.then(|| self.ca_pem.clone()),
        }
    }
}

/// A key and a certificate for `san` signed by the CA: `<name>.pem`, `<name>.key`.
fn signed(dir: &Path, name: &str, ca: &Path, ca_key: &Path, san: &str) -> anyhow::Result<(PathBuf, PathBuf)> {
    let (cert, key, csr) =
        (dir.join(format!("{name}.pem")), dir.join(format!("{name}.key")), dir.join(format!("{name}.csr")));
    let ext = dir.join(format!("{name}.ext"));
    std::fs::write(
        &ext,
        format!(
            "subjectAltName={san}\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n\
             extendedKeyUsage=serverAuth\n"
        ),
    )
    .context("writing the extensions")?;
    let subject = format!("/CN=*.{DOMAIN}");
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-sha256",
        "-subj",
        &subject,
        "-keyout",
        &path(&key),
        "-out",
        &path(&csr),
    ])?;
    openssl(&[
        "x509",
        "-req",
        "-in",
        &path(&csr),
        "-CA",
        &path(ca),
        "-CAkey",
        &path(ca_key),
        "-CAcreateserial",
        "-days",
        "30",
        "-sha256",
        "-extfile",
        &path(&ext),
        "-out",
        &path(&cert),
    ])?;
    Ok((cert, key))
}

/// A self-signed RSA-2048 certificate for `*.<domain>` and `<domain>` (openssl CLI); returns (certificate, key).
pub fn self_signed_certificate(dir: &Path, domain: &str) -> anyhow::Result<(String, String)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-sha256",
        "-days",
        "30",
        "-subj",
        &format!("/CN=*.{domain}"),
        "-addext",
        &format!("subjectAltName=DNS:*.{domain},DNS:{domain}"),
        "-keyout",
        &path(&key),
        "-out",
        &path(&cert),
    ])?;
    let read = |path: &Path| std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()));
    Ok((read(&cert)?, read(&key)?))
}

fn openssl(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("openssl")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running openssl (apt package openssl)")?;
    anyhow::ensure!(
        out.status.success(),
        "openssl {} failed ({}): {}",
        args.first().unwrap_or(&""),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

fn path(p: &Path) -> String {
    p.display().to_string()
}
