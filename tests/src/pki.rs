//! Test certificates: a CA, leaves it signs (server and client, wildcard, expired, SHA1-signed through the
//! `openssl` CLI since rcgen cannot sign with SHA1), self-signed leaves, and a temp dir to put PEM files in for
//! curl, openssl and the router's file settings.

use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{
    date_time_ymd, BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};

/// A certificate authority for tests. Its leaves are valid from 2020 to 2099 unless made expired.
pub struct TestCa {
    pub common_name: String,
    cert: Certificate,
    key: KeyPair,
    /// The CA certificate, PEM.
    pub cert_pem: String,
    /// The CA key, PEM (PKCS#8), for signing with the `openssl` CLI.
    pub key_pem: String,
}

/// A certificate with its key.
#[derive(Clone, Debug)]
pub struct Leaf {
    pub common_name: String,
    /// The certificate alone, PEM.
    pub cert_pem: String,
    /// Its private key, PEM (PKCS#8).
    pub key_pem: String,
    /// The certificate, DER, to compare with what a peer presented.
    pub der: Vec<u8>,
    /// The issuer's certificate, PEM ("" when self-signed).
    pub issuer_pem: String,
}

impl Leaf {
    /// Certificate followed by its issuer: a served chain.
    pub fn chain_pem(&self) -> String {
        format!("{}{}", self.cert_pem, self.issuer_pem)
    }

    /// Certificate, issuer and key in one PEM file, as DEFAULT_CERTIFICATE_PATH takes it.
    pub fn bundle_pem(&self) -> String {
        format!("{}{}{}", self.cert_pem, self.issuer_pem, self.key_pem)
    }
}

/// What a leaf is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    Server,
    Client,
}

fn distinguished_name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, "router-tests");
    name.push(DnType::CommonName, common_name);
    name
}

fn leaf_params(names: &[&str], usage: Usage, expired: bool) -> CertificateParams {
    let sans: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(sans).expect("certificate names");
    let common_name = names.first().copied().unwrap_or("client");
    params.distinguished_name = distinguished_name(common_name);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![match usage {
        Usage::Server => ExtendedKeyUsagePurpose::ServerAuth,
        Usage::Client => ExtendedKeyUsagePurpose::ClientAuth,
    }];
    if expired {
        params.not_before = date_time_ymd(2000, 1, 1);
        params.not_after = date_time_ymd(2001, 1, 1);
    } else {
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2099, 1, 1);
    }
    params.use_authority_key_identifier_extension = true;
    params
}

impl TestCa {
    /// A CA with an ECDSA P-256 key.
    pub fn new(common_name: &str) -> TestCa {
        Self::with_key(common_name, KeyPair::generate().expect("CA key"))
    }

    /// A CA with an RSA-2048 key made by `openssl genpkey` (ring cannot generate RSA keys), so that
    /// `sha1_leaf` yields the classic sha1WithRSAEncryption signature.
    pub fn new_rsa(common_name: &str) -> TestCa {
        let output = Command::new("openssl")
            .args(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
            .output()
            .expect("run openssl genpkey");
        assert!(output.status.success(), "openssl genpkey: {}", String::from_utf8_lossy(&output.stderr));
        let pem = String::from_utf8(output.stdout).expect("PEM is text");
        Self::with_key(common_name, KeyPair::from_pem(&pem).expect("RSA key loads"))
    }

    /// A CA (ECDSA P-256) whose certificate names `url` as its CRL distribution point.
    pub fn with_crl_url(common_name: &str, url: &str) -> TestCa {
        Self::build(common_name, KeyPair::generate().expect("CA key"), Some(url))
    }

    fn with_key(common_name: &str, key: KeyPair) -> TestCa {
        Self::build(common_name, key, None)
    }

    fn build(common_name: &str, key: KeyPair, crl_url: Option<&str>) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        if let Some(url) = crl_url {
            params.crl_distribution_points = vec![rcgen::CrlDistributionPoint { uris: vec![url.to_string()] }];
        }
        params.distinguished_name = distinguished_name(common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2099, 1, 1);
        let cert = params.self_signed(&key).expect("self-sign CA");
        let cert_pem = cert.pem();
        let key_pem = key.serialize_pem();
        TestCa { common_name: common_name.to_string(), cert, key, cert_pem, key_pem }
    }

