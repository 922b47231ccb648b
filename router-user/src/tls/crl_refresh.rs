//! The task that keeps the client certificate verifier on the latest good revocation lists of its source
//! (`crl::CrlSource`): a file re-read when it changes, or distribution points fetched again at `nextUpdate`.

use std::path::PathBuf;
use std::sync::Weak;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tracing::{info, warn};

use super::client_verifier::SwappableVerifier;
use super::crl::{fetch_all, parse_crls, CrlSource, CRL_FETCH_RETRY, CRL_FILE_POLL};

/// Keeps `verifier` on the latest lists of `source` while it lives (the task ends when it is dropped).
pub fn spawn_refresh(source: CrlSource, verifier: Weak<SwappableVerifier>) {
    match source {
        CrlSource::None => {}
        CrlSource::File(path) => {
            tokio::spawn(watch_file(path, verifier));
        }
        CrlSource::DistributionPoints(points) => {
            tokio::spawn(fetch_periodically(points, verifier));
        }
    }
}

/// Re-reads the file every [`CRL_FILE_POLL`]; a changed file that loads replaces the lists, one that does not
/// is logged once and the lists in use stay.
async fn watch_file(path: PathBuf, verifier: Weak<SwappableVerifier>) {
    let mut seen = std::fs::read(&path).ok();
    loop {
        tokio::time::sleep(CRL_FILE_POLL).await;
        let Some(verifier) = verifier.upgrade() else { return };
        let now = std::fs::read(&path).ok();
        if now == seen {
            continue;
        }
        seen = now;
        let loaded = seen.as_deref().ok_or_else(|| "cannot be read".to_string()).and_then(parse_crls);
        match loaded.and_then(|crls| verifier.use_crls(crls)) {
            Ok(()) => info!(path = %path.display(), "ROUTER_MUTUAL_TLS_AUTH_CRL reloaded"),
            Err(error) => {
                warn!(path = %path.display(), %error, "ROUTER_MUTUAL_TLS_AUTH_CRL not reloaded; the lists in use stay")
            }
        }
    }
}

/// Fetches one list per CA now and again when the earliest `nextUpdate` passes ([`CRL_FETCH_RETRY`] after a
/// failure). The lists are replaced only when every CA's list was fetched.
async fn fetch_periodically(points: Vec<Vec<String>>, verifier: Weak<SwappableVerifier>) {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    loop {
        let wait = match fetch_all(&client, &points).await {
            Ok((crls, next_update)) => match verifier.upgrade().map(|v| v.use_crls(crls)) {
                None => return,
                Some(Ok(())) => {
                    info!(lists = points.len(), "client CRLs fetched from their distribution points");
                    next_update.map_or(CRL_FETCH_RETRY, |at| at.duration_since(SystemTime::now()).unwrap_or_default())
                }
                Some(Err(error)) => {
                    warn!(%error, "fetched client CRLs unusable");
                    CRL_FETCH_RETRY
                }
            },
            Err(error) => {
                warn!(%error, "client CRLs not fetched; retrying later");
                CRL_FETCH_RETRY
            }
        };
        // A list already past its nextUpdate is fetched again after the retry delay, not in a tight loop.
        tokio::time::sleep(wait.max(Duration::from_secs(1))).await;
        if verifier.strong_count() == 0 {
            return;
        }
    }
}
