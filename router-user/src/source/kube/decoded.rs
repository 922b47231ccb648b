//! Objects decoded one at a time. The reflectors list and watch `Decoded<K>` instead of `K`: an object that does
//! not decode as `K` becomes [`Decoded::Undecodable`], with its name and the decoding error, instead of failing
//! the whole list (and every list after it) or the watch. `sieve` leaves such objects out of the store.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One object of a list or watch event: decoded, or not.
#[derive(Clone, Debug)]
pub enum Decoded<K> {
    Object(K),
    /// Boxed: rare, and larger than most objects' inline part.
    Undecodable(Box<Undecodable>),
}

/// An object that did not decode: what could be read of its metadata, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Undecodable {
    /// `name`, `namespace`, `resourceVersion` and `uid`, where they are strings.
    pub metadata: ObjectMeta,
    pub error: String,
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for Decoded<K> {
    /// Never fails on a well-formed JSON value. Lists (`items`) reach here through serde's buffered content,
    /// which only a self-describing intermediate like `Value` can take.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(match K::deserialize(&value) {
            Ok(object) => Decoded::Object(object),
            Err(error) => {
                Decoded::Undecodable(Box::new(Undecodable { metadata: identity(&value), error: error.to_string() }))
            }
        })
    }
}

/// The identifying metadata of an object that did not decode.
fn identity(value: &Value) -> ObjectMeta {
    let text = |field: &str| value["metadata"][field].as_str().map(str::to_string);
    ObjectMeta {
        name: text("name"),
        namespace: text("namespace"),
        resource_version: text("resourceVersion"),
        uid: text("uid"),
        ..ObjectMeta::default()
    }
}

/// The API of `K`: the watcher lists and watches `K`'s URL, and tracks resource versions through [`Self::meta`].
impl<K: Resource<DynamicType = ()>> Resource for Decoded<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dynamic: &()) -> Cow<'_, str> {
        K::kind(dynamic)
    }

    fn group(dynamic: &()) -> Cow<'_, str> {
        K::group(dynamic)
    }

    fn version(dynamic: &()) -> Cow<'_, str> {
        K::version(dynamic)
    }

    fn api_version(dynamic: &()) -> Cow<'_, str> {
        K::api_version(dynamic)
    }

    fn plural(dynamic: &()) -> Cow<'_, str> {
        K::plural(dynamic)
    }

    fn url_path(dynamic: &(), namespace: Option<&str>) -> String {
        K::url_path(dynamic, namespace)
    }

    fn meta(&self) -> &ObjectMeta {
        match self {
            Decoded::Object(object) => object.meta(),
            Decoded::Undecodable(undecodable) => &undecodable.metadata,
        }
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Decoded::Object(object) => object.meta_mut(),
            Decoded::Undecodable(undecodable) => &mut undecodable.metadata,
        }
    }
}

#[cfg(test)]
mod tests;
