//! What the manifest source keeps of each decoded object. Services, EndpointSlices and core Endpoints as the few
//! fields the router reads (`model::StoredService` and the like); Routes with their list's spare room given back
//! (decoding from JSON text cannot know a list's length before reading it, so a list keeps the room of its last
//! growth, at 100,000 routes megabytes for nothing); every other kind as decoded.

use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;

use crate::model::gateway::{Gateway, HTTPRoute, TLSRoute};
use crate::model::{Route, StoredEndpoints, StoredService, StoredSlice};

/// A decoded object and what of it the snapshot holds.
pub(super) trait Keep {
    type Kept;
    fn keep(self) -> Self::Kept;
}

impl Keep for EndpointSlice {
    type Kept = StoredSlice;
    fn keep(self) -> StoredSlice {
        self.into()
    }
}

impl Keep for Endpoints {
    type Kept = StoredEndpoints;
    fn keep(self) -> StoredEndpoints {
        self.into()
    }
}

impl Keep for Service {
    type Kept = StoredService;
    fn keep(self) -> StoredService {
        self.into()
    }
}

impl Keep for Route {
    type Kept = Route;
    fn keep(mut self) -> Route {
        self.spec.alternate_backends.shrink_to_fit();
        self
    }
}

/// Kinds kept whole, as decoded.
macro_rules! kept_whole {
    ($($kind:ty),*) => {$(
        impl Keep for $kind {
            type Kept = $kind;
            fn keep(self) -> $kind {
                self
            }
        }
    )*};
}

kept_whole!(Secret, ConfigMap, Namespace, Ingress, Gateway, HTTPRoute, TLSRoute);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_decoded_from_json_text_keeps_no_spare_room() {
        let text = r#"{"metadata":{"name":"r"},"spec":{"to":{"kind":"Service","name":"a"},
                      "alternateBackends":[{"kind":"Service","name":"b"}]}}"#;
        let route: Route = serde_json::from_str(text).expect("a route");
        assert!(route.spec.alternate_backends.capacity() > 1, "the decoder leaves room (else this tests nothing)");
        assert_eq!(route.keep().spec.alternate_backends.capacity(), 1);
    }
}
