//! The client certificate verifier of :443 when client certificates are asked for: WebPKI verification against
//! ROUTER_MUTUAL_TLS_AUTH_CA, with the revocation lists of `crl` when there are any (every certificate in the
//! chain needs a list from its issuer, and an expired list fails, as OpenSSL's CRL checks do under HAProxy's
//! `crl-file`). The verifier in use can be swapped while the server configurations stay, so that new lists take
//! effect without a restart; connections already open keep the verification they had.

use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, Error, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, CertificateRevocationListDer, UnixTime};

use super::crl::CrlSource;

/// Client certificate verification whose revocation lists can be replaced.
pub struct SwappableVerifier {
    roots: Arc<RootCertStore>,
    required: bool,
    provider: Arc<CryptoProvider>,
    /// The CA subjects, sent as hints in the certificate request.
    hints: Vec<DistinguishedName>,
    current: ArcSwap<Arc<dyn ClientCertVerifier>>,
}

impl std::fmt::Debug for SwappableVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwappableVerifier").field("required", &self.required).finish_non_exhaustive()
    }
}

impl SwappableVerifier {
    /// The verifier at start: with the lists of `crl` when it is a file (which must load), refusing every
    /// certificate while lists from distribution points are not fetched yet, without lists otherwise.
    pub fn new(
        roots: Arc<RootCertStore>,
        required: bool,
        provider: Arc<CryptoProvider>,
        crl: &CrlSource,
    ) -> Result<SwappableVerifier, String> {
        let placeholder = build(&roots, required, &provider, Vec::new())?;
        let hints = roots.subjects();
        let verifier =
            SwappableVerifier { roots, required, provider, hints, current: ArcSwap::from_pointee(placeholder) };
        match crl {
            CrlSource::None => {}
            CrlSource::File(path) => verifier.use_crls(super::crl::load_crl_file(path)?)?,
            CrlSource::DistributionPoints(_) => {
                let inner = verifier.current.load_full();
                verifier.current.store(Arc::new(Arc::new(Unfetched(Arc::clone(&inner)))));
            }
        }
        Ok(verifier)
    }

    /// Verifies against `crls` from now on.
    pub fn use_crls(&self, crls: Vec<CertificateRevocationListDer<'static>>) -> Result<(), String> {
        let verifier = build(&self.roots, self.required, &self.provider, crls)?;
        self.current.store(Arc::new(verifier));
        Ok(())
    }
}

fn build(
    roots: &Arc<RootCertStore>,
    required: bool,
    provider: &Arc<CryptoProvider>,
    crls: Vec<CertificateRevocationListDer<'static>>,
) -> Result<Arc<dyn ClientCertVerifier>, String> {
    let mut builder = WebPkiClientVerifier::builder_with_provider(Arc::clone(roots), Arc::clone(provider));
    if !crls.is_empty() {
        builder = builder.with_crls(crls).enforce_revocation_expiration();
    }
    if !required {
        builder = builder.allow_unauthenticated();
    }
    builder.build().map_err(|e| e.to_string())
}

impl ClientCertVerifier for SwappableVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        self.required
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        self.current.load().verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.current.load().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.current.load().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.current.load().supported_verify_schemes()
    }
}

/// While the lists of the distribution points are not fetched: every client certificate is refused.
#[derive(Debug)]
struct Unfetched(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for Unfetched {
    fn offer_client_auth(&self) -> bool {
        self.0.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.0.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        Err(Error::General("client certificate revocation lists not fetched yet".into()))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
