//! Checks made before the reflectors start: every watched resource can be listed (RBAC denial is named with the
//! resource), the Route CRD is installed (and the Gateway and HTTPRoute CRDs when the Gateway API is read), and
//! which EndpointSlice version and whether TLSRoutes are served. At start a misconfigured router fails with a
//! clear message; an API server that cannot be reached is retried with backoff ([`until_passed`]), and so is
//! everything once the router is running.

use std::fmt::Debug;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::ListParams;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tracing::{error, info, warn};

use super::endpointslice_v1beta1::EndpointSliceV1beta1;
use super::KubeError;
use crate::model::gateway::{Gateway, HTTPRoute, TLSRoute};
use crate::model::Route;

/// What the server serves, as the reflectors need to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Served {
    /// `discovery.k8s.io/v1` EndpointSlices (else v1beta1).
    pub slices_v1: bool,
    /// `gateway.networking.k8s.io/v1alpha2` TLSRoutes (asked only when the Gateway API is read).
    pub tls_routes: bool,
}

/// Checks access (to Gateways and HTTPRoutes too when `gateway_api`); returns what is served.
pub async fn check(client: &Client, watch_endpoints: bool, gateway_api: bool) -> Result<Served, KubeError> {
    let slices_v1 = check_core(client, watch_endpoints).await?;
    let mut tls_routes = false;
    if gateway_api {
        can_list::<Gateway>(client).await?;
        can_list::<HTTPRoute>(client).await?;
        tls_routes = match can_list::<TLSRoute>(client).await {
            Ok(()) => true,
            Err(KubeError::MissingCrd { resource }) => {
                warn!(%resource, "TLSRoutes are not served by this cluster (experimental channel): not watched");
                false
            }
            Err(error) => return Err(error),
        };
    }
    Ok(Served { slices_v1, tls_routes })
}

async fn check_core(client: &Client, watch_endpoints: bool) -> Result<bool, KubeError> {
    can_list::<Route>(client).await?;
    can_list::<Service>(client).await?;
    can_list::<Namespace>(client).await?;
    can_list::<Secret>(client).await?;
    can_list::<ConfigMap>(client).await?;
    can_list::<Ingress>(client).await?;
    let slices_v1 = serves_endpointslice_v1(client).await?;
    if watch_endpoints {
        can_list::<Endpoints>(client).await?;
    } else if slices_v1 {
        can_list::<k8s_openapi::api::discovery::v1::EndpointSlice>(client).await?;
    } else {
        can_list::<EndpointSliceV1beta1>(client).await?;
    }
    Ok(slices_v1)
}

/// First wait between attempts of [`until_passed`]; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Repeats [`check`] with exponential backoff until it passes (after `failed`, the error of an attempt already
/// made); each failed attempt is logged once, with the wait before the next. Returns [`check`]'s answer.
pub async fn until_passed(client: &Client, watch_endpoints: bool, gateway_api: bool, failed: KubeError) -> Served {
    let mut backoff = FIRST_BACKOFF;
    let mut error = failed;
    let mut attempt = 1u32;
    loop {
        let retry_in = format!("{backoff:?}");
        if error.is_transient() {
            warn!(attempt, %retry_in, %error, "Kubernetes API not reachable; not ready until the first sync");
        } else {
            error!(attempt, %retry_in, %error, "Kubernetes API refused the router; not ready until this is fixed");
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        attempt += 1;
        match check(client, watch_endpoints, gateway_api).await {
            Ok(served) => {
                info!(attempt, "Kubernetes API reachable");
                return served;
            }
            Err(next) => error = next,
        }
    }
}

async fn can_list<K>(client: &Client) -> Result<(), KubeError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let resource = format!("{}.{}", K::plural(&()), K::api_version(&()));
    match Api::<K>::all(client.clone()).list_metadata(&ListParams::default().limit(1)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_forbidden() => {
            Err(KubeError::Forbidden { verb: "list", resource, message: status.message })
        }
        Err(kube::Error::Api(status)) if status.is_not_found() => Err(KubeError::MissingCrd { resource }),
        Err(source) => Err(KubeError::Preflight { verb: "list", resource, source }),
    }
}

async fn serves_endpointslice_v1(client: &Client) -> Result<bool, KubeError> {
    match client.list_api_group_resources("discovery.k8s.io/v1").await {
        Ok(list) => Ok(list.resources.iter().any(|r| r.name == "endpointslices")),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(false),
        Err(source) => Err(KubeError::Preflight { verb: "discover", resource: "discovery.k8s.io/v1".into(), source }),
    }
}
