//! `deserialize_with` for fields that have a default: an explicit `null` reads as the default (an empty list, an
//! empty string), the same as an absent field. The API server writes `null` for an empty list: the
//! EndpointSlice of a Service scaled to zero has `endpoints: null`.

use serde::{Deserialize, Deserializer};

/// Use with `#[serde(default, deserialize_with = "null_as_default")]`.
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}
