//! The error of certificate loading and route certificate validation. Route errors display like the OpenShift
//! router's field errors (`spec.tls.key: Invalid value: "redacted key data": ...`), which become the route's
//! `ExtendedValidationFailed` status message; key material is never part of a message.

use std::fmt;
use std::path::PathBuf;

/// The status reason of a route whose certificates fail validation.
pub const EXTENDED_VALIDATION_FAILED: &str = "ExtendedValidationFailed";

/// The route field an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsField {
    Certificate,
    Key,
    CaCertificate,
    DestinationCaCertificate,
}

impl TlsField {
    /// The field path as the API server and the OpenShift router print it.
    pub fn path(self) -> &'static str {
        match self {
            TlsField::Certificate => "spec.tls.certificate",
            TlsField::Key => "spec.tls.key",
            TlsField::CaCertificate => "spec.tls.caCertificate",
            TlsField::DestinationCaCertificate => "spec.tls.destinationCACertificate",
        }
    }

    /// The stand-in the OpenShift router prints instead of the field's value.
    pub fn redacted(self) -> &'static str {
        match self {
            TlsField::Certificate => "redacted certificate data",
            TlsField::Key => "redacted key data",
            TlsField::CaCertificate => "redacted ca certificate data",
            TlsField::DestinationCaCertificate => "redacted destination ca certificate data",
        }
    }
}

impl fmt::Display for TlsField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.path())
    }
}

/// Clone so that [`super::CertCache`] can hand out a memoised failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CertError {
    /// A route field is invalid. `value` is the redacted stand-in (empty when the field is missing).
    #[error("{field}: Invalid value: \"{value}\": {detail}")]
    Route { field: TlsField, value: &'static str, detail: String },
    /// A certificate or key file given in the router's settings cannot be used.
    #[error("{}: {detail}", path.display())]
    File { path: PathBuf, detail: String },
    /// The generated default certificate could not be made.
    #[error("generating the default certificate: {0}")]
    Generate(String),
}

impl CertError {
    /// An invalid route field, printed with the field's redacted stand-in.
    pub fn route(field: TlsField, detail: impl Into<String>) -> CertError {
        CertError::Route { field, value: field.redacted(), detail: detail.into() }
    }

    /// A route field that is required but missing.
    pub fn missing(field: TlsField, detail: impl Into<String>) -> CertError {
        CertError::Route { field, value: "", detail: detail.into() }
    }

    /// The route status reason for this error.
    pub fn reason(&self) -> &'static str {
        EXTENDED_VALIDATION_FAILED
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;

    #[test]
    fn route_errors_print_like_openshift_field_errors() {
        let e = CertError::route(TlsField::Key, "tls: private key does not match public key");
        assert_eq!(
            e.to_string(),
            "spec.tls.key: Invalid value: \"redacted key data\": tls: private key does not match public key"
        );
        let e = CertError::missing(TlsField::Key, "no key specified");
        assert_eq!(e.to_string(), "spec.tls.key: Invalid value: \"\": no key specified");
        assert_eq!(e.reason(), "ExtendedValidationFailed");
        let e = CertError::route(TlsField::DestinationCaCertificate, "x");
        assert!(e.to_string().starts_with("spec.tls.destinationCACertificate: "));
    }
}
