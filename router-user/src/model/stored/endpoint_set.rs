//! `EndpointSet`: endpoint ports and addresses as both endpoint APIs give them (an EndpointSlice, a subset of
//! core Endpoints): every address serves on every port.

use std::net::IpAddr;

/// Ports and the addresses that serve them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointSet {
    /// TCP ports whose number fits 16 bits only, in the object's order.
    pub ports: Box<[EndpointPort]>,
    /// Parsed addresses, in the object's order (a slice endpoint's several addresses one after the other).
    pub addresses: Box<[EndpointAddress]>,
}

/// One TCP port of an endpoint set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointPort {
    /// Empty when the port has no name.
    pub name: Box<str>,
    pub number: u16,
    /// Its `appProtocol` asks for HTTP/2 without TLS (`h2c`, `kubernetes.io/h2c`).
    pub h2c: bool,
}

/// One address of an endpoint set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointAddress {
    pub ip: IpAddr,
    /// The `ready` condition (absent means ready); core Endpoints' `addresses` are all ready.
    pub ready: bool,
    /// The pod it is (`targetRef` of kind `Pod`).
    pub pod: Option<Box<str>>,
    pub node: Option<Box<str>>,
}

impl EndpointPort {
    /// The port, when the router can use it: TCP (no protocol means TCP) and a number that fits a port.
    pub fn usable(name: Option<&str>, number: Option<i32>, protocol: Option<&str>, app: Option<&str>) -> Option<Self> {
        if !matches!(protocol, None | Some("TCP")) {
            return None;
        }
        let number = u16::try_from(number?).ok()?;
        let h2c = matches!(app, Some("h2c" | "kubernetes.io/h2c"));
        Some(Self { name: name.unwrap_or_default().into(), number, h2c })
    }
}

/// The pod an endpoint's `targetRef` names, if it names one.
pub(super) fn pod_of(target: Option<&k8s_openapi::api::core::v1::ObjectReference>) -> Option<Box<str>> {
    target.filter(|t| t.kind.as_deref() == Some("Pod")).and_then(|t| t.name.as_deref()).map(Into::into)
}
