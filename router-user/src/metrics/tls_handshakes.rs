//! TLS handshakes on the HTTPS listener: completed ones by protocol version and ALPN, failed ones by what
//! rustls reported (`router_tls_connection_failures_total` keeps counting every connection that ended before
//! a route served it, a failed handshake as `handshake`).

use std::io;

use prometheus_client::encoding::EncodeLabelSet;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TlsHandshakeLabels {
    /// `TLSv1_2`, `TLSv1_3`.
    pub version: &'static str,
    /// The negotiated ALPN protocol (`h2`, `http/1.1`, `h3` on the QUIC listener), or `none`.
    pub alpn: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TlsHandshakeFailureLabels {
    pub reason: &'static str,
}

impl TlsHandshakeLabels {
    pub fn new(version: Option<rustls::ProtocolVersion>, alpn: Option<&[u8]>) -> Self {
        let version = match version {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1_3",
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1_2",
            Some(_) => "other",
            None => "unknown",
        };
        let alpn = match alpn {
            Some(b"h2") => "h2",
            Some(b"http/1.1") => "http/1.1",
            Some(b"h3") => "h3",
            Some(_) => "other",
            None => "none",
        };
        Self { version, alpn }
    }
}

/// Why a handshake failed, from the error the TLS acceptor returned: the rustls error's kind when it carries
/// one (`alert_received`, `peer_incompatible`, `peer_misbehaved`, `invalid_message`, `no_client_certificate`,
/// `bad_client_certificate`, `decrypt_error`, `other_tls`), else `io` (the client went away mid-handshake).
pub fn failure_reason(error: &io::Error) -> &'static str {
    let Some(tls) = error.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) else {
        return match error.kind() {
            io::ErrorKind::UnexpectedEof => "eof",
            _ => "io",
        };
    };
    match tls {
        rustls::Error::AlertReceived(_) => "alert_received",
        rustls::Error::PeerIncompatible(_) => "peer_incompatible",
        rustls::Error::PeerMisbehaved(_) => "peer_misbehaved",
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => "invalid_message",
        rustls::Error::InappropriateHandshakeMessage { .. } => "invalid_message",
        rustls::Error::NoCertificatesPresented => "no_client_certificate",
        rustls::Error::InvalidCertificate(_) => "bad_client_certificate",
        rustls::Error::DecryptError => "decrypt_error",
        _ => "other_tls",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_come_from_the_rustls_error_inside() {
        let alert = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure),
        );
        assert_eq!(failure_reason(&alert), "alert_received");
        let no_cert = io::Error::new(io::ErrorKind::InvalidData, rustls::Error::NoCertificatesPresented);
        assert_eq!(failure_reason(&no_cert), "no_client_certificate");
        assert_eq!(failure_reason(&io::Error::from(io::ErrorKind::UnexpectedEof)), "eof");
        assert_eq!(failure_reason(&io::Error::from(io::ErrorKind::ConnectionReset)), "io");
    }
}
