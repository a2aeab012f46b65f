//! Watch: the committed event log and the per-client cursor over it.
//!
//! Every committed change is appended to one bounded, revision-ordered log shared by all
//! watchers. A watcher is only a cursor and a filter: it wakes when a change to its resource
//! commits (a commit to another resource wakes no one watching this one, so a collector watching
//! every resource costs nothing per unrelated write), reads the new tail of the log, and keeps
//! what matches. Nothing is copied per watcher, a slow watcher slows no one else, and resuming
//! from a `resourceVersion` is a binary search. A watcher gets `410 Expired` only when an event
//! of its own resource newer than its cursor has left the log (the upstream watch cache is per
//! resource too), exactly what clients expect when they must re-list; a quiet resource's watcher
//! never expires because others are busy.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use kgc_meta::{FieldSelector, GroupResource, LabelSelector};
use serde_json::Value;
use tokio::sync::watch as notify;

use crate::object::{Meta, StoredObject, field_value};

/// `ADDED`, `MODIFIED` or `DELETED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed change. For `DELETED`, `object` is the last state carrying the deletion's
/// revision.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub kind: EventType,
    pub gr: GroupResource,
    pub object: Arc<StoredObject>,
    /// The state before the change, for selector transitions.
    pub prev: Option<Arc<StoredObject>>,
}

/// The retained tail of committed events.
pub(crate) struct EventLog {
    events: VecDeque<Arc<Event>>,
    /// Every event with `rv > floor` is in `events`.
    floor: u64,
    /// The floor the log started from: nothing before it was ever retained.
    start: u64,
    /// Per resource, the revision of its newest event that has left the log.
    dropped: HashMap<GroupResource, u64>,
    capacity: usize,
}

impl EventLog {
    pub fn new(floor: u64, capacity: usize) -> Self {
        Self {
            events: VecDeque::new(),
            floor,
            start: floor,
            dropped: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// The oldest revision a watch of `gr` can resume from, minus one: every event of `gr`
    /// newer than it is retained.
    fn floor_of(&self, gr: &GroupResource) -> u64 {
        self.dropped
            .get(gr)
            .copied()
            .unwrap_or(self.start)
            .max(self.start)
    }

    pub fn append(&mut self, events: impl IntoIterator<Item = Arc<Event>>) {
        for e in events {
            if self.events.len() == self.capacity
                && let Some(old) = self.events.pop_front()
            {
                self.floor = old.rv;
                // No allocation once a resource has been seen.
                match self.dropped.get_mut(&old.gr) {
                    Some(rv) => *rv = old.rv,
                    None => {
                        self.dropped.insert(old.gr.clone(), old.rv);
                    }
                }
            }
            self.events.push_back(e);
        }
    }
}

/// What a watch wants to see.
#[derive(Debug, Clone)]
pub struct WatchFilter {
    pub gr: GroupResource,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl WatchFilter {
    pub fn new(gr: GroupResource) -> Self {
        Self {
            gr,
            namespace: None,
            labels: LabelSelector::default(),
            fields: FieldSelector::default(),
        }
    }

    /// Whether an object is in the watched set.
    pub fn matches(&self, obj: &StoredObject) -> bool {
        if let Some(ns) = &self.namespace
            && &obj.namespace != ns
        {
            return false;
        }
        if !self.labels.matches(&obj.labels) {
            return false;
        }
        if self.fields.is_empty() {
            return true;
        }
        let parsed: std::cell::OnceCell<Value> = std::cell::OnceCell::new();
        self.fields.matches(|field| match field {
            "metadata.name" => Some(obj.name.clone()),
            "metadata.namespace" => Some(obj.namespace.clone()),
            other => field_value(parsed.get_or_init(|| obj.value()), other),
        })
    }
}

/// One item a watcher yields.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    Event(EventType, Arc<StoredObject>),
    /// The cursor fell behind the retained log: the client must re-list.
    Expired {
        requested: u64,
        oldest: u64,
    },
    /// The store is shutting down.
    Closed,
}

/// A cursor over the event log, with the snapshot a watch without `resourceVersion` starts from.
pub struct Watcher {
    pub(crate) log: Arc<Mutex<EventLog>>,
    /// Moves when a change to the watched resource commits.
    pub(crate) committed: notify::Receiver<u64>,
    pub(crate) filter: WatchFilter,
    pub(crate) cursor: u64,
    pub(crate) pending: VecDeque<WatchEvent>,
}

impl Watcher {
    /// The revision this watcher has delivered everything up to (its bookmark).
    pub fn resource_version(&self) -> u64 {
        self.cursor
    }

    /// What this watcher follows.
    pub fn filter(&self) -> &WatchFilter {
        &self.filter
    }

    /// Events already queued (the initial snapshot of a watch started without a revision).
    pub fn buffered(&self) -> usize {
        self.pending.len()
    }

    /// The next matching event, waiting for one if needed.
    pub async fn next(&mut self) -> WatchEvent {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return e;
            }
            self.committed.borrow_and_update();
            if let Some(expired) = self.scan() {
                return expired;
            }
            if !self.pending.is_empty() {
                continue;
            }
            if self.committed.changed().await.is_err() {
                return WatchEvent::Closed;
            }
        }
    }