    /// The CA certificate, DER.
    pub fn der(&self) -> Vec<u8> {
        self.cert.der().to_vec()
    }

    /// A server certificate for `names` (DNS names, `*.example.com` allowed; the first is also the CN).
    pub fn leaf(&self, names: &[&str]) -> Leaf {
        let common_name = names.first().copied().unwrap_or_default();
        self.issue(leaf_params(names, Usage::Server, false), KeyPair::generate().expect("leaf key"), common_name)
    }

    /// A server certificate for `names` that expired in 2001.
    pub fn expired_leaf(&self, names: &[&str]) -> Leaf {
        let common_name = names.first().copied().unwrap_or_default();
        self.issue(leaf_params(names, Usage::Server, true), KeyPair::generate().expect("leaf key"), common_name)
    }

    /// A client certificate with CN `common_name` (clientAuth, no SAN).
    pub fn client_leaf(&self, common_name: &str) -> Leaf {
        let mut params = leaf_params(&[], Usage::Client, false);
        params.distinguished_name = distinguished_name(common_name);
        self.issue(params, KeyPair::generate().expect("client key"), common_name)
    }

    /// A client certificate with CN `common_name` and serial number `serial`, to be named in a CRL.
    pub fn client_leaf_with_serial(&self, common_name: &str, serial: u64) -> Leaf {
        let mut params = leaf_params(&[], Usage::Client, false);
        params.distinguished_name = distinguished_name(common_name);
        params.serial_number = Some(rcgen::SerialNumber::from(serial));
        self.issue(params, KeyPair::generate().expect("client key"), common_name)
    }

    /// A server certificate for `names` with serial number `serial` whose Authority Information Access names
    /// `ocsp_url` as its OCSP responder.
    pub fn leaf_with_ocsp(&self, names: &[&str], serial: u64, ocsp_url: &str) -> Leaf {
        let mut params = leaf_params(names, Usage::Server, false);
        params.serial_number = Some(rcgen::SerialNumber::from(serial));
        params.custom_extensions = vec![ocsp_access(ocsp_url)];
        let common_name = names.first().copied().unwrap_or_default();
        self.issue(params, KeyPair::generate().expect("leaf key"), common_name)
    }

