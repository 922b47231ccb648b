//! Client certificates per route, this router's own annotations (the OpenShift router has only the
//! IngressController-wide ROUTER_MUTUAL_TLS_AUTH; openshift/origin#16521, openshift/router#404):
//! `router.openshift.io/client-tls-ca` names a ConfigMap of the route's namespace holding the CA bundle
//! (`<name>` reads key `ca-bundle.pem`, as the IngressController's `clientTLS.clientCA` does; `<name>/<key>`
//! another key), or `router.openshift.io/client-tls-ca-secret` a Secret (`<name>` reads key `ca.crt`, where
//! cert-manager and the service CA put a CA; `<name>/<key>` another key); `client-tls-verify` says `required`
//! (the default) or `optional`, and
//! `client-tls-subject-filter` is a regular expression on the subject, as ROUTER_MUTUAL_TLS_AUTH_FILTER.
//! Parsed here; the table build reads the bundle and compiles the filter. Unlike the other annotations, a value
//! that cannot be used rejects the route: serving it without the client check its owner asked for would open
//! it to everyone.

use crate::model::Route;

use super::annotation;

pub const CLIENT_TLS_CA: &str = "router.openshift.io/client-tls-ca";
pub const CLIENT_TLS_CA_SECRET: &str = "router.openshift.io/client-tls-ca-secret";
pub const CLIENT_TLS_VERIFY: &str = "router.openshift.io/client-tls-verify";
pub const CLIENT_TLS_SUBJECT_FILTER: &str = "router.openshift.io/client-tls-subject-filter";
/// The ConfigMap key read when the annotation names none.
pub const DEFAULT_CA_KEY: &str = "ca-bundle.pem";
/// The Secret key read when the annotation names none.
pub const DEFAULT_SECRET_CA_KEY: &str = "ca.crt";

/// Which kind of object holds the CA bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaBundleKind {
    ConfigMap,
    Secret,
}

impl CaBundleKind {
    /// The annotation that names an object of this kind.
    pub fn annotation(self) -> &'static str {
        match self {
            Self::ConfigMap => CLIENT_TLS_CA,
            Self::Secret => CLIENT_TLS_CA_SECRET,
        }
    }

    /// The kind as a message names one object of it (`configmap "x" has no key ...`).
    pub fn object(self) -> &'static str {
        match self {
            Self::ConfigMap => "configmap",
            Self::Secret => "secret",
        }
    }

    /// The kind as the apiserver's resource name (`configmaps "x" not found`).
    pub fn resource(self) -> &'static str {
        match self {
            Self::ConfigMap => "configmaps",
            Self::Secret => "secrets",
        }
    }
}

/// What a route's annotations ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientTlsRequest {
    pub kind: CaBundleKind,
    /// The ConfigMap or Secret, in the route's namespace.
    pub name: String,
    pub key: String,
    /// `required` (no certificate: no handshake) or `optional` (asked for; one given must verify).
    pub required: bool,
    /// Unchecked regular expression on the subject (`/C=US/O=Acme/CN=client`).
    pub subject_filter: Option<String>,
}

/// The route's client certificate settings: `Ok(None)` without any of the annotations, `Err` with the
/// message of the route's rejection when they cannot be used.
pub fn client_tls_request(route: &Route) -> Result<Option<ClientTlsRequest>, String> {
    let bundles = [CaBundleKind::ConfigMap, CaBundleKind::Secret]
        .map(|kind| annotation(route, kind.annotation()).map(|value| (kind, value)));
    let verify = annotation(route, CLIENT_TLS_VERIFY);
    let filter = annotation(route, CLIENT_TLS_SUBJECT_FILTER);
    let (kind, ca) = match bundles {
        [Some(_), Some(_)] => {
            return Err(format!("annotations {CLIENT_TLS_CA} and {CLIENT_TLS_CA_SECRET}: name one CA bundle, not two"))
        }
        [Some(named), None] | [None, Some(named)] => named,
        [None, None] => {
            return match verify.map(|_| CLIENT_TLS_VERIFY).or(filter.map(|_| CLIENT_TLS_SUBJECT_FILTER)) {
                Some(name) => Err(format!("annotation {name} needs {CLIENT_TLS_CA} or {CLIENT_TLS_CA_SECRET}")),
                None => Ok(None),
            }
        }
    };
    let default_key = match kind {
        CaBundleKind::ConfigMap => DEFAULT_CA_KEY,
        CaBundleKind::Secret => DEFAULT_SECRET_CA_KEY,
    };
    let (name, key) = ca.split_once('/').unwrap_or((ca, default_key));
    if !is_object_name(name) || !is_data_key(key) {
        let annotation = kind.annotation();
        return Err(format!("annotation {annotation}={ca:?}: expected <name> or <name>/<key>"));
    }
    let required = match verify {
        None | Some("required") => true,
        Some("optional") => false,
        Some(other) => return Err(format!("annotation {CLIENT_TLS_VERIFY}={other:?}: expected required or optional")),
    };
    Ok(Some(ClientTlsRequest {
        kind,
        name: name.to_string(),
        key: key.to_string(),
        required,
        subject_filter: filter.map(str::to_string),
    }))
}