    /// The next matching event if one is already committed, without waiting.
    pub fn try_next(&mut self) -> Option<WatchEvent> {
        if self.pending.is_empty()
            && let Some(expired) = self.scan()
        {
            return Some(expired);
        }
        self.pending.pop_front()
    }

    /// Moves the cursor over the committed tail, queueing matches.
    fn scan(&mut self) -> Option<WatchEvent> {
        let log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        let floor = log.floor_of(&self.filter.gr);
        if self.cursor < floor {
            return Some(WatchEvent::Expired {
                requested: self.cursor,
                oldest: floor + 1,
            });
        }
        let start = log.events.partition_point(|e| e.rv <= self.cursor);
        for e in log.events.range(start..) {
            self.cursor = e.rv;
            if e.gr != self.filter.gr {
                continue;
            }
            if let Some(out) = self.translate(e) {
                self.pending.push_back(out);
            }
        }
        None
    }

    /// Applies the filter to a change, turning "entered the selection" into ADDED and "left it"
    /// into DELETED, as the upstream watch cache does (`cacheWatcher.convertToWatchEvent`).
    fn translate(&self, e: &Event) -> Option<WatchEvent> {
        let now = self.filter.matches(&e.object);
        match e.kind {
            EventType::Added | EventType::Deleted => {
                now.then(|| WatchEvent::Event(e.kind, Arc::clone(&e.object)))
            }
            EventType::Modified => {
                let before = e.prev.as_ref().is_some_and(|p| self.filter.matches(p));
                match (before, now) {
                    (true, true) => Some(WatchEvent::Event(
                        EventType::Modified,
                        Arc::clone(&e.object),
                    )),
                    (false, true) => {
                        Some(WatchEvent::Event(EventType::Added, Arc::clone(&e.object)))
                    }
                    (true, false) => {
                        // The previous content, stamped with this event's revision.
                        let prev = e.prev.as_ref()?;
                        let mut v = prev.value();
                        v.set("resourceVersion", e.rv.to_string());
                        StoredObject::from_value(&v)
                            .ok()
                            .map(|o| WatchEvent::Event(EventType::Deleted, o))
                    }
                    (false, false) => None,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{Options, Store};

    async fn create(store: &Store, resource: &str, name: &str) -> u64 {
        let info = store
            .catalog()
            .get("", "v1", resource)
            .cloned()
            .expect("built-in resource");
        store
            .create(&info, "ns", json!({"metadata": {"name": name}}), false)
            .await
            .expect("create")
            .resource_version
    }

    #[tokio::test]
    async fn a_quiet_resource_does_not_expire_while_others_are_busy() {
        let store = Store::open_with(Options {
            watch_log: 4,
            ..Options::default()
        })
        .await
        .unwrap();
        create(&store, "namespaces", "ns").await;
        let from = create(&store, "configmaps", "c0").await;
        let mut configmaps = store.watch(
            WatchFilter::new(GroupResource::new("", "configmaps")),
            Some(from),
        );
        for i in 0..10 {
            create(&store, "secrets", &format!("s{i}")).await;
        }
        // The secrets woke nothing and pushed the log past the cursor, yet no configmap was lost.
        assert!(configmaps.try_next().is_none());
        create(&store, "configmaps", "c1").await;
        match configmaps.next().await {
            WatchEvent::Event(EventType::Added, o) => assert_eq!(o.name, "c1"),
            other => panic!("expected ADDED c1, got {other:?}"),
        }
        // Resuming from before a configmap that has left the log is still 410.
        for i in 2..10 {
            create(&store, "configmaps", &format!("c{i}")).await;
        }
        let mut old = store.watch(
            WatchFilter::new(GroupResource::new("", "configmaps")),
            Some(from),
        );
        assert!(
            matches!(old.next().await, WatchEvent::Expired { requested, .. } if requested == from)
        );
    }
}
