//! Turns one manifest file's text into its objects (a per-file `Snapshot`) and its errors.
//!
//! Each document is read into a JSON value (syntax errors carry their line), dispatched on `apiVersion`+`kind`,
//! and converted into the typed object, as the API server converts YAML to JSON before decoding. When that
//! conversion fails, its error names the path of the offending field, and walking the document text to that
//! path gives the field's file line. A plain block-style document (most of a big file) takes a faster way: the
//! block reader writes its JSON text, which decodes straight into the type; anything else, and every failure,
//! goes the value's way.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

use super::block_yaml;
use super::document::{self, Document, Step};
use super::error::ManifestError;
use super::keep::Keep;
use super::yaml;
use crate::model::gateway::{Gateway, HTTPRoute, TLSRoute};
use crate::model::{drop_bookkeeping, ObjectKey, Objects, Route, Snapshot};

/// What one file defines, and what went wrong reading it.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub objects: Snapshot,
    pub errors: Vec<ManifestError>,
}

/// Documents below which one thread reads a file alone: a thread costs more than it saves on fewer.
const DOCUMENTS_PER_THREAD: usize = 512;

/// Parses every document of a file. Errors never stop the other documents (or list items) from
/// being read. A big file's documents are read on every core, in runs of consecutive documents whose
/// results are put together in file order (a later definition of an object still wins).
pub(crate) fn parse_file(path: &Path, text: &str) -> Parsed {
    let docs = document::split(text);
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let threads = cores.min(docs.len() / DOCUMENTS_PER_THREAD).max(1);
    let mut parsed = if threads == 1 {
        parse_documents(path, &docs)
    } else {
        let per_thread = docs.len().div_ceil(threads);
        let parts: Vec<Parsed> = std::thread::scope(|scope| {
            let reading: Vec<_> =
                docs.chunks(per_thread).map(|run| scope.spawn(move || parse_documents(path, run))).collect();
            reading.into_iter().map(|run| run.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
        });
        let mut parts = parts.into_iter();
        let mut whole = parts.next().unwrap_or_default();
        parts.for_each(|part| whole.absorb(path, part));
        whole
    };
    parsed.objects.secrets.update_each(|secret| merge_string_data(Arc::make_mut(secret)));
    parsed
}

fn parse_documents(path: &Path, docs: &[Document]) -> Parsed {
    let mut parsed = Parsed::default();
    for doc in docs {
        Ctx { path, doc, out: &mut parsed }.document();
    }
    parsed
}

impl Parsed {
    /// Adds what the documents after this part's define: their objects replace this part's of the same key.
    fn absorb(&mut self, path: &Path, later: Parsed) {
        let (into, from) = (&mut self.objects, later.objects);
        absorb_kind(path, "Route", &mut into.routes, &from.routes);
        absorb_kind(path, "Service", &mut into.services, &from.services);
        absorb_kind(path, "EndpointSlice", &mut into.endpoint_slices, &from.endpoint_slices);
        absorb_kind(path, "Endpoints", &mut into.endpoints, &from.endpoints);
        absorb_kind(path, "Namespace", &mut into.namespaces, &from.namespaces);
        absorb_kind(path, "Secret", &mut into.secrets, &from.secrets);
        absorb_kind(path, "ConfigMap", &mut into.config_maps, &from.config_maps);
        absorb_kind(path, "Ingress", &mut into.ingresses, &from.ingresses);
        absorb_kind(path, "Gateway", &mut into.gateways, &from.gateways);
        absorb_kind(path, "HTTPRoute", &mut into.http_routes, &from.http_routes);
        absorb_kind(path, "TLSRoute", &mut into.tls_routes, &from.tls_routes);
        into.unreadable_secrets.extend(from.unreadable_secrets);
        self.errors.extend(later.errors);
    }
}

fn absorb_kind<K: Ord + Clone + std::fmt::Display, T>(
    path: &Path,
    kind: &str,
    into: &mut Objects<K, T>,
    from: &Objects<K, T>,
) {
    for (key, object) in from {
        if into.insert(key.clone(), object.clone()).is_some() {
            let path = path.display();
            tracing::warn!(%path, kind, object = %key, "object defined twice in one file; the later one wins");
        }
    }
}

/// An object's fields: a JSON value, or the JSON text the block reader wrote, which decodes straight into the
/// object's type (no value in between, the bulk of a big file's objects).
enum Body {
    Value(Value),
    Json(String),
}

impl Body {
    fn is_object(&self) -> bool {
        match self {
            Body::Value(value) => value.is_object(),
            Body::Json(text) => text.starts_with('{'),
        }
    }

    fn into_value(self) -> Value {
        match self {
            Body::Value(value) => value,
            Body::Json(text) => body_value(&text),
        }
    }
}

/// The value of JSON text the block reader wrote (always valid JSON).
fn body_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_default()
}

