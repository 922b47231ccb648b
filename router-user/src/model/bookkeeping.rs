//! Metadata the router never reads, dropped from every object before a source stores it: the server's field
//! managers, and the copy of the whole object `kubectl apply` keeps in an annotation (as big as the object
//! itself, on every object a GitOps tool or `kubectl apply` created: a third of a route's memory and more).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The annotation `kubectl apply` writes: the last applied configuration, as JSON.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops the field managers and the last applied configuration; every other annotation stays.
pub fn drop_bookkeeping(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    use super::*;

    #[test]
    fn drops_what_kubectl_and_the_server_keep_and_nothing_else() {
        let annotations = BTreeMap::from([
            (LAST_APPLIED.to_owned(), "{\"apiVersion\":\"route.openshift.io/v1\"}".to_owned()),
            ("haproxy.router.openshift.io/timeout".to_owned(), "5s".to_owned()),
        ]);
        let mut meta = ObjectMeta {
            annotations: Some(annotations),
            managed_fields: Some(vec![ManagedFieldsEntry::default()]),
            ..ObjectMeta::default()
        };
        drop_bookkeeping(&mut meta);
        assert_eq!(meta.managed_fields, None);
        let kept = meta.annotations.expect("annotations");
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["haproxy.router.openshift.io/timeout"]);
    }
}
