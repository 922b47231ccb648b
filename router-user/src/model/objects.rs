//! `Objects`: one kind's objects of a `Snapshot`, by key, in key order. An ordered map shared whole (`base`)
//! plus a small ordered map whose entries add to it or replace its entries (`overlay`). A source that changes a
//! few objects among many (one more manifest file beside a big one) builds the next snapshot by sharing the
//! last one's base and putting the change in the overlay: cloning and dropping cost the overlay, not the
//! whole map, and `same_base` tells a reader that only the overlays can differ.

use std::borrow::Borrow;
use std::collections::btree_map::{self, BTreeMap};
use std::fmt;
use std::ops::{Bound, Index};
use std::sync::Arc;

pub struct Objects<K, T> {
    base: Arc<BTreeMap<K, Arc<T>>>,
    overlay: BTreeMap<K, Arc<T>>,
    /// How many keys of `overlay` are not in `base`.
    added: usize,
}

impl<K, T> Default for Objects<K, T> {
    fn default() -> Self {
        Self { base: Arc::default(), overlay: BTreeMap::new(), added: 0 }
    }
}

impl<K: Clone, T> Clone for Objects<K, T> {
    fn clone(&self) -> Self {
        Self { base: self.base.clone(), overlay: self.overlay.clone(), added: self.added }
    }
}

impl<K: fmt::Debug + Ord, T: fmt::Debug> fmt::Debug for Objects<K, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Ord, T> From<BTreeMap<K, Arc<T>>> for Objects<K, T> {
    fn from(map: BTreeMap<K, Arc<T>>) -> Self {
        Self { base: Arc::new(map), overlay: BTreeMap::new(), added: 0 }
    }
}

impl<K: Ord, T> FromIterator<(K, Arc<T>)> for Objects<K, T> {
    fn from_iter<I: IntoIterator<Item = (K, Arc<T>)>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<BTreeMap<_, _>>())
    }
}

impl<K: Ord + Borrow<Q>, Q: Ord + ?Sized, T> Index<&Q> for Objects<K, T> {
    type Output = Arc<T>;

    /// The object of `key`; panics when there is none, like `BTreeMap`'s.
    fn index(&self, key: &Q) -> &Arc<T> {
        self.get(key).expect("no object with this key")
    }
}

impl<'a, K: Ord, T> IntoIterator for &'a Objects<K, T> {
    type Item = (&'a K, &'a Arc<T>);
    type IntoIter = Iter<'a, K, T>;

    fn into_iter(self) -> Iter<'a, K, T> {
        self.iter()
    }
}

impl<K: Ord, T> Objects<K, T> {
    pub fn len(&self) -> usize {
        self.base.len() + self.added
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&Arc<T>>
    where
        K: Borrow<Q>,
    {
        self.overlay.get(key).or_else(|| self.base.get(key))
    }

    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.overlay.contains_key(key) || self.base.contains_key(key)
    }

    /// Adds or replaces `key`'s object; returns the one it replaced. Goes into the base when nothing else
    /// shares it (and the overlay is empty), into the overlay otherwise.
    pub fn insert(&mut self, key: K, object: Arc<T>) -> Option<Arc<T>> {
        if self.overlay.is_empty() {
            if let Some(base) = Arc::get_mut(&mut self.base) {
                return base.insert(key, object);
            }
        }
        let below = self.base.get(&key).cloned();
        match self.overlay.insert(key, object) {
            Some(replaced) => Some(replaced),
            None if below.is_none() => {
                self.added += 1;
                None
            }
            None => below,
        }
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Removes `key`'s object (folding the overlay into a base of its own first, when there is one).
    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<Arc<T>>
    where
        K: Borrow<Q> + Clone,
    {
        self.base_mut().remove(key)
    }

    /// Calls `f` on every object, to change it in place (after folding the overlay into a base of its own).
    pub fn update_each(&mut self, f: impl FnMut(&mut Arc<T>))
    where
        K: Clone,
    {
        self.base_mut().values_mut().for_each(f);
    }

    pub fn iter(&self) -> Iter<'_, K, T> {
        self.entries_from(Bound::Unbounded)
    }

