//! One route's client certificate check (`router.openshift.io/client-tls-*`): the CA bundle it verifies
//! against, whether a certificate is required, and the subject filter. The verifier goes into the handshakes of
//! the route's SNI; the same value is compared again for every request, since a connection may carry requests
//! for other hosts (HTTP/2 coalescing, an HTTP/1.1 Host that is not the SNI). Two checks are equal when their
//! CA certificates, mode and filter text are: a rebuilt table (or the same bundle on two routes) keeps
//! connections valid, a changed bundle does not. No revocation lists (ROUTER_MUTUAL_TLS_AUTH_CRL is global only).

use std::sync::Arc;

use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::{CertificateDer, UnixTime};

use super::certs::roots;
use super::client_cert::client_subject;
use super::pem;
use super::provider;

pub struct RouteClientAuth {
    cas: Vec<CertificateDer<'static>>,
    required: bool,
    filter_text: Option<String>,
    filter: Option<regex::Regex>,
    verifier: Arc<dyn ClientCertVerifier>,
}

impl RouteClientAuth {
    /// The check of a CA bundle (`pem`), required or optional, with an optional subject filter. The error
    /// names what is wrong (no key material in it).
    pub fn new(pem_text: &str, required: bool, subject_filter: Option<&str>) -> Result<RouteClientAuth, String> {
        let cas = pem::certificates(pem_text).map_err(|e| format!("CA bundle: {e}"))?;
        if cas.is_empty() {
            return Err("CA bundle: no certificates found".into());
        }
        if let Some(detail) = pem::unrecognized_block(pem_text) {
            return Err(format!("CA bundle: {detail}"));
        }
        let store = Arc::new(roots(&cas).map_err(|e| format!("CA bundle: {e}"))?);
        let filter = match subject_filter {
            Some(text) => Some(regex::Regex::new(text).map_err(|e| format!("subject filter {text:?}: {e}"))?),
            None => None,
        };
        let provider = Arc::new(provider::chosen().crypto_provider());
        let mut builder = WebPkiClientVerifier::builder_with_provider(store, provider);
        if !required {
            builder = builder.allow_unauthenticated();
        }
        let verifier = builder.build().map_err(|e| format!("CA bundle: {e}"))?;
        Ok(RouteClientAuth { cas, required, filter_text: subject_filter.map(str::to_string), filter, verifier })
    }

    /// The verifier of the route's handshakes.
    pub fn verifier(&self) -> Arc<dyn ClientCertVerifier> {
        Arc::clone(&self.verifier)
    }

    pub fn required(&self) -> bool {
        self.required
    }

    /// Whether a session resumed with `peer` (leaf first) passes this check now: resumption skips verification,
    /// and the session may come from before the route's bundle or mode changed.
    pub fn still_verifies(&self, peer: Option<&[CertificateDer<'static>]>) -> bool {
        match peer.and_then(<[_]>::split_first) {
            Some((leaf, intermediates)) => {
                self.verifier.verify_client_cert(leaf, intermediates, UnixTime::now()).is_ok()
            }
            None => !self.required,
        }
    }

    /// Whether the subject filter lets `peer` in (always, without a filter; never without a certificate).
    pub fn admits_subject(&self, peer: Option<&[CertificateDer<'static>]>) -> bool {
        let Some(filter) = &self.filter else { return true };
        client_subject(peer).is_some_and(|subject| filter.is_match(&subject))
    }
}

impl PartialEq for RouteClientAuth {
    fn eq(&self, other: &Self) -> bool {
        self.required == other.required && self.filter_text == other.filter_text && self.cas == other.cas
    }
}

impl Eq for RouteClientAuth {}

impl std::fmt::Debug for RouteClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteClientAuth")
            .field("cas", &self.cas.len())
            .field("required", &self.required)
            .field("filter", &self.filter_text)
            .finish()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::test_pki::{Leaf, Pki};
    use rcgen::{CertificateParams, DnType};

    fn client(pki: &Pki, cn: &str) -> Leaf {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::OrganizationName, "Acme");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        pki.leaf_with(params)
    }

    fn chain(leaf: &Leaf) -> Vec<CertificateDer<'static>> {
        vec![leaf.cert.der().clone()]
    }

    #[test]
    fn verifies_against_its_bundle_only_and_filters_subjects() {
        let (ours, theirs) = (Pki::named("Ours"), Pki::named("Theirs"));
        let bundle = format!("{}{}", ours.ca.pem(), Pki::named("Second").ca.pem());
        let auth = RouteClientAuth::new(&bundle, true, Some("/CN=alice$")).unwrap();
        let (alice, bob, mallory) = (client(&ours, "alice"), client(&ours, "bob"), client(&theirs, "alice"));
        assert!(auth.still_verifies(Some(&chain(&alice))));
        assert!(!auth.still_verifies(Some(&chain(&mallory))), "another CA");
        assert!(!auth.still_verifies(None), "required");
        assert!(auth.verifier().client_auth_mandatory());
        assert!(auth.admits_subject(Some(&chain(&alice))));
        assert!(!auth.admits_subject(Some(&chain(&bob))));
        assert!(!auth.admits_subject(None));

        let optional = RouteClientAuth::new(&ours.ca.pem(), false, None).unwrap();
        assert!(optional.still_verifies(None) && optional.admits_subject(None));
        assert!(optional.verifier().offer_client_auth() && !optional.verifier().client_auth_mandatory());
    }

    #[test]
    fn equal_when_bundle_mode_and_filter_are() {
        let pki = Pki::new();
        let pem = pki.ca.pem();
        let auth = |required, filter| RouteClientAuth::new(&pem, required, filter).unwrap();
        assert_eq!(auth(true, None), auth(true, None), "built twice from the same bundle");
        assert_ne!(auth(true, None), auth(false, None));
        assert_ne!(auth(true, None), auth(true, Some("CN=a")));
        assert_ne!(auth(true, None), RouteClientAuth::new(&Pki::new().ca.pem(), true, None).unwrap());
    }

    #[test]
    fn unusable_bundles_and_filters_are_errors() {
        let pki = Pki::new();
        for (pem, filter, expected) in [
            ("", None, "no certificates found"),
            ("not PEM at all", None, "no certificates found"),
            ("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", None, "certificate"),
            (&*pki.ca.pem(), Some("(unclosed"), "subject filter"),
        ] {
            let error = RouteClientAuth::new(pem, true, filter).unwrap_err();
            assert!(error.contains(expected), "{pem:?} {filter:?}: {error}");
        }
        let with_key = format!("{}{}", pki.ca.pem(), "-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n");
        assert!(RouteClientAuth::new(&with_key, true, None).unwrap_err().contains("FOO"));
    }
}
