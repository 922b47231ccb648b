//! OpenShift's check that the router may read a route's `spec.tls.externalCertificate` Secret: the router's
//! identity must be allowed to get, list and watch that Secret by name (the route's owner grants it with a
//! Role). OpenShift asks a SubjectAccessReview about its service account; the router asks a
//! SelfSubjectAccessReview about itself, which every authenticated identity may create, so `deploy/rbac.yaml`
//! needs no new right. A Secret the router may not read is left out of the snapshot, so every route using it
//! is refused with `ExternalCertificateValidationFailed`.
//!
//! As in OpenShift, a route is checked when it is added and when its spec changes (its generation), not when
//! RBAC changes. A check that fails (the apiserver did not answer) counts as a denial and is asked again with
//! the next snapshot.

use std::collections::{HashMap, HashSet};

use futures_util::{stream, StreamExt};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};
use tracing::{debug, warn};

use crate::model::{ObjectKey, Route, Snapshot};

/// What the router must be allowed to do with the Secret, as OpenShift checks it.
const VERBS: [&str; 3] = ["get", "list", "watch"];
/// How many Secrets are checked at once.
const CONCURRENT_CHECKS: usize = 8;

/// The Secret a route references, with the route's uid and generation: a new key means a new check.
type Reference = (ObjectKey, String, i64);

pub struct SecretAccess {
    client: Client,
    /// Answers by reference, for the references the last snapshot held.
    allowed: HashMap<Reference, bool>,
}

impl SecretAccess {
    pub fn new(client: Client) -> Self {
        Self { client, allowed: HashMap::new() }
    }

    /// Checks the references not checked yet and removes from `snapshot.secrets` every Secret some route may
    /// not use, naming it in `snapshot.unreadable_secrets`.
    pub async fn restrict(&mut self, snapshot: &mut Snapshot) {
        let references: HashSet<Reference> = snapshot.routes.values().filter_map(|route| reference(route)).collect();
        self.allowed.retain(|key, _| references.contains(key));
        let unchecked: HashSet<ObjectKey> = references
            .iter()
            .filter(|key| !self.allowed.contains_key(*key))
            .map(|(secret, _, _)| secret.clone())
            .collect();
        let answers: HashMap<ObjectKey, Option<bool>> = stream::iter(unchecked)
            .map(|secret| {
                let client = self.client.clone();
                async move {
                    let answer = may_read(&client, &secret).await;
                    (secret, answer)
                }
            })
            .buffer_unordered(CONCURRENT_CHECKS)
            .collect()
            .await;
        let mut denied = HashSet::new();
        for key in &references {
            let allowed = match (self.allowed.get(key), answers.get(&key.0)) {
                (Some(allowed), _) => *allowed,
                (None, Some(Some(allowed))) => {
                    self.allowed.insert(key.clone(), *allowed);
                    *allowed
                }
                // Not answered: denied for now, asked again next time.
                (None, _) => false,
            };
            if !allowed {
                denied.insert(key.0.clone());
            }
        }
        for secret in denied {
            debug!(secret = %secret, "the router may not read this externalCertificate Secret");
            snapshot.secrets.remove(&secret);
            snapshot.unreadable_secrets.insert(secret);
        }
    }
}

/// The Secret a Route's `externalCertificate` names (passthrough routes do not use it).
fn reference(route: &Route) -> Option<Reference> {
    let tls = route.spec.tls.as_ref()?;
    let secret = tls.external_certificate.as_ref().filter(|_| tls.termination != "passthrough")?;
    let key = ObjectKey::new(route.namespace()?, &secret.name);
    Some((key, route.uid().unwrap_or_default(), route.metadata.generation.unwrap_or_default()))
}

/// Whether this router's identity may get, list and watch `secret`; `None` when the apiserver did not answer.
async fn may_read(client: &Client, secret: &ObjectKey) -> Option<bool> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    for verb in VERBS {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: Some(secret.namespace.clone()),
                    verb: Some(verb.into()),
                    resource: Some("secrets".into()),
                    name: Some(secret.name.clone()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        match api.create(&PostParams::default(), &review).await {
            Ok(answer) if answer.status.as_ref().is_some_and(|status| status.allowed) => {}
            Ok(_) => {
                debug!(secret = %secret, verb, "externalCertificate Secret: access denied");
                return Some(false);
            }
            Err(error) => {
                warn!(secret = %secret, verb, %error, "externalCertificate Secret: access check failed");
                return None;
            }
        }
    }
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LocalObjectReference, RouteSpec, TlsConfig};

    fn route(termination: &str, generation: i64) -> Route {
        let tls = TlsConfig {
            termination: termination.into(),
            external_certificate: Some(LocalObjectReference { name: "cert".into() }),
            ..Default::default()
        };
        let mut route = Route::new("web", RouteSpec { tls: Some(Box::new(tls)), ..Default::default() });
        route.metadata.namespace = Some("shop".into());
        route.metadata.uid = Some("uid-1".into());
        route.metadata.generation = Some(generation);
        route
    }

    #[test]
    fn a_reference_is_the_secret_in_the_routes_namespace_and_changes_with_the_spec() {
        let first = reference(&route("edge", 1));
        assert_eq!(first, Some((ObjectKey::new("shop", "cert"), "uid-1".into(), 1)));
        assert_ne!(first, reference(&route("edge", 2)), "a spec change is checked again");
        assert_eq!(reference(&route("passthrough", 1)), None, "passthrough serves no certificate");
        assert_eq!(reference(&Route::new("plain", RouteSpec::default())), None);
    }
}
