//! The certificate verifier for reencrypt connections to pods that rustls does not ship: chain-only
//! verification (HAProxy `verify required ca-file` without `verifyhost`), or no verification at all (a route
//! without any CA). Either way the handshake signatures are checked with the provider's algorithms, so the pod
//! must hold the key of the certificate it presents.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::verify_server_cert_signed_by_trust_anchor;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, WebPkiSupportedAlgorithms};
use rustls::server::ParsedCertificate;
use rustls::{DigitallySignedStruct, Error, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// Verifies the pod's chain against `roots` for server authentication, ignoring the names in the certificate;
/// without `roots`, accepts any certificate.
#[derive(Debug)]
pub(crate) struct PodVerifier {
    roots: Option<Arc<RootCertStore>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PodVerifier {
    pub(crate) fn chain_only(roots: Arc<RootCertStore>, algorithms: WebPkiSupportedAlgorithms) -> PodVerifier {
        PodVerifier { roots: Some(roots), algorithms }
    }

    pub(crate) fn any_certificate(algorithms: WebPkiSupportedAlgorithms) -> PodVerifier {
        PodVerifier { roots: None, algorithms }
    }
}

impl ServerCertVerifier for PodVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(&cert, roots, intermediates, now, self.algorithms.all)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
