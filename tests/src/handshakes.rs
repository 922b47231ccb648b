//! Full TLS handshakes timed on loopback: a bounded run of real TCP connections, each a fresh rustls client
//! (no resumption) offering one key exchange group, for measurements that compare groups or providers. The
//! numbers are indicative only: the machine's other work shares the cores.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::Resumption;
use rustls::crypto::SupportedKxGroup;
use rustls::{ClientConfig, NamedGroup};

use crate::tls_client::{provider, tls_connect, AcceptAnything};

/// A rustls client (ring, plus `groups` as given, first one's key share sent) that never resumes.
pub fn client_offering(groups: &[&'static dyn SupportedKxGroup]) -> Arc<ClientConfig> {
    let mut ring = (*provider()).clone();
    ring.kx_groups = groups.to_vec();
    let ring = Arc::new(ring);
    let mut config = ClientConfig::builder_with_provider(Arc::clone(&ring))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnything(ring)))
        .with_no_client_auth();
    config.resumption = Resumption::disabled();
    Arc::new(config)
}

/// One handshake with `client` at `addr` for `sni`: the group negotiated and the time from connect to done.
pub async fn timed_handshake(addr: SocketAddr, sni: &str, client: Arc<ClientConfig>) -> (NamedGroup, Duration) {
    let start = Instant::now();
    let stream = tls_connect(addr, Some(sni), client).await.expect("handshake");
    let elapsed = start.elapsed();
    let group = stream.get_ref().1.negotiated_key_exchange_group().expect("a group").name();
    (group, elapsed)
}

/// `rounds` rounds, each one handshake per client in turn (so slow minutes of the machine hit every client
/// alike): per client, the median and the 90th percentile.
pub async fn compare(
    addr: SocketAddr,
    sni: &str,
    clients: &[(&str, Arc<ClientConfig>)],
    rounds: usize,
) -> Vec<(String, Duration, Duration)> {
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); clients.len()];
    for _ in 0..rounds {
        for (i, (_, client)) in clients.iter().enumerate() {
            times[i].push(timed_handshake(addr, sni, Arc::clone(client)).await.1);
        }
    }
    clients
        .iter()
        .zip(times)
        .map(|((name, _), mut t)| {
            t.sort();
            (name.to_string(), t[t.len() / 2], t[t.len() * 9 / 10])
        })
        .collect()
}
