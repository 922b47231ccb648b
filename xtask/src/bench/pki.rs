//! Certificates for the TLS scenarios, made with the openssl CLI in the bench's work directory: a CA, one RSA-2048
//! certificate for `*.bench.example.com` signed by it (the default certificate of both proxies, and the own
//! certificate of every edge and reencrypt route), an ECDSA P-256 one for the same names (the routes' own in the
//! ECDSA group), a second RSA-2048 one for the same names (the HTTP/2 scenario's target route's own: both
//! proxies offer h2 only on a certificate exactly one route uses), and the pods' certificate (`*.bench.example.com` for passthrough, `*.bench.svc` for the
//! `<service>.<namespace>.svc` name reencrypt checks).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;

use super::routes::{Certificates, DOMAIN, NAMESPACE};

pub struct Pki {
    /// The CA certificate (PEM file), as clients and reencrypt verify against.
    pub ca: PathBuf,
    /// The CA's key (PEM file): per-route certificates are signed with it.
    pub ca_key: PathBuf,
    pub ca_pem: String,
    /// The RSA-2048 route key (PEM file), also the key of every per-route certificate.
    pub route_key_file: PathBuf,
    pub route_certificate: String,
    pub route_key: String,
    /// The routes' certificate and key with an ECDSA P-256 key (same names, same CA).
    pub ecdsa_route_certificate: String,
    pub ecdsa_route_key: String,
    /// A second RSA-2048 certificate and key (same names, same CA), used by one route only.
    pub own_route_certificate: String,
    pub own_route_key: String,
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
        let route_names = format!("DNS:*.{DOMAIN},DNS:{DOMAIN}");
        let (route_cert, route_key) = signed(dir, "route", CertKey::Rsa2048, &ca, &ca_key, &route_names)?;
        let (ecdsa_cert, ecdsa_key) = signed(dir, "route-ecdsa", CertKey::EcdsaP256, &ca, &ca_key, &route_names)?;
        let (own_cert, own_key) = signed(dir, "route-own", CertKey::Rsa2048, &ca, &ca_key, &route_names)?;
        let (pod_certificate, pod_key) =
            signed(dir, "pod", CertKey::Rsa2048, &ca, &ca_key, &format!("DNS:*.{DOMAIN},DNS:*.{NAMESPACE}.svc"))?;
        let read = |p: &Path| std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()));
        let (ca_pem, route_certificate, route_key_path) = (read(&ca)?, read(&route_cert)?, route_key);
        let route_key = read(&route_key_path)?;
        let (ecdsa_route_certificate, ecdsa_route_key) = (read(&ecdsa_cert)?, read(&ecdsa_key)?);
        let (own_route_certificate, own_route_key) = (read(&own_cert)?, read(&own_key)?);
        let default_pem = dir.join("default.pem");
        std::fs::write(&default_pem, format!("{route_certificate}{route_key}"))
            .context("writing the default certificate")?;
        Ok(Pki {
            ca,
            ca_key,
            ca_pem,
            route_key_file: route_key_path,
            route_certificate,
            route_key,
            ecdsa_route_certificate,
            ecdsa_route_key,
            own_route_certificate,
            own_route_key,
            default_pem,
            pod_certificate,
            pod_key,
        })
    }

    /// An edge route's `spec.tls` (certificate, key, caCertificate) with an RSA-2048 or ECDSA P-256 key;
    /// reencrypt adds destinationCACertificate.
    pub fn route_tls(&self, key: CertKey, reencrypt: bool) -> Certificates {
        let (certificate, private_key) = match key {
            CertKey::Rsa2048 => (&self.route_certificate, &self.route_key),
            CertKey::EcdsaP256 => (&self.ecdsa_route_certificate, &self.ecdsa_route_key),
        };
        Certificates {
            certificate: certificate.clone(),
            key: private_key.clone(),
            ca_certificate: Some(self.ca_pem.clone()),
            destination_ca: reencrypt.then(|| self.ca_pem.clone()),
        }
    }

    /// An edge route's `spec.tls` with the RSA-2048 certificate no other route carries (nor the default).
    pub fn own_route_tls(&self) -> Certificates {
        Certificates {
            certificate: self.own_route_certificate.clone(),
            key: self.own_route_key.clone(),
            ca_certificate: Some(self.ca_pem.clone()),
            destination_ca: None,
        }
    }
}