    /// A delegated OCSP responder's certificate (extended key usage OCSPSigning) signed by this CA.
    pub fn ocsp_signer(&self, common_name: &str) -> Leaf {
        let mut params = leaf_params(&[], Usage::Server, false);
        params.distinguished_name = distinguished_name(common_name);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::OcspSigning];
        self.issue(params, KeyPair::generate().expect("responder key"), common_name)
    }

    /// A CRL of this CA (issued 2024, next update 2099) revoking the certificates with serial numbers `revoked`;
    /// PEM, or DER when `der`.
    pub fn crl(&self, revoked: &[u64], der: bool) -> Vec<u8> {
        let revoked_certs = revoked
            .iter()
            .map(|serial| rcgen::RevokedCertParams {
                serial_number: rcgen::SerialNumber::from(*serial),
                revocation_time: date_time_ymd(2024, 1, 1),
                reason_code: None,
                invalidity_date: None,
            })
            .collect();
        let params = rcgen::CertificateRevocationListParams {
            this_update: date_time_ymd(2024, 1, 1),
            next_update: date_time_ymd(2099, 1, 1),
            crl_number: rcgen::SerialNumber::from(1u64),
            issuing_distribution_point: None,
            revoked_certs,
            key_identifier_method: rcgen::KeyIdMethod::Sha256,
        };
        let crl = params.signed_by(&self.cert, &self.key).expect("sign CRL");
        match der {
            true => crl.der().to_vec(),
            false => crl.pem().expect("CRL PEM").into_bytes(),
        }
    }

    fn issue(&self, params: CertificateParams, key: KeyPair, common_name: &str) -> Leaf {
        let common_name = common_name.to_string();
        let cert = params.signed_by(&key, &self.cert, &self.key).expect("sign leaf");
        Leaf {
            common_name,
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().to_vec(),
            issuer_pem: self.cert_pem.clone(),
        }
    }

    /// A server certificate for `names` signed by this CA with SHA1 (`openssl x509 -req -sha1`); its key is a
    /// fresh RSA-2048 key. `work` is a scratch directory for the CLI's files.
    pub fn sha1_leaf(&self, names: &[&str], work: &Path) -> Leaf {
        let common_name = names.first().copied().expect("at least one name");
        let file = |name: &str| work.join(format!("sha1-{common_name}-{name}")).to_string_lossy().into_owned();
        let (ca_cert, ca_key, key, csr, ext, cert) =
            (file("ca.pem"), file("ca.key"), file("leaf.key"), file("leaf.csr"), file("ext.cnf"), file("leaf.pem"));
        std::fs::write(&ca_cert, &self.cert_pem).expect("write CA cert");
        std::fs::write(&ca_key, &self.key_pem).expect("write CA key");
        let sans: Vec<String> = names.iter().map(|n| format!("DNS:{n}")).collect();
        std::fs::write(
            &ext,
            format!("subjectAltName={}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n", sans.join(",")),
        )
        .expect("write extensions");
        run_openssl(&[
            "req",
            "-new",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &key,
            "-subj",
            &format!("/O=router-tests/CN={common_name}"),
            "-out",
            &csr,
        ]);
        run_openssl(&[
            "x509",
            "-req",
            "-sha1",
            "-in",
            &csr,
            "-CA",
            &ca_cert,
            "-CAkey",
            &ca_key,
            "-set_serial",
            "4242",
            "-days",
            "3650",
            "-extfile",
            &ext,
            "-out",
            &cert,
        ]);
        let cert_pem = std::fs::read_to_string(&cert).expect("read SHA1 leaf");
        let key_pem = std::fs::read_to_string(&key).expect("read SHA1 leaf key");
        let der = pem_to_der(&cert_pem).into_iter().next().expect("one certificate");
        Leaf { common_name: common_name.to_string(), cert_pem, key_pem, der, issuer_pem: self.cert_pem.clone() }
    }
}

/// The Authority Information Access extension naming `url` as OCSP responder (rcgen has no field for it):
/// `SEQUENCE { SEQUENCE { id-ad-ocsp, [6] IA5String url } }`.
fn ocsp_access(url: &str) -> rcgen::CustomExtension {
    let der = |tag: u8, value: &[u8]| {
        assert!(value.len() < 128, "short form lengths only");
        [&[tag, value.len() as u8][..], value].concat()
    };
    const ID_AD_OCSP: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01];
    let description = der(0x30, &[der(0x06, ID_AD_OCSP), der(0x86, url.as_bytes())].concat());
    rcgen::CustomExtension::from_oid_content(&[1, 3, 6, 1, 5, 5, 7, 1, 1], der(0x30, &description))
}

