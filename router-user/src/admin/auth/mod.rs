//! Who may read `/metrics` and `/debug/*` on the admin listener, as openshift/router guards its stats port:
//! - STATS_USERNAME / STATS_PASSWORD (or their `_FILE` forms) set: a request with basic credentials is let in
//!   when they match and refused with 401 when they do not;
//! - with the Kubernetes source, any other request needs a bearer token the API server vouches for
//!   (`kube_review`): unknown token 401, a user without the right 403, the API server failing 500;
//! - a request with neither is refused (401);
//! - with the manifest source and no credentials there is nobody to ask: the pages stay open.
//!
//! `/healthz` and `/healthz/ready` are never guarded (probes carry no credentials).

mod basic;
mod kube_review;
mod review_cache;

use http::{header, Method, Request};

pub use basic::BasicCredentials;
pub use kube_review::KubeReviewer;

/// The outcome of a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// No credentials, wrong ones, or a token the API server does not know: 401.
    Unauthenticated,
    /// A known user without the right: 403.
    Forbidden,
    /// The API server could not be asked: 500.
    Failed,
}

#[derive(Default)]
pub struct AdminGuard {
    pub basic: Option<BasicCredentials>,
    pub kube: Option<KubeReviewer>,
}

impl AdminGuard {
    /// Nothing to check against: every request is let in.
    pub fn is_open(&self) -> bool {
        self.basic.is_none() && self.kube.is_none()
    }

    /// Whether `request` may read the guarded page it asks for.
    pub async fn check<B>(&self, request: &Request<B>) -> Decision {
        if self.is_open() {
            return Decision::Allow;
        }
        let authorization = request.headers().get(header::AUTHORIZATION);
        if let (Some(expected), Some((user, password))) =
            (&self.basic, authorization.and_then(basic::basic_credentials))
        {
            return match expected.accepts(&user, &password) {
                true => Decision::Allow,
                false => Decision::Unauthenticated,
            };
        }
        match (&self.kube, authorization.and_then(basic::bearer_token)) {
            (Some(reviewer), Some(token)) => {
                reviewer.review(token, verb(request.method()), subresource(request.uri().path())).await
            }
            _ => Decision::Unauthenticated,
        }
    }
}

/// The Kubernetes verb of an HTTP method, as openshift/router maps it.
fn verb(method: &Method) -> &'static str {
    match *method {
        Method::GET | Method::HEAD => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    }
}

/// The `routers` subresource a guarded path stands for.
fn subresource(path: &str) -> &'static str {
    if path.starts_with("/debug/") {
        "debug"
    } else {
        "metrics"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(authorization: Option<&str>) -> Request<()> {
        let mut builder = Request::get("/metrics");
        if let Some(value) = authorization {
            builder = builder.header(header::AUTHORIZATION, value);
        }
        builder.body(()).expect("request")
    }

    #[tokio::test]
    async fn basic_credentials_decide_alone_without_the_kubernetes_source() {
        let guard = AdminGuard {
            basic: Some(BasicCredentials { username: "admin".into(), password: "s3cret".into() }),
            kube: None,
        };
        assert_eq!(guard.check(&request(Some("Basic YWRtaW46czNjcmV0"))).await, Decision::Allow);
        // "admin:wrong"
        assert_eq!(guard.check(&request(Some("Basic YWRtaW46d3Jvbmc="))).await, Decision::Unauthenticated);
        assert_eq!(guard.check(&request(None)).await, Decision::Unauthenticated);
        assert_eq!(guard.check(&request(Some("Bearer abc"))).await, Decision::Unauthenticated);
    }

    #[tokio::test]
    async fn nothing_configured_leaves_the_pages_open() {
        assert_eq!(AdminGuard::default().check(&request(None)).await, Decision::Allow);
    }

    #[test]
    fn paths_and_methods_map_to_openshifts_attributes() {
        assert_eq!(subresource("/metrics"), "metrics");
        assert_eq!(subresource("/debug/routes"), "debug");
        assert_eq!(verb(&Method::HEAD), "get");
        assert_eq!(verb(&Method::POST), "create");
    }
}
