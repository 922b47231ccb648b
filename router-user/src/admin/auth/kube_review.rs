//! A bearer token checked by the Kubernetes API, as openshift/router's delegated authentication does it: a
//! TokenReview says who the token belongs to, then a SubjectAccessReview asks whether that user may `<verb>`
//! the subresource `metrics` (for `/metrics`) or `debug` (for `/debug/*`) of `routers.route.openshift.io`
//! named after this router (ROUTER_SERVICE_NAME). The ingress operator grants Prometheus `get` on
//! `routers/metrics`. The router's own identity needs `create` on `tokenreviews` and `subjectaccessreviews`
//! (`deploy/rbac.yaml`).

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use kube::api::PostParams;
use kube::{Api, Client};
use tracing::{debug, warn};

use super::review_cache::ReviewCache;
use super::Decision;

pub struct KubeReviewer {
    client: Client,
    router_name: String,
    cache: ReviewCache,
}

impl KubeReviewer {
    pub fn new(client: Client, router_name: String) -> Self {
        Self { client, router_name, cache: ReviewCache::default() }
    }

    /// Whether `token` may `verb` this router's `subresource`.
    pub async fn review(&self, token: &str, verb: &'static str, subresource: &'static str) -> Decision {
        if let Some(decision) = self.cache.get(token, verb, subresource) {
            return decision;
        }
        let decision = self.ask(token, verb, subresource).await;
        self.cache.put(token, verb, subresource, decision);
        decision
    }

    async fn ask(&self, token: &str, verb: &'static str, subresource: &'static str) -> Decision {
        let tokens: Api<TokenReview> = Api::all(self.client.clone());
        let review = TokenReview {
            spec: TokenReviewSpec { token: Some(token.to_string()), ..Default::default() },
            ..Default::default()
        };
        let status = match tokens.create(&PostParams::default(), &review).await {
            Ok(answer) => answer.status.unwrap_or_default(),
            Err(error) => {
                warn!(%error, "admin listener: TokenReview failed");
                return Decision::Failed;
            }
        };
        let (true, Some(user)) = (status.authenticated.unwrap_or(false), status.user) else {
            debug!(error = ?status.error, "admin listener: token not authenticated");
            return Decision::Unauthenticated;
        };
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                uid: user.uid,
                groups: user.groups,
                extra: user.extra,
                resource_attributes: Some(ResourceAttributes {
                    group: Some("route.openshift.io".into()),
                    resource: Some("routers".into()),
                    subresource: Some(subresource.into()),
                    name: Some(self.router_name.clone()),
                    verb: Some(verb.into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let reviews: Api<SubjectAccessReview> = Api::all(self.client.clone());
        match reviews.create(&PostParams::default(), &access).await {
            Ok(answer) if answer.status.as_ref().is_some_and(|status| status.allowed) => Decision::Allow,
            Ok(_) => {
                debug!(user = ?user.username, verb, subresource, "admin listener: access denied");
                Decision::Forbidden
            }
            Err(error) => {
                warn!(%error, "admin listener: SubjectAccessReview failed");
                Decision::Failed
            }
        }
    }
}