/// A self-signed server certificate for `names`.
pub fn self_signed_leaf(names: &[&str]) -> Leaf {
    let key = KeyPair::generate().expect("key");
    let cert = leaf_params(names, Usage::Server, false).self_signed(&key).expect("self-sign");
    Leaf {
        common_name: names.first().copied().unwrap_or_default().to_string(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        der: cert.der().to_vec(),
        issuer_pem: String::new(),
    }
}

fn run_openssl(args: &[&str]) {
    let output = Command::new("openssl").args(args).output().expect("run openssl");
    assert!(
        output.status.success(),
        "openssl {}: {}",
        args.first().copied().unwrap_or_default(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Every certificate in `pem`, DER.
pub fn pem_to_der(pem: &str) -> Vec<Vec<u8>> {
    use rustls_pki_types::pem::PemObject;
    rustls_pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .map(|c| c.expect("PEM certificate").to_vec())
        .collect()
}

/// The signature algorithm of certificate `pem` as `openssl x509 -text` names it (e.g. `sha1WithRSAEncryption`).
pub fn signature_algorithm(pem: &str) -> String {
    let mut child = Command::new("openssl")
        .args(["x509", "-noout", "-text"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run openssl x509");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(pem.as_bytes()).expect("write PEM to openssl");
    }
    let output = child.wait_with_output().expect("openssl x509 output");
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Signature Algorithm:").map(|s| s.trim().to_string()))
        .unwrap_or_default()
}

/// A temporary directory for PEM files handed to curl, openssl and the router.
pub struct PemDir {
    dir: tempfile::TempDir,
}

impl PemDir {
    pub fn new() -> PemDir {
        PemDir { dir: tempfile::tempdir().expect("PEM temp dir") }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `contents` to `file` in the directory and returns its path.
    pub fn write(&self, file: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(file);
        std::fs::write(&path, contents).expect("write PEM file");
        path
    }
}

impl Default for PemDir {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn openssl_verify(ca: &Path, leaf: &Path, extra: &[&str]) -> (bool, String) {
        let mut args = vec!["verify", "-CAfile", ca.to_str().expect("path")];
        args.extend_from_slice(extra);
        args.push(leaf.to_str().expect("path"));
        let output = Command::new("openssl").args(&args).output().expect("openssl verify");
        (
            output.status.success(),
            format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)),
        )
    }

    #[test]
    fn leaves_chain_to_their_ca_and_expired_ones_do_not_verify() {
        let ca = TestCa::new("test-ca");
        let files = PemDir::new();
        let ca_path = files.write("ca.pem", &ca.cert_pem);
        let good = ca.leaf(&["www.example.com", "*.example.com"]);
        let (ok, out) = openssl_verify(&ca_path, &files.write("good.pem", &good.cert_pem), &[]);
        assert!(ok, "{out}");
        let expired = ca.expired_leaf(&["old.example.com"]);
        let (ok, out) = openssl_verify(&ca_path, &files.write("expired.pem", &expired.cert_pem), &[]);
        assert!(!ok && out.contains("expired"), "{out}");
        let other = TestCa::new("other-ca").leaf(&["www.example.com"]);
        let (ok, _) = openssl_verify(&ca_path, &files.write("other.pem", &other.cert_pem), &[]);
        assert!(!ok, "a leaf of another CA must not verify");
        let client = ca.client_leaf("alice");
        let (ok, out) =
            openssl_verify(&ca_path, &files.write("client.pem", &client.cert_pem), &["-purpose", "sslclient"]);
        assert!(ok, "{out}");
        assert_eq!(client.common_name, "alice");
        assert_eq!(good.common_name, "www.example.com");
        assert_eq!(pem_to_der(&good.chain_pem()), vec![good.der.clone(), ca.der()]);
        let self_signed = self_signed_leaf(&["self.example.com"]);
        assert_eq!(pem_to_der(&self_signed.cert_pem), vec![self_signed.der.clone()]);
    }

    #[test]
    fn sha1_leaf_is_signed_with_sha1_by_the_ca() {
        let work = PemDir::new();
        for ca in [TestCa::new_rsa("rsa-ca"), TestCa::new("ec-ca")] {
            let leaf = ca.sha1_leaf(&["old.example.com"], work.path());
            let algorithm = signature_algorithm(&leaf.cert_pem);
            assert!(algorithm.to_ascii_lowercase().contains("sha1"), "{algorithm}");
            let ca_path = work.write("sha1-ca.pem", &ca.cert_pem);
            let leaf_path = work.write("sha1-leaf.pem", &leaf.cert_pem);
            // At security level 0 OpenSSL still accepts SHA1: this proves the chain itself is right.
            let (ok, out) = openssl_verify(&ca_path, &leaf_path, &["-auth_level", "0"]);
            assert!(ok, "{out}");
        }
        assert_eq!(signature_algorithm(&TestCa::new_rsa("rsa").leaf(&["a.test"]).cert_pem), "sha256WithRSAEncryption");
    }
}
