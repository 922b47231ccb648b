//! The Kubernetes source and the manifest source make the same routes of one Ingress (with its Service and TLS
//! Secret): both put the Ingress in the snapshot and run the snapshot's Ingress step.

use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::runtime::reflector::{self, Lookup, Store};
use kube::runtime::watcher::Event;
use serde::de::DeserializeOwned;

use super::kept::Kept;
use super::stores::{SliceStore, Stores};
use crate::model::{ObjectKey, Objects, Route};
use crate::source::manifest::ManifestSource;

const FIXTURE: &str = include_str!("../manifest/testdata/ingress.yaml");

/// The fixture's objects of `kind`, decoded as the API would send them.
fn objects_of<K: DeserializeOwned>(kind: &str) -> Vec<K> {
    let documents: Vec<serde_json::Value> = FIXTURE
        .split("\n---\n")
        .map(|text| serde_saphyr::from_str(text).expect("fixture document"))
        .filter(|value: &serde_json::Value| value["kind"] == kind)
        .collect();
    documents.into_iter().map(|value| serde_json::from_value(value).expect("fixture object")).collect()
}

fn store_of<K>(objects: Vec<K>) -> Store<K>
where
    K: Lookup<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let (reader, mut writer) = reflector::store();
    writer.apply_watcher_event(&Event::Init);
    for object in objects {
        writer.apply_watcher_event(&Event::InitApply(object));
    }
    writer.apply_watcher_event(&Event::InitDone);
    reader
}

/// The routes by key, each as its JSON (`Route` has no `PartialEq`): every field compared.
fn routes_of(routes: &Objects<ObjectKey, Route>) -> Vec<(ObjectKey, serde_json::Value)> {
    routes.iter().map(|(key, route)| (key.clone(), serde_json::to_value(&**route).expect("route as JSON"))).collect()
}

#[test]
fn an_ingress_makes_the_same_routes_from_the_api_as_from_a_manifest_file() {
    let stores = Stores {
        routes: store_of(Vec::new()),
        services: store_of(objects_of::<Service>("Service").into_iter().map(Kept::keep).collect()),
        slices: SliceStore::Off,
        endpoints: None,
        namespaces: store_of(Vec::new()),
        secrets: store_of(objects_of::<Secret>("Secret")),
        config_maps: store_of(Vec::new()),
        ingresses: store_of(objects_of::<Ingress>("Ingress")),
        gateway: None,
    };
    let from_api = routes_of(&stores.snapshot().routes);

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("ingress.yaml"), FIXTURE).expect("write manifest");
    let update = ManifestSource::new(dir.path()).reload();
    assert!(update.errors.is_empty(), "{:?}", update.errors);
    let from_file = routes_of(&update.snapshot.routes);

    let names: Vec<String> = from_api.iter().map(|(key, _)| key.to_string()).collect();
    assert_eq!(names, ["shop/site-ingress-0-0", "shop/site-ingress-1-0", "shop/site-ingress-1-2"]);
    assert_eq!(from_api, from_file);
    let tls = &from_api[0].1["spec"]["tls"];
    assert_eq!((&tls["termination"], &tls["certificate"]), (&serde_json::json!("edge"), &serde_json::json!("CERT")));
}
