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

use crate::Store;
use crate::history::Key;
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

/// A bounded, revision-ordered window of events: the watch log of committed events, and the
/// store's history of applied ones ([`crate::history`]).
pub(crate) struct EventLog {
    events: VecDeque<Arc<Event>>,
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
            start: floor,
            dropped: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// The oldest revision a watch of `gr` can resume from, minus one: every event of `gr`
    /// newer than it is retained.
    pub fn floor_of(&self, gr: &GroupResource) -> u64 {
        self.dropped
            .get(gr)
            .copied()
            .unwrap_or(self.start)
            .max(self.start)
    }

    pub fn append(&mut self, events: impl IntoIterator<Item = Arc<Event>>) {
        for e in events {
            self.push(e);
        }
    }

    /// Appends one event; returns the oldest one if it had to leave to make room.
    pub fn push(&mut self, e: Arc<Event>) -> Option<Arc<Event>> {
        let old = if self.events.len() == self.capacity {
            self.events.pop_front()
        } else {
            None
        };
        if let Some(old) = &old {
            // No allocation once a resource has been seen.
            match self.dropped.get_mut(&old.gr) {
                Some(rv) => *rv = old.rv,
                None => {
                    self.dropped.insert(old.gr.clone(), old.rv);
                }
            }
        }
        self.events.push_back(e);
        old
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

/// How many objects of a watch's initial state are read at a time.
const INITIAL_PAGE: usize = 64;

/// A cursor over the event log. A watch started without a revision first hands out the state at
/// its starting revision as ADDED events, read a page at a time from the store's objects and
/// history (see [`crate::history`]): a watcher holds at most a page of it, never a copy.
pub struct Watcher {
    pub(crate) log: Arc<Mutex<EventLog>>,
    /// Moves when a change to the watched resource commits.
    pub(crate) committed: notify::Receiver<u64>,
    pub(crate) filter: WatchFilter,
    pub(crate) cursor: u64,
    pub(crate) pending: VecDeque<WatchEvent>,
    /// The initial state still to hand out, if any.
    pub(crate) initial: Option<InitialState>,
    /// Set when the history the initial state is read from has gone: the watch is over (the
    /// client must re-list), however often it is asked again.
    pub(crate) gone: Option<u64>,
}

/// Where a watcher is in its initial state (the objects matching at its starting revision).
pub(crate) struct InitialState {
    pub store: Store,
    /// The key of the last object read; `None` before the first page.
    pub after: Option<Key>,
    /// How many objects remain, counted when the watch started.
    pub left: usize,
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

    /// Events ready to hand out without waiting: those queued plus what remains of the initial
    /// state of a watch started without a revision.
    pub fn buffered(&self) -> usize {
        self.pending.len() + self.initial.as_ref().map_or(0, |i| i.left)
    }

    /// The next matching event, waiting for one if needed.
    pub async fn next(&mut self) -> WatchEvent {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return e;
            }
            if let Some(expired) = self.fill() {
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
            && let Some(expired) = self.fill()
        {
            return Some(expired);
        }
        self.pending.pop_front()
    }

    /// Queues what comes next: a page of the initial state while it lasts, then the committed
    /// tail of the log. Returns the 410 of a watch that fell behind.
    fn fill(&mut self) -> Option<WatchEvent> {
        if let Some(oldest) = self.gone {
            return Some(WatchEvent::Expired {
                requested: self.cursor,
                oldest,
            });
        }
        let Some(initial) = &mut self.initial else {
            // Called with nothing queued: an idle watch keeps no room for a page or a burst.
            if self.pending.capacity() > 8 {
                self.pending = VecDeque::new();
            }
            self.committed.borrow_and_update();
            return self.scan();
        };
        let page = initial.store.state_page(
            &self.filter,
            self.cursor,
            initial.after.as_ref(),
            INITIAL_PAGE,
        );
        match page {
            Ok(page) => {
                initial.left = initial.left.saturating_sub(page.len());
                match page.last() {
                    Some(o) if page.len() == INITIAL_PAGE => {
                        initial.after = Some((o.namespace.clone(), o.name.clone()));
                    }
                    _ => self.initial = None,
                }
                self.pending.extend(
                    page.into_iter()
                        .map(|o| WatchEvent::Event(EventType::Added, o)),
                );
                None
            }
            Err(floor) => {
                self.initial = None;
                self.gone = Some(floor + 1);
                self.fill()
            }
        }
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

    /// A store whose watch log and history keep `capacity` changes.
    async fn store_with_log(capacity: usize) -> Store {
        Store::open_with(Options {
            watch_log: capacity,
            ..Options::default()
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn a_quiet_resource_does_not_expire_while_others_are_busy() {
        let store = store_with_log(4).await;
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

    #[tokio::test]
    async fn the_initial_state_is_read_a_page_at_a_time_as_it_was_at_the_start() {
        let store = Store::in_memory().await.unwrap();
        create(&store, "namespaces", "ns").await;
        let info = store
            .catalog()
            .get("", "v1", "configmaps")
            .cloned()
            .unwrap();
        for i in 0..150 {
            create(&store, "configmaps", &format!("c{i:03}")).await;
        }
        let gr = GroupResource::new("", "configmaps");
        let start = store.revision();
        let mut w = store.watch(WatchFilter::new(gr), None);
        assert_eq!(w.buffered(), 150);
        // The first event reads one page, not the whole state.
        let Some(WatchEvent::Event(EventType::Added, first)) = w.try_next() else {
            panic!("expected the first ADDED");
        };
        assert_eq!(first.name, "c000");
        assert!(w.pending.len() < INITIAL_PAGE, "{}", w.pending.len());
        assert_eq!(w.buffered(), 149);
        // Changes made while the initial state is handed out come after it, as events.
        store
            .delete(&info, "ns", "c100", &kgc_meta::DeleteOptions::default())
            .await
            .unwrap();
        create(&store, "configmaps", "c050a").await;
        let mut initial = vec![first];
        for _ in 0..149 {
            match w.try_next() {
                Some(WatchEvent::Event(EventType::Added, o)) => initial.push(o),
                other => panic!("expected ADDED, got {other:?}"),
            }
        }
        let names: Vec<String> = initial.iter().map(|o| o.name.clone()).collect();
        let want: Vec<String> = (0..150).map(|i| format!("c{i:03}")).collect();
        assert_eq!(names, want);
        assert!(initial.iter().all(|o| o.resource_version <= start));
        assert_eq!(w.buffered(), 0);
        assert!(
            matches!(w.try_next(), Some(WatchEvent::Event(EventType::Deleted, o)) if o.name == "c100")
        );
        assert!(
            matches!(w.try_next(), Some(WatchEvent::Event(EventType::Added, o)) if o.name == "c050a")
        );
    }

    #[tokio::test]
    async fn an_initial_state_whose_history_is_gone_expires_the_watch() {
        let store = store_with_log(4).await;
        create(&store, "namespaces", "ns").await;
        for i in 0..100 {
            create(&store, "configmaps", &format!("c{i:03}")).await;
        }
        let mut w = store.watch(WatchFilter::new(GroupResource::new("", "configmaps")), None);
        assert!(matches!(
            w.try_next(),
            Some(WatchEvent::Event(EventType::Added, _))
        ));
        for i in 0..10 {
            create(&store, "configmaps", &format!("d{i}")).await;
        }
        // What is queued is handed out; then the watch is over for good.
        for _ in 1..INITIAL_PAGE {
            assert!(matches!(
                w.try_next(),
                Some(WatchEvent::Event(EventType::Added, _))
            ));
        }
        for _ in 0..2 {
            assert!(matches!(w.try_next(), Some(WatchEvent::Expired { .. })));
        }
    }
}
