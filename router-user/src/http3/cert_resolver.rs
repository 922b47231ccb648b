//! The certificate of a QUIC handshake, chosen from its ClientHello in the live table as :443 chooses it for
//! TCP (see `https::terminate`), or none, which fails the handshake: for a passthrough route's name (those
//! are TCP only), for a name whose route checks client certificates itself (its verifier is per SNI and
//! rustls keeps one per configuration, which a single QUIC configuration cannot switch; those routes stay on
//! TCP), and under ROUTER_STRICT_SNI for a name the default certificate does not carry.

use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tracing::debug;

use crate::https::HttpsContext;
use crate::metrics::TlsFailureLabels;

pub struct SniResolver {
    context: Arc<HttpsContext>,
}

impl SniResolver {
    pub fn new(context: Arc<HttpsContext>) -> SniResolver {
        SniResolver { context }
    }

    fn refuse(&self, reason: &'static str, sni: Option<&str>) -> Option<Arc<CertifiedKey>> {
        debug!(?sni, reason, "HTTP/3 handshake refused");
        self.context.metrics.tls_failures.get_or_create(&TlsFailureLabels { reason }).inc();
        None
    }
}

impl std::fmt::Debug for SniResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SniResolver")
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // As the ClientHello inspection of TCP :443 names it: lowercased, without a trailing dot.
        let sni = client_hello.server_name().map(|name| name.trim_end_matches('.').to_ascii_lowercase());
        let sni = sni.as_deref();
        let table = self.context.table.load();
        if sni.is_some_and(|name| table.passthrough().lookup(name, "/").is_some()) {
            return self.refuse("http3_passthrough", sni);
        }
        if table.client_auth(sni).is_some() {
            return self.refuse("http3_route_client_certificates", sni);
        }
        let Some(certs) = table.certs.as_ref() else {
            return self.refuse("no_certificate", sni);
        };
        let choice = certs.find(sni);
        if !choice.own && !self.context.configs.serves_default_for(sni) {
            return self.refuse("strict_sni", sni);
        }
        Some(self.context.configs.stapled(choice.key))
    }
}
