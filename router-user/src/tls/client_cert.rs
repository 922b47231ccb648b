//! The `X-SSL*` request headers the OpenShift router adds on :443 when ROUTER_MUTUAL_TLS_AUTH is not `none`
//! (haproxy-config.template, frontends fe_sni and fe_no_sni), with HAProxy's value formats:
//! `X-SSL: %[ssl_fc]` (1), `X-SSL-Client-Verify: %[ssl_c_verify]` (0: rustls only completes handshakes whose
//! client certificate verified), and, quoted (`%{+Q}`): serial and SHA-1 in upper-case hex, certificate version,
//! subject and issuer DNs in HAProxy's one-line form `/C=US/O=Acme/CN=client`, the subject's first CN, validity
//! dates as `YYMMDDhhmmssZ`, and the DER in base64. Without a client certificate the quoted headers are `""`.
//! The caller removes client-sent `X-SSL*` headers first.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use http::{HeaderName, HeaderValue};
use rustls_pki_types::CertificateDer;
use sha1::{Digest as _, Sha1};
use x509_parser::certificate::X509Certificate;
use x509_parser::time::ASN1Time;
use x509_parser::x509::X509Name;

/// Header names, in the template's order.
pub const X_SSL: &str = "x-ssl";
pub const X_SSL_CLIENT_VERIFY: &str = "x-ssl-client-verify";
pub const X_SSL_CLIENT_SERIAL: &str = "x-ssl-client-serial";
pub const X_SSL_CLIENT_VERSION: &str = "x-ssl-client-version";
pub const X_SSL_CLIENT_SHA1: &str = "x-ssl-client-sha1";
pub const X_SSL_CLIENT_DN: &str = "x-ssl-client-dn";
pub const X_SSL_CLIENT_CN: &str = "x-ssl-client-cn";
pub const X_SSL_ISSUER: &str = "x-ssl-issuer";
pub const X_SSL_CLIENT_NOT_BEFORE: &str = "x-ssl-client-notbefore";
pub const X_SSL_CLIENT_NOT_AFTER: &str = "x-ssl-client-notafter";
pub const X_SSL_CLIENT_DER: &str = "x-ssl-client-der";