/// A DNS-1123 subdomain, as Kubernetes names ConfigMaps and Secrets.
fn is_object_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// A ConfigMap or Secret data key: `[-._a-zA-Z0-9]+`.
fn is_data_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= 253 && key.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;

    fn route(annotations: &[(&str, &str)]) -> Route {
        let pairs: String = annotations.iter().map(|(k, v)| format!("{k}: {v:?}, ")).collect();
        let yaml = format!(
            "metadata: {{name: r, namespace: ns, annotations: {{{pairs}}}}}\nspec: {{host: a.example.com, to: \
             {{kind: Service, name: s}}}}\n"
        );
        serde_saphyr::from_str(&yaml).unwrap()
    }

    #[test]
    fn names_a_config_map_and_its_key() {
        assert_eq!(client_tls_request(&route(&[])).unwrap(), None);
        let plain = client_tls_request(&route(&[(CLIENT_TLS_CA, "clients")])).unwrap().unwrap();
        assert_eq!(
            plain,
            ClientTlsRequest {
                kind: CaBundleKind::ConfigMap,
                name: "clients".into(),
                key: "ca-bundle.pem".into(),
                required: true,
                subject_filter: None
            }
        );
        let keyed = client_tls_request(&route(&[
            (CLIENT_TLS_CA, " clients.v2/ca.crt "),
            (CLIENT_TLS_VERIFY, "optional"),
            (CLIENT_TLS_SUBJECT_FILTER, "/O=Acme/"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((keyed.name.as_str(), keyed.key.as_str()), ("clients.v2", "ca.crt"));
        assert!(!keyed.required);
        assert_eq!(keyed.subject_filter.as_deref(), Some("/O=Acme/"));
        let required = client_tls_request(&route(&[(CLIENT_TLS_CA, "c"), (CLIENT_TLS_VERIFY, "required")]));
        assert!(required.unwrap().unwrap().required);
    }

    #[test]
    fn names_a_secret_and_its_key() {
        let plain = client_tls_request(&route(&[(CLIENT_TLS_CA_SECRET, "client-ca")])).unwrap().unwrap();
        assert_eq!(
            (plain.kind, plain.name.as_str(), plain.key.as_str()),
            (CaBundleKind::Secret, "client-ca", "ca.crt")
        );
        assert!(plain.required);
        let keyed = client_tls_request(&route(&[(CLIENT_TLS_CA_SECRET, "client-ca/tls.crt")])).unwrap().unwrap();
        assert_eq!((keyed.kind, keyed.key.as_str()), (CaBundleKind::Secret, "tls.crt"));
    }

    #[test]
    fn unusable_values_are_errors_naming_the_annotation() {
        for (annotations, named) in [
            (&[(CLIENT_TLS_CA, "Clients")][..], CLIENT_TLS_CA),
            (&[(CLIENT_TLS_CA, "clients/")], CLIENT_TLS_CA),
            (&[(CLIENT_TLS_CA, "clients/a/b")], CLIENT_TLS_CA),
            (&[(CLIENT_TLS_CA, "/key")], CLIENT_TLS_CA),
            (&[(CLIENT_TLS_CA, "-clients")], CLIENT_TLS_CA),
            (&[(CLIENT_TLS_CA, "c"), (CLIENT_TLS_VERIFY, "yes")], CLIENT_TLS_VERIFY),
            (&[(CLIENT_TLS_VERIFY, "required")], CLIENT_TLS_VERIFY),
            (&[(CLIENT_TLS_SUBJECT_FILTER, "CN=a")], CLIENT_TLS_SUBJECT_FILTER),
            (&[(CLIENT_TLS_CA_SECRET, "Client_CA")], CLIENT_TLS_CA_SECRET),
            (&[(CLIENT_TLS_CA_SECRET, "ca/")], CLIENT_TLS_CA_SECRET),
        ] {
            let error = client_tls_request(&route(annotations)).unwrap_err();
            assert!(error.starts_with(&format!("annotation {named}")), "{annotations:?}: {error}");
        }
        let both = client_tls_request(&route(&[(CLIENT_TLS_CA, "a"), (CLIENT_TLS_CA_SECRET, "b")])).unwrap_err();
        assert!(both.contains("name one CA bundle"), "{both}");
    }
}
