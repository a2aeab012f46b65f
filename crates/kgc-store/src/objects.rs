//! One resource's live objects, held two ways: in key order, for LIST (pages cut in
//! (namespace, name) order and continue tokens that name a key), and hashed, for the point
//! reads every write and every GET makes.
//!
//! A B-tree search compares the probe with a dozen or more keys on the way down, each a string
//! comparison behind a pointer, and a `(String, String)` probe had to be allocated for it; with
//! 100,000 objects that was most of a GET's cost. The hashed index costs one hash of the two
//! strings and, usually, one comparison, and holds only the shared object (its key is the
//! object's own namespace and name), so it adds a pointer and a control byte per object. The
//! upstream watch cache keeps the same pair: a `threadSafeMap` keyed by object for point reads
//! beside the ordered list it serves (`kubernetes/apiserver pkg/storage/cacher/store.go`).

use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::ops::Bound;
use std::sync::Arc;

use hashbrown::hash_table::Entry;
use hashbrown::{DefaultHashBuilder, HashTable};

use crate::StoredObject;
use crate::history::Key;

/// One resource's live objects by key: ordered and hashed.
#[derive(Default)]
pub(crate) struct Objects {
    ordered: BTreeMap<Key, Arc<StoredObject>>,
    by_key: HashTable<Arc<StoredObject>>,
    /// foldhash (hashbrown's default), seeded per process: std's SipHash cost a point read more
    /// than its comparisons did, and every write and every collector's lookup makes one.
    hasher: DefaultHashBuilder,
}

impl Objects {
    /// The object `namespace`/`name`, if live.
    pub fn get(&self, namespace: &str, name: &str) -> Option<&Arc<StoredObject>> {
        self.by_key
            .find(hash(&self.hasher, namespace, name), is(namespace, name))
    }

    /// Inserts or replaces the object at `key` (its own namespace and name).
    pub fn insert(&mut self, key: Key, object: Arc<StoredObject>) {
        debug_assert_eq!((key.0.as_str(), key.1.as_str()), object_key(&object));
        let hasher = &self.hasher;
        let entry = self
            .by_key
            .entry(hash(hasher, &key.0, &key.1), is(&key.0, &key.1), |o| {
                hash(hasher, &o.namespace, &o.name)
            });
        match entry {
            Entry::Occupied(mut e) => *e.get_mut() = Arc::clone(&object),
            Entry::Vacant(e) => {
                e.insert(Arc::clone(&object));
            }
        }
        self.ordered.insert(key, object);
    }

    /// Removes the object at `key`.
    pub fn remove(&mut self, key: &Key) {
        if let Ok(found) = self
            .by_key
            .find_entry(hash(&self.hasher, &key.0, &key.1), is(&key.0, &key.1))
        {
            found.remove();
        }
        self.ordered.remove(key);
    }

    /// The objects in key order, starting at `from`.
    pub fn range(&self, from: Bound<&Key>) -> impl Iterator<Item = &Arc<StoredObject>> {
        self.ordered
            .range::<Key, _>((from, Bound::Unbounded))
            .map(|(_, o)| o)
    }

    /// The objects in key order.
    pub fn values(&self) -> impl Iterator<Item = &Arc<StoredObject>> {
        self.ordered.values()
    }

    pub fn len(&self) -> usize {
        self.ordered.len()
    }
}

/// An object's key, borrowed.
pub(crate) fn object_key(o: &StoredObject) -> (&str, &str) {
    (&o.namespace, &o.name)
}

/// The hash of a key: the same for the borrowed pair as for the object's own fields.
pub(crate) fn hash(hasher: &DefaultHashBuilder, namespace: &str, name: &str) -> u64 {
    hasher.hash_one((namespace, name))
}

/// Whether an entry is the object `namespace`/`name`.
fn is<'a>(namespace: &'a str, name: &'a str) -> impl Fn(&Arc<StoredObject>) -> bool + 'a {
    move |o| o.namespace == namespace && o.name == name
}

#[cfg(test)]
mod tests {
    use std::ops::Bound;

    use serde_json::json;

    use super::Objects;
    use crate::StoredObject;

    fn object(ns: &str, name: &str, rv: u64) -> std::sync::Arc<StoredObject> {
        StoredObject::from_value(&json!({"metadata": {
            "namespace": ns, "name": name, "resourceVersion": rv.to_string()}}))
        .unwrap()
    }

    fn key(ns: &str, name: &str) -> (String, String) {
        (ns.to_owned(), name.to_owned())
    }

    #[test]
    fn point_reads_and_ordered_reads_agree_through_inserts_replacements_and_removals() {
        let mut objects = Objects::default();
        for (i, (ns, name)) in [("b", "x"), ("a", "y"), ("a", "x"), ("", "z")]
            .into_iter()
            .enumerate()
        {
            objects.insert(key(ns, name), object(ns, name, i as u64 + 1));
        }
        objects.insert(key("a", "y"), object("a", "y", 9));
        objects.remove(&key("b", "x"));
        objects.remove(&key("b", "missing"));
        assert_eq!(objects.len(), 3);
        assert_eq!(objects.get("a", "y").unwrap().resource_version, 9);
        assert!(objects.get("b", "x").is_none());
        // A namespace and a name are not one string: ("a", "bc") is not ("ab", "c").
        objects.insert(key("a", "bc"), object("a", "bc", 10));
        assert!(objects.get("ab", "c").is_none());
        let order: Vec<(&str, &str)> = objects
            .range(Bound::Excluded(&key("", "z")))
            .map(|o| (o.namespace.as_str(), o.name.as_str()))
            .collect();
        assert_eq!(order, [("a", "bc"), ("a", "x"), ("a", "y")]);
        assert_eq!(objects.values().count(), 4);
    }
}