/// The headers for a connection whose client presented `peer` (leaf first), or no certificate.
pub fn client_cert_headers(peer: Option<&[CertificateDer<'static>]>) -> Vec<(HeaderName, HeaderValue)> {
    let leaf = peer.and_then(<[_]>::first);
    let parsed = leaf.and_then(|der| x509_parser::parse_x509_certificate(der).ok().map(|(_, cert)| (der, cert)));
    let quoted: [(&'static str, Vec<u8>); 9] = match &parsed {
        Some((der, cert)) => [
            (X_SSL_CLIENT_SERIAL, upper_hex(cert.raw_serial()).into_bytes()),
            (X_SSL_CLIENT_VERSION, (cert.version().0 + 1).to_string().into_bytes()),
            (X_SSL_CLIENT_SHA1, upper_hex(&Sha1::digest(der)).into_bytes()),
            (X_SSL_CLIENT_DN, one_line(cert.subject())),
            (X_SSL_CLIENT_CN, first_cn(cert)),
            (X_SSL_ISSUER, one_line(cert.issuer())),
            (X_SSL_CLIENT_NOT_BEFORE, short_time(&cert.validity().not_before).into_bytes()),
            (X_SSL_CLIENT_NOT_AFTER, short_time(&cert.validity().not_after).into_bytes()),
            (X_SSL_CLIENT_DER, BASE64.encode(der).into_bytes()),
        ],
        None => [
            (X_SSL_CLIENT_SERIAL, Vec::new()),
            (X_SSL_CLIENT_VERSION, Vec::new()),
            (X_SSL_CLIENT_SHA1, Vec::new()),
            (X_SSL_CLIENT_DN, Vec::new()),
            (X_SSL_CLIENT_CN, Vec::new()),
            (X_SSL_ISSUER, Vec::new()),
            (X_SSL_CLIENT_NOT_BEFORE, Vec::new()),
            (X_SSL_CLIENT_NOT_AFTER, Vec::new()),
            (X_SSL_CLIENT_DER, Vec::new()),
        ],
    };
    let mut headers = vec![
        (HeaderName::from_static(X_SSL), HeaderValue::from_static("1")),
        (HeaderName::from_static(X_SSL_CLIENT_VERIFY), HeaderValue::from_static("0")),
    ];
    headers.extend(quoted.into_iter().map(|(name, value)| (HeaderName::from_static(name), quote(&value))));
    headers
}

/// The subject of the client's certificate as HAProxy's `ssl_c_s_dn` gives it (`/C=US/O=Acme/CN=client`);
/// `None` without a certificate (or one that does not parse).
pub fn client_subject(peer: Option<&[CertificateDer<'static>]>) -> Option<String> {
    let leaf = peer.and_then(<[_]>::first)?;
    let (_, cert) = x509_parser::parse_x509_certificate(leaf).ok()?;
    Some(String::from_utf8_lossy(&one_line(cert.subject())).into_owned())
}

/// `"value"` as HAProxy's `%{+Q}` writes it (no escaping inside); bytes a header cannot carry become `?`.
fn quote(value: &[u8]) -> HeaderValue {
    let mut out = Vec::with_capacity(value.len() + 2);
    out.push(b'"');
    out.extend(value.iter().map(|&b| if (b < 0x20 && b != b'\t') || b == 0x7f { b'?' } else { b }));
    out.push(b'"');
    HeaderValue::from_bytes(&out).unwrap_or_else(|_| HeaderValue::from_static("\"\""))
}

fn upper_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

/// HAProxy's one-line DN: `/<short name>=<value>` per attribute, in certificate order, values as raw bytes.
fn one_line(name: &X509Name<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    for attr in name.iter_attributes() {
        out.push(b'/');
        let oid = attr.attr_type().to_id_string();
        out.extend_from_slice(short_name(&oid).unwrap_or(&oid).as_bytes());
        out.push(b'=');
        out.extend_from_slice(attr.as_slice());
    }
    out
}

fn first_cn(cert: &X509Certificate<'_>) -> Vec<u8> {
    cert.subject().iter_common_name().next().map(|cn| cn.as_slice().to_vec()).unwrap_or_default()
}

/// OpenSSL's short names of DN attribute types.
fn short_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.4" => "SN",
        "2.5.4.5" => "serialNumber",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "street",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.12" => "title",
        "2.5.4.15" => "businessCategory",
        "2.5.4.17" => "postalCode",
        "2.5.4.41" => "name",
        "2.5.4.42" => "GN",
        "2.5.4.43" => "initials",
        "2.5.4.44" => "generationQualifier",
        "2.5.4.46" => "dnQualifier",
        "2.5.4.65" => "pseudonym",
        "1.2.840.113549.1.9.1" => "emailAddress",
        "0.9.2342.19200300.100.1.1" => "UID",
        "0.9.2342.19200300.100.1.25" => "DC",
        _ => return None,
    })
}

