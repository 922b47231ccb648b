//! The host a route is served under: `spec.host`, else `spec.subdomain` + `ROUTER_DOMAIN`, or the
//! `ROUTER_SUBDOMAIN` template (`${name}`, `${namespace}`) where configured; and domain-list membership.

use crate::model::Route;

use super::AdmissionSettings;

/// The route's effective host, lowercased; empty when it has none.
pub fn effective_host(route: &Route, settings: &AdmissionSettings) -> String {
    let mut host = route.spec.host.as_deref().unwrap_or_default().trim().to_string();
    let subdomain = route.spec.subdomain.as_deref().unwrap_or("");
    if host.is_empty() && !subdomain.is_empty() {
        if let Some(domain) = settings.router_domain.as_deref().filter(|d| !d.is_empty()) {
            host = format!("{subdomain}.{domain}");
        }
    }
    if let Some(template) = settings.hostname_template.as_deref().filter(|t| !t.is_empty()) {
        let overridable =
            settings.override_hostname || host.is_empty() || in_domain_list(&host, &settings.override_domains);
        if overridable {
            let name = route.metadata.name.as_deref().unwrap_or("");
            let namespace = route.metadata.namespace.as_deref().unwrap_or("");
            if let Some(expanded) = expand_template(template, name, namespace) {
                host = expanded.trim_matches(|c| c == '"' || c == '\'').to_string();
            }
        }
    }
    host.make_ascii_lowercase();
    host
}

/// `${name}` and `${namespace}` (also `$name`); `None` when the template names another key.
fn expand_template(template: &str, name: &str, namespace: &str) -> Option<String> {
    let mut out = String::with_capacity(template.len() + name.len() + namespace.len());
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        let (key, after) = if let Some(braced) = rest.strip_prefix('{') {
            let end = braced.find('}')?;
            (&braced[..end], &braced[end + 1..])
        } else {
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        };
        match key {
            "name" => out.push_str(name),
            "namespace" => out.push_str(namespace),
            _ => return None,
        }
        rest = after;
    }
    out.push_str(rest);
    Some(out)
}

/// True when `host` or one of its parent domains is in `domains` (suffix match on label boundaries).
pub fn in_domain_list(host: &str, domains: &[String]) -> bool {
    if domains.is_empty() {
        return false;
    }
    let mut candidate = host;
    loop {
        if domains.iter().any(|d| d.eq_ignore_ascii_case(candidate)) {
            return true;
        }
        match candidate.find('.') {
            Some(dot) if dot > 0 => candidate = &candidate[dot + 1..],
            _ => return false,
        }
    }
}

/// The domain a wildcard route for `host` covers: everything after the first label.
pub fn wildcard_domain(host: &str) -> &str {
    host.split_once('.').map_or("", |(_, domain)| domain)
}

/// Whether a route is served for every name one label under its host's domain. A wildcard route whose host
/// is a single label (`com`) has no domain above it: the OpenShift router serves it as that exact host (its
/// host regex, SNI regex and certificate name are the host itself), while its claim stays a wildcard one.
pub fn serves_subdomain(host: &str, wildcard: bool) -> bool {
    wildcard && !wildcard_domain(host).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(yaml: &str) -> Route {
        serde_saphyr::from_str(yaml).expect("route")
    }

    #[test]
    fn subdomain_uses_the_router_domain() {
        let settings = AdmissionSettings { router_domain: Some("apps.example.com".into()), ..Default::default() };
        let r =
            route("metadata: {name: web, namespace: shop}\nspec: {subdomain: web-shop, to: {kind: Service, name: s}}");
        assert_eq!(effective_host(&r, &settings), "web-shop.apps.example.com");
        let explicit = route("metadata: {name: web, namespace: shop}\nspec: {host: Given.Example.com, subdomain: x, to: {kind: Service, name: s}}");
        assert_eq!(effective_host(&explicit, &settings), "given.example.com");
        assert_eq!(effective_host(&r, &AdmissionSettings::default()), "", "no domain: no host");
    }

    #[test]
    fn hostname_template_fills_missing_hosts_or_overrides() {
        let template = AdmissionSettings {
            hostname_template: Some("${name}-${namespace}.apps.test".into()),
            ..Default::default()
        };
        let bare = route("metadata: {name: web, namespace: shop}\nspec: {to: {kind: Service, name: s}}");
        assert_eq!(effective_host(&bare, &template), "web-shop.apps.test");
        let given = route(
            "metadata: {name: web, namespace: shop}\nspec: {host: mine.example.com, to: {kind: Service, name: s}}",
        );
        assert_eq!(effective_host(&given, &template), "mine.example.com");
        let overriding = AdmissionSettings { override_hostname: true, ..template.clone() };
        assert_eq!(effective_host(&given, &overriding), "web-shop.apps.test");
        let redacted = AdmissionSettings { override_domains: vec!["example.com".into()], ..template };
        assert_eq!(effective_host(&given, &redacted), "web-shop.apps.test");
    }

    #[test]
    fn domain_lists_match_on_label_boundaries() {
        let domains = vec!["example.com".to_string()];
        assert!(in_domain_list("example.com", &domains));
        assert!(in_domain_list("a.b.example.com", &domains));
        assert!(!in_domain_list("badexample.com", &domains));
        assert!(!in_domain_list("example.org", &domains));
        assert_eq!(wildcard_domain("www.example.com"), "example.com");
        assert_eq!(wildcard_domain("localhost"), "");
    }
}
