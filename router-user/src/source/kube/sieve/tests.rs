//! The sieve in front of a real reflector store of kept slices, as the source runs it: what is stored, what is
//! reported, and how often.

use std::sync::Arc;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::Event;

use super::Sieve;
use crate::metrics::Metrics;
use crate::model::{unusable_address_type, StoredSlice};
use crate::source::kube::decoded::{Decoded, Undecodable};
use crate::source::kube::kept::Kept;
use crate::source::kube::skipped::SkippedObjects;

fn metadata(name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.into()), namespace: Some("ns".into()), ..ObjectMeta::default() }
}

fn slice(name: &str, address_type: &str) -> Decoded<EndpointSlice> {
    Decoded::Object(EndpointSlice { metadata: metadata(name), address_type: address_type.into(), ..Default::default() })
}

fn undecodable(name: &str) -> Decoded<EndpointSlice> {
    Decoded::Undecodable(Box::new(Undecodable { metadata: metadata(name), error: "invalid type: null".into() }))
}

type KeptSlice = Kept<EndpointSlice, StoredSlice>;

struct Reflector {
    sieve: Sieve<EndpointSlice, KeptSlice>,
    writer: reflector::store::Writer<KeptSlice>,
    store: Store<KeptSlice>,
    skipped: Arc<SkippedObjects>,
    metrics: Arc<Metrics>,
}

impl Reflector {
    fn new() -> Self {
        let (store, writer) = reflector::store();
        let (skipped, metrics) = (Arc::new(SkippedObjects::default()), Arc::new(Metrics::default()));
        let usability = |slice: &EndpointSlice| unusable_address_type(&slice.address_type);
        let sieve = Sieve::new("endpointslices", Some(usability), Kept::keep, skipped.clone(), metrics.clone());
        Self { sieve, writer, store, skipped, metrics }
    }

    /// Sifts `event` and applies what comes out to the store; returns what came out, as text.
    fn feed(&mut self, event: Event<Decoded<EndpointSlice>>) -> String {
        let store = self.store.clone();
        let sifted = self.sieve.sift(event, |key| store.get(key));
        if let Some(event) = &sifted {
            self.writer.apply_watcher_event(event);
        }
        match sifted {
            None => "nothing".into(),
            Some(Event::Apply(slice)) => format!("apply {}", slice.key.name),
            Some(Event::Delete(slice)) => format!("delete {}", slice.key.name),
            Some(Event::InitApply(slice)) => format!("init-apply {}", slice.key.name),
            Some(Event::Init) => "init".into(),
            Some(Event::InitDone) => "init-done".into(),
        }
    }

    fn stored(&self) -> Vec<String> {
        let mut names: Vec<String> = self.store.state().iter().map(|slice| slice.key.name.clone()).collect();
        names.sort();
        names
    }

    fn skipped(&self) -> Vec<String> {
        self.skipped
            .list()
            .iter()
            .map(|object| format!("{} {}/{}", object.kind, object.namespace, object.name))
            .collect()
    }

    fn reported(&self) -> String {
        let text = self.metrics.render();
        let line = text.lines().find(|line| line.starts_with("router_kube_objects_skipped_total"));
        line.unwrap_or("none").to_string()
    }
}

#[test]
fn objects_that_cannot_be_used_stay_out_of_the_store_and_are_reported_once() {
    let mut reflector = Reflector::new();
    reflector.feed(Event::Init);
    assert_eq!(reflector.feed(Event::InitApply(slice("a", "IPv4"))), "init-apply a");
    assert_eq!(reflector.feed(Event::InitApply(undecodable("b"))), "nothing");
    assert_eq!(reflector.feed(Event::InitApply(slice("c", "FQDN"))), "nothing");
    assert_eq!(reflector.feed(Event::InitDone), "init-done");
    assert_eq!(reflector.stored(), ["a"], "the first list completes without b and c");
    assert_eq!(reflector.skipped(), ["EndpointSlice ns/b", "EndpointSlice ns/c"]);
    let reasons: Vec<String> = reflector.skipped.list().into_iter().map(|object| object.reason).collect();
    assert!(reasons[0].contains("cannot be decoded: invalid type: null"), "{}", reasons[0]);
    assert!(reasons[1].contains("FQDN"), "{}", reasons[1]);
    assert_eq!(reflector.reported(), r#"router_kube_objects_skipped_total{resource="endpointslices"} 2"#);

    // An update that cannot be read takes the earlier version out; repeating it reports nothing new.
    assert_eq!(reflector.feed(Event::Apply(undecodable("a"))), "delete a");
    assert_eq!(reflector.feed(Event::Apply(undecodable("a"))), "nothing");
    assert!(reflector.stored().is_empty());
    assert_eq!(reflector.reported(), r#"router_kube_objects_skipped_total{resource="endpointslices"} 3"#);

    // Readable again: stored and no longer listed. Deleted while unreadable: forgotten.
    assert_eq!(reflector.feed(Event::Apply(slice("a", "IPv6"))), "apply a");
    assert_eq!(reflector.feed(Event::Delete(undecodable("b"))), "nothing");
    assert_eq!(reflector.stored(), ["a"]);
    assert_eq!(reflector.skipped(), ["EndpointSlice ns/c"]);

    // A relist without c (deleted while the watch was down) forgets it; one with a still-skipped object keeps
    // it without counting it again.
    reflector.feed(Event::Init);
    reflector.feed(Event::InitApply(slice("a", "IPv4")));
    reflector.feed(Event::InitApply(slice("d", "FQDN")));
    reflector.feed(Event::InitDone);
    assert_eq!(reflector.skipped(), ["EndpointSlice ns/d"]);
    reflector.feed(Event::Init);
    reflector.feed(Event::InitApply(slice("d", "FQDN")));
    reflector.feed(Event::InitDone);
    assert_eq!(reflector.skipped(), ["EndpointSlice ns/d"]);
    assert!(reflector.stored().is_empty());
    assert_eq!(reflector.reported(), r#"router_kube_objects_skipped_total{resource="endpointslices"} 4"#);
}
