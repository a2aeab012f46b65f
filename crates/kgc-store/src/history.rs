//! The recent history of every object: what a read at an older revision needs to see the store
//! as it was then.
//!
//! kube-apiserver serves `resourceVersionMatch=Exact` and every continued page of a list at the
//! revision they name, from etcd's MVCC history (`kubernetes/apiserver pkg/storage/etcd3/store.go`
//! `GetList`, `clientv3.WithRev`) or from the watch cache's snapshots, and answers `410 Expired`
//! once compaction has removed that revision. The store keeps no snapshots. It keeps the changes
//! the watch log keeps (each with the object before and after), indexed by object and revision,
//! and rebuilds "the state at revision R" from the live objects a page at a time: an object
//! unchanged since R is its live version; one changed since is the `prev` of its first change
//! after R (absent if that change created it). The same reading streams the initial state of a
//! watch, so a watch started from `resourceVersion=0` shares the store's objects instead of
//! copying them.
//!
//! The history is recorded when a change is applied to memory, under the write lock, not when it
//! commits: a read of the live objects sees applied changes, so the history that undoes them must
//! too. A change undone after a failed commit (`Store::roll_back`) may stay: its `prev` is the
//! state memory was put back to, so every read still rebuilds what memory holds. It is bounded like the watch log (same capacity, oldest dropped first) and, like it, knows
//! per resource how far back it is complete, so a quiet resource stays readable at old revisions
//! while others churn.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

use hashbrown::hash_table::Entry;
use hashbrown::{DefaultHashBuilder, HashTable};
use kgc_meta::GroupResource;

use crate::StoredObject;
use crate::objects::{Objects, hash, object_key};
use crate::watch::{Event, EventLog, EventType};

/// An object's key: namespace ("" when cluster-scoped) and name.
pub(crate) type Key = (String, String);

/// The retained changes, in revision order and per object.
pub(crate) struct History {
    log: EventLog,
    changes: HashMap<GroupResource, Changes>,
}

/// One resource's retained changes, per object. Recording a change is a hash lookup: a read at
/// an earlier revision walks the live objects in key order and asks the history only about
/// those changed since, and finds the objects deleted since, which the live objects no longer
/// hold, by going through the retained changes when it is made (see [`History::visit_at`]).
/// (Kept as one ordered set of every change, each commit paid two B-tree searches through the
/// events' keys; kept as an ordered set of the deleted objects' keys, each deletion still paid a
/// B-tree insertion and a removal, two key copies and their frees: `gc_bench`'s background
/// cascade spent 12% of its samples there, against 7ab9301, which had no history.)
#[derive(Default)]
struct Changes {
    /// Per object with retained changes, those changes in revision order (never empty); the
    /// object's key is its first change's.
    by_object: HashTable<Vec<Arc<Event>>>,
    hasher: DefaultHashBuilder,
    /// The revision of the newest change (0 if none was ever recorded).
    latest: u64,
}

impl History {
    /// A history that starts at revision `start` (nothing before it is known) and keeps at most
    /// `capacity` changes.
    pub fn new(start: u64, capacity: usize) -> Self {
        Self {
            log: EventLog::new(start, capacity),
            changes: HashMap::new(),
        }
    }

    /// Remembers an applied change, forgetting the oldest one when full.
    pub fn record(&mut self, e: &Arc<Event>) {
        if let Some(old) = self.log.push(Arc::clone(e))
            && let Some(c) = self.changes.get_mut(&old.gr)
        {
            c.forget(&old);
        }
        let changes = match self.changes.get_mut(&e.gr) {
            Some(c) => c,
            None => self.changes.entry(e.gr.clone()).or_default(),
        };
        changes.latest = e.rv;
        changes.remember(e);
    }

    /// The oldest revision of `gr` that can still be read: every change to `gr` after it is
    /// retained.
    pub fn floor_of(&self, gr: &GroupResource) -> u64 {
        self.log.floor_of(gr)
    }

