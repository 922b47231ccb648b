//! ROUTER_STRICT_SNI (HAProxy's `strict-sni`): without a route certificate for the name a client asks for,
//! the default certificate is served only if it carries that name (its DNS subject alternative names, else its
//! common name; `*.example.com` covers one label), and a client sending no name gets no certificate at all.

use rustls::sign::CertifiedKey;
use x509_parser::extensions::GeneralName;

/// The names a certificate is valid for, lowercase.
#[derive(Clone, Debug, Default)]
pub struct CertificateNames {
    exact: Vec<String>,
    /// The domains of `*.<domain>` names.
    wildcard: Vec<String>,
}

impl CertificateNames {
    /// The names of `key`'s end-entity certificate.
    pub fn of(key: &CertifiedKey) -> CertificateNames {
        let mut names = CertificateNames::default();
        let Some(leaf) = key.cert.first() else { return names };
        let Ok((_, cert)) = x509_parser::parse_x509_certificate(leaf) else { return names };
        let mut dns: Vec<String> = match cert.subject_alternative_name() {
            Ok(Some(san)) => san
                .value
                .general_names
                .iter()
                .filter_map(|name| match name {
                    GeneralName::DNSName(dns) => Some(dns.to_ascii_lowercase()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        if dns.is_empty() {
            dns.extend(
                cert.subject().iter_common_name().filter_map(|cn| cn.as_str().ok()).map(str::to_ascii_lowercase),
            );
        }
        for name in dns {
            match name.strip_prefix("*.") {
                Some(domain) => names.wildcard.push(domain.to_string()),
                None => names.exact.push(name),
            }
        }
        names
    }

    /// Whether the certificate is valid for `sni` (any case, trailing dot ignored).
    pub fn covers(&self, sni: &str) -> bool {
        let name = sni.strip_suffix('.').unwrap_or(sni).to_ascii_lowercase();
        self.exact.contains(&name)
            || name.split_once('.').is_some_and(|(_, parent)| self.wildcard.iter().any(|domain| domain == parent))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::certs::certified_key;
    use crate::tls::test_pki;

    fn names(host: &str) -> CertificateNames {
        let leaf = test_pki::self_signed(host);
        let der = rustls_pki_types::PrivateKeyDer::Pkcs8(leaf.key.serialize_der().into());
        CertificateNames::of(&certified_key(vec![leaf.cert.der().clone()], &der).unwrap())
    }

    #[test]
    fn exact_and_one_label_wildcards() {
        let exact = names("router-default.local");
        assert!(exact.covers("router-default.local") && exact.covers("Router-Default.Local."));
        assert!(!exact.covers("x.router-default.local"));
        let wildcard = names("*.apps.example.com");
        assert!(wildcard.covers("a.apps.example.com"));
        assert!(!wildcard.covers("apps.example.com") && !wildcard.covers("a.b.apps.example.com"));
    }
}
