//! The OpenShift `Route` (route.openshift.io/v1) as a kube custom resource, so the manifest source and the
//! Kubernetes source share one type. Field names follow openshift/api route/v1.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::gateway_filters::GatewayFilters;
use super::null_as_default::null_as_default;
use super::pem_text::PemText;
use super::request_match::RequestMatch;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(group = "route.openshift.io", version = "v1", kind = "Route", namespaced, status = "RouteStatus")]
#[serde(rename_all = "camelCase")]
pub struct RouteSpec {
    /// Public host name; empty when `subdomain` is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<String>,
    /// Path prefix, matched on segment boundaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub to: RouteTargetReference,
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub alternate_backends: Vec<RouteTargetReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<RoutePort>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Box<TlsConfig>>,
    /// `None` (default) or `Subdomain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wildcard_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_headers: Option<Box<RouteHttpHeaders>>,
    /// Not a Route field: what a route made from an HTTPRoute match asks of a request beyond host and path.
    #[serde(skip)]
    #[schemars(skip)]
    pub request_match: Option<Arc<RequestMatch>>,
    /// Not a Route field: what a route made from an HTTPRoute rule does beyond what Route fields express.
    #[serde(skip)]
    #[schemars(skip)]
    pub gateway_filters: Option<Arc<GatewayFilters>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteTargetReference {
    /// Always `Service` for the router.
    #[serde(default, deserialize_with = "null_as_default")]
    pub kind: String,
    pub name: String,
    /// 0..=256; absent means 1 in the router (the API server defaults it to 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutePort {
    pub target_port: IntOrString,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsConfig {
    /// `edge`, `passthrough` or `reencrypt`.
    pub termination: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub certificate: Option<PemText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub key: Option<PemText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub ca_certificate: Option<PemText>,
    #[serde(rename = "destinationCACertificate", default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub destination_ca_certificate: Option<PemText>,
    /// `None`, `Allow` or `Redirect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_edge_termination_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_certificate: Option<LocalObjectReference>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct LocalObjectReference {
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RouteHttpHeaders {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<RouteHttpHeaderActions>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RouteHttpHeaderActions {
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub request: Vec<RouteHttpHeader>,
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub response: Vec<RouteHttpHeader>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RouteHttpHeader {
    pub name: String,
    pub action: RouteHttpHeaderAction,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteHttpHeaderAction {
    /// `Set` or `Delete`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<RouteSetHttpHeader>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RouteSetHttpHeader {
    pub value: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RouteStatus {
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub ingress: Vec<RouteIngress>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteIngress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wildcard_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_canonical_hostname: Option<String>,
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<RouteIngressCondition>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteIngressCondition {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}