    /// Visits the objects of `gr` as they were at revision `rv`, in key order, starting at
    /// `from`, until `visit` breaks. `live` is the resource's current objects; `rv` must be at
    /// least [`History::floor_of`] and at most the current revision.
    pub fn visit_at(
        &self,
        live: Option<&Objects>,
        gr: &GroupResource,
        rv: u64,
        from: Bound<&Key>,
        mut visit: impl FnMut(&Arc<StoredObject>) -> ControlFlow<()>,
    ) {
        let mut live = live.into_iter().flat_map(|l| l.range(from)).peekable();
        // Nothing of this resource changed after `rv`: the live objects are its state then.
        let Some(changes) = self.changes.get(gr).filter(|c| c.latest > rv) else {
            for o in live {
                if visit(o).is_break() {
                    return;
                }
            }
            return;
        };
        // The live objects merged with those that existed at `rv` and were deleted since, in
        // key order; a key in both (deleted, then created again) is read once, through its
        // live object. Those deleted are found in the retained changes at each read, into a heap
        // that orders only as many as the read takes: reads at a past revision are rare (an
        // exact list, a continued page while the resource changes), deletions are not.
        let mut deleted: BinaryHeap<Reverse<ByKey<'_>>> = changes
            .by_object
            .iter()
            .filter(|versions| versions.iter().any(|v| v.kind == EventType::Deleted))
            .filter_map(|versions| state_at(versions, rv))
            .filter(|o| {
                let (ns, name) = object_key(o);
                match from {
                    Bound::Included(k) => (ns, name) >= (k.0.as_str(), k.1.as_str()),
                    Bound::Excluded(k) => (ns, name) > (k.0.as_str(), k.1.as_str()),
                    Bound::Unbounded => true,
                }
            })
            .map(|o| Reverse(ByKey(o)))
            .collect();
        loop {
            let live_first = match (live.peek(), deleted.peek()) {
                (None, None) => return,
                (Some(o), Some(Reverse(d))) => object_key(o) <= object_key(d.0),
                (Some(_), None) => true,
                (None, Some(_)) => false,
            };
            let then = if live_first {
                let Some(o) = live.next() else { return };
                if deleted
                    .peek()
                    .is_some_and(|Reverse(d)| object_key(d.0) == object_key(o))
                {
                    deleted.pop();
                }
                // Unchanged since `rv` (or since before the history began), or as it was then.
                match changes.of(&o.namespace, &o.name) {
                    Some(versions) if o.resource_version > rv => state_at(versions, rv),
                    _ => Some(o),
                }
            } else {
                let Some(Reverse(d)) = deleted.pop() else {
                    return;
                };
                Some(d.0)
            };
            if let Some(o) = then
                && visit(o).is_break()
            {
                return;
            }
        }
    }
}

/// An object as it was at a past revision, ordered by its key.
struct ByKey<'a>(&'a Arc<StoredObject>);

impl PartialEq for ByKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        object_key(self.0) == object_key(other.0)
    }
}

impl Eq for ByKey<'_> {}

impl PartialOrd for ByKey<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByKey<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        object_key(self.0).cmp(&object_key(other.0))
    }
}

impl Changes {
    /// The retained changes of the object `ns`/`name`, oldest first.
    fn of(&self, ns: &str, name: &str) -> Option<&[Arc<Event>]> {
        self.by_object
            .find(hash(&self.hasher, ns, name), is(ns, name))
            .map(Vec::as_slice)
    }

    /// Adds the newest change.
    fn remember(&mut self, e: &Arc<Event>) {
        let (ns, name) = object_key(&e.object);
        let hasher = &self.hasher;
        let entry = self
            .by_object
            .entry(hash(hasher, ns, name), is(ns, name), |v| {
                let (ns, name) = object_key(&v[0].object);
                hash(hasher, ns, name)
            });
        match entry {
            Entry::Occupied(mut found) => found.get_mut().push(Arc::clone(e)),
            Entry::Vacant(absent) => {
                absent.insert(vec![Arc::clone(e)]);
            }
        }
    }

    /// Drops the oldest change, `old`, which has left the log.
    fn forget(&mut self, old: &Arc<Event>) {
        let (ns, name) = object_key(&old.object);
        let Ok(mut found) = self
            .by_object
            .find_entry(hash(&self.hasher, ns, name), is(ns, name))
        else {
            return;
        };
        let versions = found.get_mut();
        if let Some(i) = versions.iter().position(|v| Arc::ptr_eq(v, old)) {
            versions.remove(i);
        }
        if versions.is_empty() {
            found.remove();
        }
    }
}

/// The state at revision `rv` of an object whose retained changes are `versions`, when it has
/// changed since: the state before its first change after `rv` (absent if that change created
/// it). An object without a change after `rv` and not live was deleted by then (its deletion is
/// its newest change, so it leaves the history last).
fn state_at(versions: &[Arc<Event>], rv: u64) -> Option<&Arc<StoredObject>> {
    let first = versions.partition_point(|v| v.rv <= rv);
    versions.get(first)?.prev.as_ref()
}