/// The key of the route certificate the TLS scenarios are served with (the CA stays RSA-2048).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CertKey {
    /// docs/benchmarking.md §4: the same RSA-2048 certificate on both proxies.
    #[default]
    Rsa2048,
    /// ECDSA on P-256, what most certificates issued today use.
    EcdsaP256,
}

/// A key of kind `key` and a certificate for `san` signed by the CA: `<name>.pem`, `<name>.key`.
fn signed(
    dir: &Path,
    name: &str,
    key_kind: CertKey,
    ca: &Path,
    ca_key: &Path,
    san: &str,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let (cert, key, csr) =
        (dir.join(format!("{name}.pem")), dir.join(format!("{name}.key")), dir.join(format!("{name}.csr")));
    let ext = dir.join(format!("{name}.ext"));
    // An ECDSA key signs only; an RSA one may also be used for RSA key exchange (TLS 1.2).
    let usage = match key_kind {
        CertKey::Rsa2048 => "digitalSignature,keyEncipherment",
        CertKey::EcdsaP256 => "digitalSignature",
    };
    std::fs::write(
        &ext,
        format!(
            "subjectAltName={san}\nbasicConstraints=CA:FALSE\nkeyUsage=critical,{usage}\n\
             extendedKeyUsage=serverAuth\n"
        ),
    )
    .context("writing the extensions")?;
    let subject = format!("/CN=*.{DOMAIN}");
    let new_key: &[&str] = match key_kind {
        CertKey::Rsa2048 => &["-newkey", "rsa:2048"],
        CertKey::EcdsaP256 => &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
    };
    let (key_path, csr_path) = (path(&key), path(&csr));
    let rest = ["-nodes", "-sha256", "-subj", &subject, "-keyout", &key_path, "-out", &csr_path];
    openssl(&[&["req"][..], new_key, &rest[..]].concat())?;
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
    openssl_output(args).map(drop)
}

/// `openssl <args>`'s standard output; an error with its standard error when it fails.
pub fn openssl_output(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("openssl")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running openssl (apt package openssl)")?;
    anyhow::ensure!(
        out.status.success(),
        "openssl {} failed ({}): {}",
        args.iter().take(2).copied().collect::<Vec<_>>().join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).context("openssl wrote text that is not UTF-8")
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `openssl <args>`'s standard output.
    fn openssl_out(args: &[&str]) -> String {
        let out = Command::new("openssl").args(args).output().expect("running openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn route_certificates_have_the_asked_key_and_chain_to_the_ca() {
        let dir = std::env::temp_dir().join(format!("xtask-bench-pki-{}", std::process::id()));
        let pki = Pki::create(&dir).expect("certificates");
        for (key, algorithm, size) in
            [(CertKey::Rsa2048, "rsaEncryption", "2048 bit"), (CertKey::EcdsaP256, "id-ecPublicKey", "256 bit")]
        {
            let tls = pki.route_tls(key, false);
            let cert = dir.join("check.pem");
            std::fs::write(&cert, &tls.certificate).expect("writing");
            let text = openssl_out(&["x509", "-noout", "-text", "-in", &path(&cert)]);
            assert!(text.contains(algorithm) && text.contains(size), "{key:?}: {text}");
            assert!(text.contains(&format!("DNS:*.{DOMAIN}")), "{key:?}: names");
            let verified = openssl_out(&["verify", "-CAfile", &path(&pki.ca), &path(&cert)]);
            assert!(verified.contains(": OK"), "{key:?}: {verified}");
            let key_file = dir.join("check.key");
            std::fs::write(&key_file, &tls.key).expect("writing");
            let from_key = openssl_out(&["pkey", "-pubout", "-in", &path(&key_file)]);
            let from_cert = openssl_out(&["x509", "-noout", "-pubkey", "-in", &path(&cert)]);
            assert_eq!(from_key, from_cert, "{key:?}: the key belongs to the certificate");
        }
        let own = pki.own_route_tls();
        assert_ne!(own.certificate, pki.route_tls(CertKey::Rsa2048, false).certificate, "a certificate of its own");
        let cert = dir.join("own.pem");
        std::fs::write(&cert, &own.certificate).expect("writing");
        let text = openssl_out(&["x509", "-noout", "-text", "-in", &path(&cert)]);
        assert!(text.contains("rsaEncryption") && text.contains("2048 bit"), "own: {text}");
        let verified = openssl_out(&["verify", "-CAfile", &path(&pki.ca), &path(&cert)]);
        assert!(verified.contains(": OK"), "own: {verified}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