/// `YYMMDDhhmmssZ`, the UTCTime form HAProxy's `ssl_c_notbefore`/`ssl_c_notafter` return.
fn short_time(time: &ASN1Time) -> String {
    let t = time.to_datetime();
    format!(
        "{:02}{:02}{:02}{:02}{:02}{:02}Z",
        t.year().rem_euclid(100),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::tls::test_pki::Pki;
    use rcgen::{CertificateParams, DnType};

    fn value<'a>(headers: &'a [(HeaderName, HeaderValue)], name: &str) -> &'a str {
        headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.to_str().unwrap()).unwrap()
    }

    #[test]
    fn formats_a_client_certificate_like_haproxy() {
        let pki = Pki::named("Client CA");
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CountryName, "US");
        params.distinguished_name.push(DnType::OrganizationName, "Acme");
        params.distinguished_name.push(DnType::CommonName, "client one");
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&[0x01, 0xab, 0x7f]));
        params.not_before = rcgen::date_time_ymd(2024, 3, 5);
        params.not_after = rcgen::date_time_ymd(2051, 12, 31);
        let leaf = pki.leaf_with(params);
        let der = leaf.cert.der().clone();
        let headers = client_cert_headers(Some(std::slice::from_ref(&der)));

        assert_eq!(headers.len(), 11);
        assert_eq!(value(&headers, "X-SSL"), "1");
        assert_eq!(value(&headers, "X-SSL-Client-Verify"), "0");
        assert_eq!(value(&headers, "X-SSL-Client-Serial"), "\"01AB7F\"");
        assert_eq!(value(&headers, "X-SSL-Client-Version"), "\"3\"");
        assert_eq!(value(&headers, "X-SSL-Client-DN"), "\"/C=US/O=Acme/CN=client one\"");
        assert_eq!(value(&headers, "X-SSL-Client-CN"), "\"client one\"");
        assert_eq!(value(&headers, "X-SSL-Issuer"), "\"/CN=Client CA\"");
        assert_eq!(value(&headers, "X-SSL-Client-NotBefore"), "\"240305000000Z\"");
        assert_eq!(value(&headers, "X-SSL-Client-NotAfter"), "\"511231000000Z\"");
        let sha1 = value(&headers, "X-SSL-Client-SHA1");
        assert_eq!(sha1.len(), 42);
        assert_eq!(sha1, format!("\"{}\"", upper_hex(&Sha1::digest(&der))));
        let der_b64 = value(&headers, "X-SSL-Client-DER");
        assert!(der_b64.starts_with("\"MII"), "DER of a SEQUENCE with a two-byte length: {der_b64}");
        assert_eq!(der_b64, format!("\"{}\"", BASE64.encode(&der)));
    }

    /// A client certificate made by `openssl x509 -req` (version 1, serial 0x01AB7F), and its SHA-1 fingerprint
    /// as `openssl x509 -noout -fingerprint -sha1` prints it (colons dropped).
    const OPENSSL_CLIENT_PEM: &str = include_str!("testdata/client-one.pem");
    const OPENSSL_CLIENT_SHA1: &str = "1FBC6FDEC24805F1D34562DB62BF8F089A413F30";

    #[test]
    fn sha1_and_der_values_are_openssls() {
        let der = crate::tls::pem::certificates(OPENSSL_CLIENT_PEM).unwrap().remove(0);
        let headers = client_cert_headers(Some(std::slice::from_ref(&der)));
        assert_eq!(value(&headers, "X-SSL-Client-SHA1"), format!("\"{OPENSSL_CLIENT_SHA1}\""));
        let pem_body: String = OPENSSL_CLIENT_PEM.lines().filter(|line| !line.starts_with("-----")).collect();
        assert_eq!(value(&headers, "X-SSL-Client-DER"), format!("\"{pem_body}\""), "the PEM body is the DER's base64");
        assert_eq!(value(&headers, "X-SSL-Client-Version"), "\"1\"");
        assert_eq!(value(&headers, "X-SSL-Client-Serial"), "\"01AB7F\"");
        assert_eq!(value(&headers, "X-SSL-Client-DN"), "\"/C=US/O=Acme/CN=client one\"");
    }

    #[test]
    fn without_a_client_certificate_values_are_empty_quotes() {
        for peer in [None, Some(&[][..])] {
            let headers = client_cert_headers(peer);
            assert_eq!(value(&headers, "x-ssl"), "1");
            assert_eq!(value(&headers, "x-ssl-client-verify"), "0");
            assert_eq!(value(&headers, "x-ssl-client-dn"), "\"\"");
            assert_eq!(value(&headers, "x-ssl-client-der"), "\"\"");
        }
    }

    #[test]
    fn control_bytes_cannot_break_the_header() {
        assert_eq!(quote(b"a\r\nb").to_str().unwrap(), "\"a??b\"");
    }
}