/// Whether an object's changes are those of `ns`/`name`.
fn is<'a>(ns: &'a str, name: &'a str) -> impl Fn(&Vec<Arc<Event>>) -> bool + 'a {
    move |v| object_key(&v[0].object) == (ns, name)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use kgc_meta::{DeleteOptions, ResourceInfo};
    use serde_json::json;

    use crate::{Continue, ListOptions, Options, ReadFrom, Store, StoredObject};

    fn configmaps(store: &Store) -> Arc<ResourceInfo> {
        store
            .catalog()
            .get("", "v1", "configmaps")
            .cloned()
            .unwrap()
    }

    /// Creates an object with nothing but a name.
    async fn create(
        store: &Store,
        info: &ResourceInfo,
        ns: &str,
        name: impl Into<String>,
    ) -> Arc<StoredObject> {
        let name: String = name.into();
        store
            .create(info, ns, json!({"metadata": {"name": name}}), false)
            .await
            .unwrap()
    }

    async fn store_with_history(capacity: usize) -> Store {
        let store = Store::open_with(Options {
            watch_log: capacity,
            ..Options::default()
        })
        .await
        .unwrap();
        let ns = store
            .catalog()
            .get("", "v1", "namespaces")
            .cloned()
            .unwrap();
        for name in ["ns", "other"] {
            create(&store, &ns, "", name).await;
        }
        store
    }

    /// `(name, raw)` of every configmap of `ns` listed with `read`, page by page of `limit`.
    fn list_all(store: &Store, read: ReadFrom, limit: Option<usize>) -> BTreeMap<String, String> {
        let gr = configmaps(store).group_resource();
        let mut out = BTreeMap::new();
        let mut opts = ListOptions {
            namespace: Some("ns".into()),
            limit,
            read,
            ..ListOptions::default()
        };
        loop {
            let page = store.list(&gr, &opts).unwrap();
            for o in &page.items {
                assert!(out.insert(o.name.clone(), o.raw.to_string()).is_none());
            }
            match page.continue_token {
                Some(t) => {
                    opts.read = ReadFrom::Continue(Continue::decode(&t, Some("ns")).unwrap())
                }
                None => return out,
            }
        }
    }

    #[tokio::test]
    async fn every_retained_revision_reads_back_as_it_was() {
        let store = store_with_history(10_000).await;
        let info = configmaps(&store);
        // The model: the state after each write.
        let mut state: BTreeMap<String, String> = BTreeMap::new();
        let mut states = vec![(store.revision(), state.clone())];
        let mut seed = 7u64;
        for step in 0..300 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let name = format!("cm-{:02}", (seed >> 33) % 40);
            let o = match (seed >> 20) % 3 {
                _ if !state.contains_key(&name) => Some(
                    store
                        .create(
                            &info,
                            "ns",
                            json!({"metadata": {"name": name}, "data": {"step": step.to_string()}}),
                            false,
                        )
                        .await
                        .unwrap(),
                ),
                0 => {
                    store
                        .delete(&info, "ns", &name, &DeleteOptions::default())
                        .await
                        .unwrap();
                    None
                }
                _ => Some(
                    store
                        .update(&info, "ns", &name, None, false, |mut v| {
                            v["data"]["step"] = json!(step.to_string());
                            Ok(v)
                        })
                        .await
                        .unwrap()
                        .object()
                        .clone(),
                ),
            };
            match o {
                Some(o) => state.insert(name, o.raw.to_string()),
                None => state.remove(&name),
            };
            // Writes to another namespace interleave and must not show.
            store
                .create(
                    &info,
                    "other",
                    json!({"metadata": {"name": format!("x-{step}")}}),
                    false,
                )
                .await
                .unwrap();
            states.push((store.revision(), state.clone()));
        }
        for (rv, want) in &states {
            assert_eq!(
                &list_all(&store, ReadFrom::Exact(*rv), None),
                want,
                "at {rv}"
            );
            assert_eq!(
                &list_all(&store, ReadFrom::Exact(*rv), Some(3)),
                want,
                "at {rv}, paged"
            );
        }
        assert_eq!(list_all(&store, ReadFrom::Latest, Some(7)), state);
    }

    #[tokio::test]
    async fn continued_pages_are_read_at_the_first_pages_revision() {
        let store = store_with_history(1_000).await;
        let info = configmaps(&store);
        let gr = info.group_resource();
        for name in ["a", "b", "c", "d", "e"] {
            create(&store, &info, "ns", name).await;
        }
        let mut opts = ListOptions {
            namespace: Some("ns".into()),
            limit: Some(2),
            ..ListOptions::default()
        };
        let first = store.list(&gr, &opts).unwrap();
        // Changes behind and ahead of the page boundary, after the first page was read.
        store
            .delete(&info, "ns", "a", &DeleteOptions::default())
            .await
            .unwrap();
        store
            .delete(&info, "ns", "d", &DeleteOptions::default())
            .await
            .unwrap();
        create(&store, &info, "ns", "bb").await;
        store
            .update(&info, "ns", "c", None, false, |mut v| {
                v["data"] = json!({"changed": "yes"});
                Ok(v)
            })
            .await
            .unwrap();
        let mut names: Vec<String> = first.items.iter().map(|o| o.name.clone()).collect();
        let mut token = first.continue_token;
        while let Some(t) = token {
            opts.read = ReadFrom::Continue(Continue::decode(&t, Some("ns")).unwrap());
            let page = store.list(&gr, &opts).unwrap();
            assert_eq!(page.resource_version, first.resource_version);
            for o in &page.items {
                assert!(o.resource_version <= first.resource_version, "{}", o.raw);
            }
            names.extend(page.items.iter().map(|o| o.name.clone()));
            token = page.continue_token;
        }
        assert_eq!(names, ["a", "b", "c", "d", "e"]);
    }

    #[tokio::test]
    async fn pages_without_a_selector_count_the_items_after_them() {
        let store = store_with_history(1_000).await;
        let info = configmaps(&store);
        let gr = info.group_resource();
        for name in ["a", "b", "c", "d", "e"] {
            create(&store, &info, "ns", name).await;
        }
        let mut opts = ListOptions {
            namespace: Some("ns".into()),
            limit: Some(2),
            ..ListOptions::default()
        };
        let mut counts = Vec::new();
        loop {
            let page = store.list(&gr, &opts).unwrap();
            counts.push(page.remaining_item_count);
            let Some(t) = page.continue_token else { break };
            opts.read = ReadFrom::Continue(Continue::decode(&t, Some("ns")).unwrap());
        }
        assert_eq!(counts, [Some(3), Some(1), None]);
        // Through a selector the count is not known without matching everything: none.
        let selected = ListOptions {
            namespace: Some("ns".into()),
            limit: Some(2),
            labels: kgc_meta::LabelSelector::parse("!missing").unwrap(),
            ..ListOptions::default()
        };
        let page = store.list(&gr, &selected).unwrap();
        assert!(page.continue_token.is_some());
        assert_eq!(page.remaining_item_count, None);
    }

    #[tokio::test]
    async fn a_revision_whose_history_is_gone_is_expired() {
        let store = store_with_history(4).await;
        let info = configmaps(&store);
        let gr = info.group_resource();
        let secrets = store.catalog().get("", "v1", "secrets").cloned().unwrap();
        create(&store, &info, "ns", "a").await;
        create(&store, &info, "ns", "b").await;
        let at = store.revision();
        let page = store
            .list(
                &gr,
                &ListOptions {
                    limit: Some(1),
                    ..ListOptions::default()
                },
            )
            .unwrap();
        let token = Continue::decode(&page.continue_token.unwrap(), None).unwrap();
        // Another resource filling the history leaves configmaps readable at `at`.
        for i in 0..10 {
            create(&store, &secrets, "ns", format!("s{i}")).await;
        }
        let exact = ListOptions {
            read: ReadFrom::Exact(at),
            ..ListOptions::default()
        };
        assert_eq!(store.list(&gr, &exact).unwrap().items.len(), 2);
        // A configmap change leaving the history ends it.
        for i in 0..5 {
            create(&store, &info, "ns", format!("c{i}")).await;
        }
        let e = store.list(&gr, &exact).unwrap_err().status();
        assert_eq!(
            (e.code, e.message.as_str()),
            (410, "The resourceVersion for the provided list is too old.")
        );
        let continued = ListOptions {
            read: ReadFrom::Continue(token),
            ..ListOptions::default()
        };
        let e = store.list(&gr, &continued).unwrap_err().status();
        assert_eq!(e.code, 410);
        assert!(e.message.starts_with("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response"), "{}", e.message);
    }

    #[tokio::test]
    async fn a_revision_not_reached_is_too_large_after_waiting_for_it() {
        let store = store_with_history(100).await;
        let info = configmaps(&store);
        let gr = info.group_resource();
        let now = store.revision();
        let ahead = ListOptions {
            read: ReadFrom::NotOlderThan(now + 1),
            ..ListOptions::default()
        };
        let e = store.list(&gr, &ahead).unwrap_err().status();
        assert_eq!(e.code, 504);
        assert_eq!(
            e.message,
            format!(
                "Timeout: Too large resource version: {}, current: {now}",
                now + 1
            )
        );
        assert_eq!(e.retry_after_seconds, Some(1));
        assert_eq!(e.causes[0].kind, "ResourceVersionTooLarge");
        // A write arriving while a read waits for it lets the read through.
        let (waited, _) = tokio::join!(store.wait_for_revision(now + 1), async {
            tokio::task::yield_now().await;
            create(&store, &info, "ns", "late").await
        });
        waited.unwrap();
        assert_eq!(store.list(&gr, &ahead).unwrap().items.len(), 1);
    }
}
