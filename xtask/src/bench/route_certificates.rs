//! Certificates of their own for every edge and reencrypt route of a large mixed set (the `tls-40000` group):
//! one per host (`CN` and `subjectAltName` the route's host), all with the routes' RSA-2048 key, signed by the
//! bench's CA. Each is one `openssl req -x509 -CA` (OpenSSL 3), on two threads: about 20,000 certificates take
//! about a minute here.

use anyhow::Context as _;

use super::pki::{openssl_output, Pki};
use super::routes::{RouteSet, Termination};

/// Gives every edge and reencrypt route of `set` a certificate of its own (its CA and destination CA kept).
pub fn give_each_its_own(set: &mut RouteSet, pki: &Pki) -> anyhow::Result<()> {
    let mut terminating: Vec<&mut manifest_gen::BenchRoute> = set
        .routes
        .iter_mut()
        .filter(|route| matches!(route.termination, Termination::Edge | Termination::Reencrypt))
        .collect();
    let half = terminating.len().div_ceil(2);
    let (first, second) = terminating.split_at_mut(half);
    std::thread::scope(|scope| {
        let other = scope.spawn(|| sign_all(second, pki, half));
        let mine = sign_all(first, pki, 0);
        other.join().map_err(|_| anyhow::anyhow!("the signing thread panicked"))?.and(mine)
    })
}

/// Signs a certificate for each of `routes`, serial numbers from `first_serial` + 1.
fn sign_all(routes: &mut [&mut manifest_gen::BenchRoute], pki: &Pki, first_serial: usize) -> anyhow::Result<()> {
    for (index, route) in routes.iter_mut().enumerate() {
        let certificate = sign(pki, &route.host, first_serial + index + 1)?;
        let tls = route.certificates.as_mut().context("a terminating route without certificates")?;
        tls.certificate = certificate;
    }
    Ok(())
}

/// A certificate for `host` with the routes' key, signed by the CA (PEM).
fn sign(pki: &Pki, host: &str, serial: usize) -> anyhow::Result<String> {
    let (subject, san) = (format!("/CN={host}"), format!("subjectAltName=DNS:{host}"));
    let (ca, ca_key, key) =
        (pki.ca.display().to_string(), pki.ca_key.display().to_string(), pki.route_key_file.display().to_string());
    let serial = serial.to_string();
    let args = [
        "req",
        "-new",
        "-x509",
        "-key",
        &key,
        "-CA",
        &ca,
        "-CAkey",
        &ca_key,
        "-set_serial",
        &serial,
        "-days",
        "30",
        "-sha256",
        "-subj",
        &subject,
        "-addext",
        &san,
        "-addext",
        "basicConstraints=CA:FALSE",
        "-addext",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "-addext",
        "extendedKeyUsage=serverAuth",
    ];
    openssl_output(&args).with_context(|| format!("a certificate for {host}"))
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;
    use crate::bench::pki::CertKey;
    use crate::bench::routes::Pod;

    #[test]
    fn each_edge_and_reencrypt_route_gets_a_certificate_for_its_host_that_chains_to_the_ca() {
        let dir = std::env::temp_dir().join(format!("xtask-bench-own-certs-{}", std::process::id()));
        let pki = Pki::create(&dir).expect("certificates");
        let pods = [Pod { name: "pod".into(), ip: std::net::Ipv4Addr::LOCALHOST, port: 8080 }];
        let mut set = RouteSet::mixed(
            3,
            &pods,
            &pods,
            &pki.route_tls(CertKey::Rsa2048, false),
            &pki.route_tls(CertKey::Rsa2048, true),
        );
        give_each_its_own(&mut set, &pki).expect("signed");
        let mut seen = std::collections::BTreeSet::new();
        for route in &set.routes {
            let Some(tls) = &route.certificates else {
                assert!(matches!(route.termination, Termination::Http | Termination::Passthrough));
                continue;
            };
            assert!(seen.insert(tls.certificate.clone()), "{}: a certificate no other route has", route.host);
            assert_eq!(tls.destination_ca.is_some(), route.termination == Termination::Reencrypt, "{}", route.host);
            let file = dir.join("check.pem");
            std::fs::write(&file, &tls.certificate).expect("writing");
            let text =
                Command::new("openssl").args(["x509", "-noout", "-ext", "subjectAltName", "-in"]).arg(&file).output();
            let text = String::from_utf8_lossy(&text.expect("openssl x509").stdout).into_owned();
            assert!(text.contains(&format!("DNS:{}", route.host)), "{}: {text}", route.host);
            let verified = Command::new("openssl").args(["verify", "-CAfile"]).arg(&pki.ca).arg(&file).output();
            let verified = String::from_utf8_lossy(&verified.expect("openssl verify").stdout).into_owned();
            assert!(verified.contains(": OK"), "{}: {verified}", route.host);
        }
        assert_eq!(seen.len(), 6, "3 edge and 3 reencrypt routes");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