    /// The entries from `key` on (`key` included), in key order.
    pub fn iter_from(&self, key: &K) -> Iter<'_, K, T> {
        self.entries_from(Bound::Included(key))
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.iter().map(|(key, _)| key)
    }

    pub fn values(&self) -> impl Iterator<Item = &Arc<T>> {
        self.iter().map(|(_, object)| object)
    }

    fn entries_from(&self, start: Bound<&K>) -> Iter<'_, K, T> {
        let mut overlay = self.overlay.range::<K, _>((start, Bound::Unbounded));
        let pending = overlay.next();
        let segment =
            self.base.range::<K, _>((start, pending.map_or(Bound::Unbounded, |(key, _)| Bound::Excluded(key))));
        Iter { base: &self.base, segment, overlay, pending }
    }

    /// Whether `self` and `other` share their base: then only keys of their overlays can differ.
    pub fn same_base(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.base, &other.base)
    }

    /// The keys of the overlay, in order.
    pub fn overlay_keys(&self) -> impl Iterator<Item = &K> {
        self.overlay.keys()
    }

    /// The base as a map of its own (copied if shared), with the overlay folded in.
    fn base_mut(&mut self) -> &mut BTreeMap<K, Arc<T>>
    where
        K: Clone,
    {
        let base = Arc::make_mut(&mut self.base);
        base.append(&mut self.overlay);
        self.added = 0;
        base
    }
}

/// The entries of an `Objects` in key order: the base's and the overlay's merged, the overlay's winning. The
/// base is read in segments between overlay keys, so merging compares no keys but the overlay's.
pub struct Iter<'a, K, T> {
    base: &'a BTreeMap<K, Arc<T>>,
    /// The base's entries before `pending` (after the overlay entry before it).
    segment: btree_map::Range<'a, K, Arc<T>>,
    /// The overlay's entries after `pending`.
    overlay: btree_map::Range<'a, K, Arc<T>>,
    /// The next overlay entry, due when `segment` ends.
    pending: Option<(&'a K, &'a Arc<T>)>,
}

impl<'a, K: Ord, T> Iterator for Iter<'a, K, T> {
    type Item = (&'a K, &'a Arc<T>);

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(entry) = self.segment.next() {
            return Some(entry);
        }
        let (key, object) = self.pending.take()?;
        self.pending = self.overlay.next();
        let end = self.pending.map_or(Bound::Unbounded, |(next, _)| Bound::Excluded(next));
        // A base entry with `key` itself is replaced: both segments around it exclude it.
        self.segment = self.base.range::<K, _>((Bound::Excluded(key), end));
        Some((key, object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(entries: &[(u32, u32)]) -> Objects<u32, u32> {
        entries.iter().map(|&(k, v)| (k, Arc::new(v))).collect()
    }

    fn flat(objects: &Objects<u32, u32>) -> Vec<(u32, u32)> {
        objects.iter().map(|(k, v)| (*k, **v)).collect()
    }

    #[test]
    fn an_overlay_adds_and_replaces_in_key_order() {
        let base = objects(&[(1, 10), (3, 30), (5, 50)]);
        let mut next = base.clone();
        assert_eq!(next.insert(4, Arc::new(40)), None);
        assert_eq!(next.insert(3, Arc::new(33)).as_deref(), Some(&30));
        assert_eq!(next.insert(0, Arc::new(0)), None);
        assert_eq!(next.insert(4, Arc::new(44)).as_deref(), Some(&40));
        assert!(next.same_base(&base), "the base is shared");
        assert_eq!(flat(&next), [(0, 0), (1, 10), (3, 33), (4, 44), (5, 50)]);
        assert_eq!(next.len(), 5);
        assert_eq!(next.get(&3).map(|v| **v), Some(33));
        assert_eq!(next.overlay_keys().copied().collect::<Vec<_>>(), [0, 3, 4]);
        let from: Vec<u32> = next.iter_from(&2).map(|(k, _)| *k).collect();
        assert_eq!(from, [3, 4, 5]);
        assert_eq!(next.iter_from(&3).map(|(k, _)| *k).collect::<Vec<_>>(), [3, 4, 5]);
        assert_eq!(next.iter_from(&6).count(), 0);
        assert_eq!(flat(&base), [(1, 10), (3, 30), (5, 50)], "the original is untouched");

        assert_eq!(next.remove(&1).as_deref(), Some(&10));
        assert_eq!(flat(&next), [(0, 0), (3, 33), (4, 44), (5, 50)]);
        assert_eq!(next.len(), 4);
        assert!(!next.same_base(&base));
        assert_eq!(flat(&base), [(1, 10), (3, 30), (5, 50)]);
    }

    #[test]
    fn an_unshared_base_takes_inserts_itself() {
        let mut map = objects(&[(1, 1)]);
        map.insert(2, Arc::new(2));
        assert_eq!(map.overlay_keys().count(), 0);
        assert_eq!(flat(&map), [(1, 1), (2, 2)]);
    }
}
