//! Routes' own client certificate checks, per request: the handshake checked the certificate for the SNI's
//! host, but one connection can carry requests for other hosts (HTTP/2 coalescing, an HTTP/1.1 Host that is not
//! the SNI). A route that checks client certificates therefore takes a request only from a connection whose
//! handshake made the same check (same CA bundle, mode and filter); any other gets 421 Misdirected Request, so
//! the client opens a connection for that host. A certificate whose subject the route's filter does not take
//! gets 403. Routes without a check take every request, without the certificate's headers.

use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use rustls_pki_types::CertificateDer;

use crate::tls::{client_cert_headers, RouteClientAuth};

/// What a connection's handshake checked.
#[derive(Default)]
pub struct HandshakeCheck {
    /// The check of the SNI's route; `None`: no certificate was asked for (or the router-wide one was).
    check: Option<Arc<RouteClientAuth>>,
    peer: Option<Vec<CertificateDer<'static>>>,
    /// X-SSL-Client-* of the certificate, for requests of routes with a check.
    headers: Vec<(HeaderName, HeaderValue)>,
}

/// What a request may do.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Misdirected,
    Forbidden,
}

impl HandshakeCheck {
    pub fn new(check: Option<Arc<RouteClientAuth>>, peer: Option<&[CertificateDer<'static>]>) -> HandshakeCheck {
        // Kept only where a route's check will read them.
        let peer = peer.filter(|_| check.is_some());
        let headers = if check.is_some() { client_cert_headers(peer) } else { Vec::new() };
        HandshakeCheck { check, peer: peer.map(<[_]>::to_vec), headers }
    }

    /// Whether a request for a route with check `route` may go on this connection.
    pub fn judge(&self, route: Option<&RouteClientAuth>) -> Verdict {
        let Some(route) = route else { return Verdict::Pass };
        match self.check.as_deref() {
            Some(made) if made == route => match route.admits_subject(self.peer.as_deref()) {
                true => Verdict::Pass,
                false => Verdict::Forbidden,
            },
            _ => Verdict::Misdirected,
        }
    }

    /// The headers the route's pod gets (after `judge` passed a route with a check).
    pub fn headers(&self) -> &[(HeaderName, HeaderValue)] {
        &self.headers
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::test_pki::Pki;
    use rcgen::{CertificateParams, DnType};

    #[test]
    fn a_route_with_a_check_takes_only_connections_that_made_it() {
        let (a_ca, b_ca) = (Pki::named("A"), Pki::named("B"));
        let check = |pki: &Pki, filter| Arc::new(RouteClientAuth::new(&pki.ca.pem(), true, filter).unwrap());
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, "alice");
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let alice = vec![a_ca.leaf_with(params).cert.der().clone()];

        let on_a = HandshakeCheck::new(Some(check(&a_ca, None)), Some(&alice));
        assert_eq!(on_a.judge(None), Verdict::Pass, "a route without a check");
        assert_eq!(on_a.judge(Some(&check(&a_ca, None))), Verdict::Pass, "the same check, rebuilt");
        assert_eq!(on_a.judge(Some(&check(&b_ca, None))), Verdict::Misdirected, "another CA");
        assert_eq!(on_a.judge(Some(&check(&a_ca, Some("CN=bob")))), Verdict::Misdirected, "another filter");
        assert!(on_a.headers().iter().any(|(name, value)| name == "x-ssl-client-cn" && value == "\"alice\""));

        let filtered = HandshakeCheck::new(Some(check(&a_ca, Some("CN=bob"))), Some(&alice));
        assert_eq!(filtered.judge(Some(&check(&a_ca, Some("CN=bob")))), Verdict::Forbidden);

        let unchecked = HandshakeCheck::new(None, None);
        assert_eq!(unchecked.judge(None), Verdict::Pass);
        assert_eq!(unchecked.judge(Some(&check(&a_ca, None))), Verdict::Misdirected, "no certificate asked for");
        assert!(unchecked.headers().is_empty());
    }
}
