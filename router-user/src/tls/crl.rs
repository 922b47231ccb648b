//! Revocation lists of client certificates: where they come from (ROUTER_MUTUAL_TLS_AUTH_CRL, a file of PEM or
//! DER CRLs re-read when it changes; else, as the OpenShift router does, the CRL distribution points that the
//! client CA certificates name, fetched over `http:` and fetched again when the earliest `nextUpdate` passes),
//! and how they are read and fetched (the task that keeps the verifier on the latest lists: `crl_refresh`).
//! Until fetched lists exist, every client certificate is refused (OpenShift serves a placeholder CRL meanwhile,
//! with the same effect).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, CertificateRevocationListDer};
use tracing::warn;
use x509_parser::extensions::{DistributionPointName, GeneralName, ParsedExtension};

/// How often ROUTER_MUTUAL_TLS_AUTH_CRL is compared with what was loaded.
pub const CRL_FILE_POLL: Duration = Duration::from_secs(1);
/// After a failed fetch, or when no `nextUpdate` can be read, the next fetch comes this much later.
pub const CRL_FETCH_RETRY: Duration = Duration::from_secs(5 * 60);
/// One fetch of one distribution point may take this long.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest CRL accepted from a distribution point.
const MAX_CRL_BYTES: usize = 32 << 20;

/// Where the client certificates' revocation lists come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CrlSource {
    /// No revocation check.
    #[default]
    None,
    /// ROUTER_MUTUAL_TLS_AUTH_CRL.
    File(PathBuf),
    /// The `http:` distribution points named by the client CA certificates, one list per CA.
    DistributionPoints(Vec<Vec<String>>),
}

impl CrlSource {
    /// The file when one is given; else the distribution points of `ca_certs` if any names one; else none.
    pub fn new(file: Option<&Path>, ca_certs: &[CertificateDer<'_>]) -> CrlSource {
        if let Some(path) = file {
            return CrlSource::File(path.to_path_buf());
        }
        let points: Vec<Vec<String>> =
            ca_certs.iter().map(distribution_points).filter(|urls| !urls.is_empty()).collect();
        if points.is_empty() {
            CrlSource::None
        } else {
            CrlSource::DistributionPoints(points)
        }
    }
}

/// The `http:` URIs of the CRL distribution points extension of `cert`.
pub fn distribution_points(cert: &CertificateDer<'_>) -> Vec<String> {
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert) else { return Vec::new() };
    let mut urls = Vec::new();
    for extension in parsed.extensions() {
        let ParsedExtension::CRLDistributionPoints(points) = extension.parsed_extension() else { continue };
        for point in points.iter() {
            let Some(DistributionPointName::FullName(names)) = &point.distribution_point else { continue };
            for name in names {
                match name {
                    GeneralName::URI(uri) if uri.starts_with("http:") => urls.push(uri.to_string()),
                    GeneralName::URI(uri) => warn!(uri, "CRL distribution point skipped: only http: is fetched"),
                    _ => {}
                }
            }
        }
    }
    urls
}

/// Every CRL in `bytes`: PEM `X509 CRL` blocks, or one DER CRL.
pub fn parse_crls(bytes: &[u8]) -> Result<Vec<CertificateRevocationListDer<'static>>, String> {
    let pem: Result<Vec<_>, _> = CertificateRevocationListDer::pem_slice_iter(bytes).collect();
    let crls = match pem {
        Ok(crls) if !crls.is_empty() => crls,
        Ok(_) if bytes.first() == Some(&0x30) => vec![CertificateRevocationListDer::from(bytes.to_vec())],
        Ok(_) => return Err("no X509 CRL found".to_string()),
        Err(e) => return Err(format!("PEM: {e}")),
    };
    for (index, crl) in crls.iter().enumerate() {
        x509_parser::parse_x509_crl(crl).map_err(|e| format!("CRL {index} does not parse: {e}"))?;
    }
    Ok(crls)
}

/// The CRLs of ROUTER_MUTUAL_TLS_AUTH_CRL.
pub fn load_crl_file(path: &Path) -> Result<Vec<CertificateRevocationListDer<'static>>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_crls(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

pub(super) type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>;

/// One list per CA (the first of its distribution points that answers), and the earliest `nextUpdate`.
pub(super) async fn fetch_all(
    client: &HttpClient,
    points: &[Vec<String>],
) -> Result<(Vec<CertificateRevocationListDer<'static>>, Option<SystemTime>), String> {
    let mut crls = Vec::new();
    let mut earliest: Option<SystemTime> = None;
    for urls in points {
        let mut errors = Vec::new();
        let mut fetched = None;
        for url in urls {
            match fetch(client, url).await {
                Ok(list) => {
                    fetched = Some(list);
                    break;
                }
                Err(error) => errors.push(format!("{url}: {error}")),
            }
        }
        let Some(list) = fetched else { return Err(errors.join("; ")) };
        for crl in &list {
            if let Some(at) = next_update(crl) {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
            }
        }
        crls.extend(list);
    }
    Ok((crls, earliest))
}

async fn fetch(client: &HttpClient, url: &str) -> Result<Vec<CertificateRevocationListDer<'static>>, String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("not a URL: {e}"))?;
    let exchange = async {
        let response = client.get(uri).await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("status {}", response.status()));
        }
        let body = Limited::new(response.into_body(), MAX_CRL_BYTES).collect().await.map_err(|e| e.to_string())?;
        Ok(body.to_bytes())
    };
    let bytes = tokio::time::timeout(FETCH_TIMEOUT, exchange).await.map_err(|_| "timed out".to_string())??;
    parse_crls(&bytes)
}

/// When `crl` says the next list will be out.
fn next_update(crl: &CertificateRevocationListDer<'_>) -> Option<SystemTime> {
    let (_, parsed) = x509_parser::parse_x509_crl(crl).ok()?;
    let seconds = u64::try_from(parsed.next_update()?.timestamp()).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(seconds))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::test_pki::Pki;

    #[test]
    fn reads_pem_and_der_lists_and_refuses_anything_else() {
        let pki = Pki::new();
        let crl = pki.crl(&[]);
        let pem = crl.pem().unwrap();
        assert_eq!(parse_crls(format!("{pem}{pem}").as_bytes()).unwrap().len(), 2);
        assert_eq!(parse_crls(crl.der()).unwrap(), vec![crl.der().clone()]);
        assert!(parse_crls(b"nothing here").is_err());
        assert!(parse_crls(pki.ca.pem().as_bytes()).is_err(), "a certificate is not a CRL");
        assert!(next_update(crl.der()).unwrap() > SystemTime::now());
    }

    #[test]
    fn distribution_points_of_the_ca_certificates() {
        let with = Pki::with_crl_url("http://127.0.0.1:9/ca.crl");
        let without = Pki::new();
        assert_eq!(distribution_points(with.ca.der()), ["http://127.0.0.1:9/ca.crl"]);
        assert!(distribution_points(without.ca.der()).is_empty());
        let file = Path::new("/x.pem");
        assert_eq!(CrlSource::new(Some(file), &[with.ca.der().clone()]), CrlSource::File(file.to_path_buf()));
        assert_eq!(
            CrlSource::new(None, &[without.ca.der().clone(), with.ca.der().clone()]),
            CrlSource::DistributionPoints(vec![vec!["http://127.0.0.1:9/ca.crl".to_string()]])
        );
        assert_eq!(CrlSource::new(None, &[without.ca.der().clone()]), CrlSource::None);
    }
}
