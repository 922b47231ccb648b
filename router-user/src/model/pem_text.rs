//! The PEM text of a route's TLS fields, held once however many routes carry it. A cluster's routes share a few
//! CA certificates (the service CA above all, every reencrypt route's destination CA), and wildcard
//! certificates with their keys: at 40,000 routes, copies of the same text were a fifth of the router's heap.
//! Texts are interned as they are read, by whichever source reads them.

use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PemText(Arc<str>);

impl Deref for PemText {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for PemText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<String> for PemText {
    fn from(text: String) -> PemText {
        PemText(intern(text))
    }
}

impl From<&str> for PemText {
    fn from(text: &str) -> PemText {
        PemText(intern(text.to_string()))
    }
}

impl Serialize for PemText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for PemText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PemText, D::Error> {
        String::deserialize(deserializer).map(PemText::from)
    }
}

impl PemText {
    /// Forgets the texts no route holds any more (interning also does this each time the set has doubled).
    pub fn forget_unheld() {
        let mut guard = INTERNED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(interned) = guard.as_mut() {
            interned.texts.retain(|known| Arc::strong_count(known) > 1);
        }
    }
}

struct Interned {
    texts: HashSet<Arc<str>>,
    /// The set's size at which texts no route holds any more are forgotten (twice the size after the last time).
    sweep_at: usize,
}

static INTERNED: Mutex<Option<Interned>> = Mutex::new(None);

fn intern(text: String) -> Arc<str> {
    // Every change to the set is one insert or retain: it stays whole if a holder panicked.
    let mut guard = INTERNED.lock().unwrap_or_else(PoisonError::into_inner);
    let interned = guard.get_or_insert_with(|| Interned { texts: HashSet::new(), sweep_at: 1024 });
    if let Some(known) = interned.texts.get(text.as_str()) {
        return Arc::clone(known);
    }
    if interned.texts.len() >= interned.sweep_at {
        interned.texts.retain(|known| Arc::strong_count(known) > 1);
        interned.sweep_at = (2 * interned.texts.len()).max(1024);
    }
    let text: Arc<str> = Arc::from(text);
    interned.texts.insert(Arc::clone(&text));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_read_twice_is_held_once() {
        let a: PemText = serde_json::from_str("\"-----BEGIN CERTIFICATE-----\\nsame\"").expect("a string");
        let b = PemText::from(String::from("-----BEGIN CERTIFICATE-----\nsame"));
        assert!(Arc::ptr_eq(&a.0, &b.0), "one allocation for both");
        let other = PemText::from("-----BEGIN CERTIFICATE-----\nother");
        assert!(!Arc::ptr_eq(&a.0, &other.0));
        assert_eq!(serde_json::to_string(&a).expect("serializes"), "\"-----BEGIN CERTIFICATE-----\\nsame\"");
    }

    #[test]
    fn texts_no_one_holds_are_forgotten_as_the_set_grows() {
        let held = PemText::from("held across sweeps");
        for index in 0..5000 {
            drop(PemText::from(format!("dropped {index}")));
        }
        let guard = INTERNED.lock().unwrap_or_else(PoisonError::into_inner);
        let texts = &guard.as_ref().expect("interned").texts;
        assert!(texts.len() < 3000, "dropped texts were swept: {} left", texts.len());
        assert!(texts.contains("held across sweeps"));
        drop(held);
    }
}