/// Where an object sits in its document: the document itself, or element `n` of the document's
/// `items`.
#[derive(Clone, Copy, Debug)]
enum Place {
    Document,
    Item(usize),
}

struct Ctx<'a> {
    path: &'a Path,
    doc: &'a Document,
    out: &'a mut Parsed,
}

impl Ctx<'_> {
    fn document(&mut self) {
        let fast = match block_yaml::to_json(&self.doc.text) {
            Some(json) if json.text.starts_with('{') && !json.kind.ends_with("List") => {
                return self.object(Place::Document, &json.api_version, &json.kind, Body::Json(json.text));
            }
            Some(json) => serde_json::from_str(&json.text).ok(),
            None => None,
        };
        let value: Value = match fast.map_or_else(|| yaml::from_str(&self.doc.text), Ok) {
            Ok(value) => value,
            Err(err) => {
                let line = yaml::line(&err).unwrap_or(1);
                return self.fail(Place::Document, Some(line), yaml::reason(&err));
            }
        };
        if value.is_null() {
            return;
        }
        let kind = str_field(&value, "kind");
        if kind.ends_with("List") && value.get("items").is_some() {
            self.list(value);
        } else {
            let api_version = str_field(&value, "apiVersion").to_owned();
            let kind = kind.to_owned();
            self.object(Place::Document, &api_version, &kind, Body::Value(value));
        }
    }

    /// `kind: List` (what `oc get -o yaml` prints) or a typed `XxxList`, whose items may omit
    /// apiVersion/kind.
    fn list(&mut self, mut value: Value) {
        let list_version = str_field(&value, "apiVersion").to_owned();
        let item_kind = str_field(&value, "kind").strip_suffix("List").unwrap_or_default().to_owned();
        let items = match value.get_mut("items").map(std::mem::take) {
            Some(Value::Array(items)) => items,
            Some(Value::Null) | None => Vec::new(),
            Some(_) => {
                let line = document::node_line(&self.doc.text);
                return self.fail(Place::Document, line, "items: expected a sequence".to_owned());
            }
        };
        for (index, item) in items.into_iter().enumerate() {
            let mut api_version = str_field(&item, "apiVersion").to_owned();
            let mut kind = str_field(&item, "kind").to_owned();
            if api_version.is_empty() && kind.is_empty() && !item_kind.is_empty() {
                api_version.clone_from(&list_version);
                kind.clone_from(&item_kind);
            }
            self.object(Place::Item(index), &api_version, &kind, Body::Value(item));
        }
    }

    fn object(&mut self, place: Place, api_version: &str, kind: &str, value: Body) {
        if !value.is_object() {
            let reason = "not a Kubernetes object: expected a mapping with apiVersion and kind";
            return self.fail(place, None, reason.to_owned());
        }
        match (api_version, kind) {
            ("route.openshift.io/v1", "Route") => {
                self.add::<_, Route>(place, kind, value, namespaced, |o| &mut o.routes)
            }
            ("v1", "Service") => self.add::<_, Service>(place, kind, value, namespaced, |o| &mut o.services),
            ("v1", "Endpoints") => self.add::<_, Endpoints>(place, kind, value, namespaced, |o| &mut o.endpoints),
            ("v1", "Secret") => self.add::<_, Secret>(place, kind, value, namespaced, |o| &mut o.secrets),
            ("v1", "ConfigMap") => self.add::<_, ConfigMap>(place, kind, value, namespaced, |o| &mut o.config_maps),
            ("discovery.k8s.io/v1", "EndpointSlice") => {
                self.add::<_, EndpointSlice>(place, kind, value, namespaced, |o| &mut o.endpoint_slices)
            }
            ("networking.k8s.io/v1", "Ingress") => {
                self.add::<_, Ingress>(place, kind, value, namespaced, |o| &mut o.ingresses)
            }
            ("gateway.networking.k8s.io/v1" | "gateway.networking.k8s.io/v1beta1", "Gateway") => {
                self.add::<_, Gateway>(place, kind, value, namespaced, |o| &mut o.gateways)
            }
            ("gateway.networking.k8s.io/v1" | "gateway.networking.k8s.io/v1beta1", "HTTPRoute") => {
                self.add::<_, HTTPRoute>(place, kind, value, namespaced, |o| &mut o.http_routes)
            }
            ("gateway.networking.k8s.io/v1alpha2" | "gateway.networking.k8s.io/v1", "TLSRoute") => {
                self.add::<_, TLSRoute>(place, kind, value, namespaced, |o| &mut o.tls_routes)
            }
            ("v1", "Namespace") => self.add::<_, Namespace>(place, kind, value, cluster, |o| &mut o.namespaces),
            ("", _) | (_, "") => self.fail(place, None, "missing apiVersion or kind".to_owned()),
            _ => {
                let value = value.into_value();
                let name = value.get("metadata").map_or("", |meta| str_field(meta, "name"));
                let path = self.path.display();
                tracing::debug!(%path, api_version, kind, name, "ignoring unsupported kind");
            }
        }
    }

    /// Decodes `value` as `T`, strips server-side bookkeeping, keys it with `key_of`, and stores what is kept of
    /// it (`Keep`) in the map `slot` picks.
    fn add<K: Ord + std::fmt::Display, T: kube::Resource + DeserializeOwned + Keep>(
        &mut self,
        place: Place,
        kind: &str,
        value: Body,
        key_of: fn(&mut ObjectMeta, String) -> K,
        slot: fn(&mut Snapshot) -> &mut Objects<K, T::Kept>,
    ) {
        let mut object: T = match self.decode(place, value) {
            Ok(object) => object,
            Err(error) => return self.out.errors.push(error),
        };
        let meta = object.meta_mut();
        drop_bookkeeping(meta);
        let Some(name) = meta.name.clone().filter(|name| !name.is_empty()) else {
            return self.fail(place, None, "metadata.name is required".to_owned());
        };
        let key = key_of(meta, name);
        let map = slot(&mut self.out.objects);
        if map.contains_key(&key) {
            let path = self.path.display();
            tracing::warn!(
                %path, kind, object = %key,
                "object defined twice in one file; the later one wins"
            );
        }
        map.insert(key, Arc::new(object.keep()));
    }

    /// Converts `value` into `T`; a failure is reported at the file line of the field its path names, with
    /// that path (`items[N].` first for a list item) in the reason.
    fn decode<T: DeserializeOwned>(&self, place: Place, body: Body) -> Result<T, ManifestError> {
        let value = match body {
            Body::Json(text) => match serde_json::from_str(&text) {
                Ok(object) => return Ok(object),
                // The reason and line of a failure come from the value's path, as for every other document.
                Err(_) => body_value(&text),
            },
            Body::Value(value) => value,
        };
        let err = match serde_path_to_error::deserialize::<_, T>(value) {
            Ok(object) => return Ok(object),
            Err(err) => err,
        };
        let mut steps = match place {
            Place::Document => Vec::new(),
            Place::Item(index) => vec![Step::Key("items"), Step::Index(index)],
        };
        for segment in err.path().iter() {
            match segment {
                Segment::Map { key } => steps.push(Step::Key(key)),
                Segment::Seq { index } => steps.push(Step::Index(*index)),
                Segment::Enum { .. } | Segment::Unknown => break,
            }
        }
        let line = document::path_line(&self.doc.text, &steps);
        let at_root = err.path().iter().next().is_none();
        let path = match place {
            Place::Document if at_root => None,
            Place::Document => Some(err.path().to_string()),
            Place::Item(index) if at_root => Some(format!("items[{index}]")),
            Place::Item(index) => Some(format!("items[{index}].{}", err.path())),
        };
        let reason = match path {
            Some(path) => format!("{path}: {}", err.inner()),
            None => err.inner().to_string(),
        };
        Err(self.error_at(place, line, reason))
    }

    /// An error about the object at `place`; `line` is the document line if known, else the
    /// object's first line.
    fn error_at(&self, place: Place, line: Option<usize>, reason: String) -> ManifestError {
        let line = line.or_else(|| match place {
            Place::Document => document::node_line(&self.doc.text),
            Place::Item(index) => document::item_line(&self.doc.text, index),
        });
        let reason = match place {
            Place::Item(index) if !reason.starts_with("items[") => {
                format!("items[{index}]: {reason}")
            }
            _ => reason,
        };
        let line = self.doc.file_line(line.unwrap_or(1));
        ManifestError::new(self.path, Some(line), reason)
    }

    fn fail(&mut self, place: Place, line: Option<usize>, reason: String) {
        let error = self.error_at(place, line, reason);
        self.out.errors.push(error);
    }
}

/// Key of a namespaced object; an object without a namespace lands in `default`, as `kubectl apply`
/// would put it.
fn namespaced(meta: &mut ObjectMeta, name: String) -> ObjectKey {
    let namespace = meta.namespace.get_or_insert_with(String::new);
    if namespace.is_empty() {
        namespace.push_str("default");
    }
    ObjectKey::new(namespace.clone(), name)
}

/// Folds `stringData` into `data`, as the API server does on write, so consumers read only `data`.
fn merge_string_data(secret: &mut Secret) {
    if let Some(strings) = secret.string_data.take() {
        let data = secret.data.get_or_insert_with(BTreeMap::new);
        for (key, text) in strings {
            data.insert(key, ByteString(text.into_bytes()));
        }
    }
}

/// Key of a cluster-scoped object: its name.
fn cluster(_: &mut ObjectMeta, name: String) -> String {
    name
}

fn str_field<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod tests;
