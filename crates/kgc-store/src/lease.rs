//! Objects that expire: the store's stand-in for an etcd lease.
//!
//! kube-apiserver stores Events with a lease of `--event-ttl` attached at each write
//! (kubernetes/kubernetes `pkg/registry/core/event/storage/storage.go`, its `TTLFunc`), so an
//! Event goes away a TTL after its last write, and etcd's lease revocation is a deletion
//! that watchers see as DELETED. Here a resource given a TTL in [`crate::Options::ttl`]
//! carries an expiry taken at each write: memory keeps the keys ordered by expiry, and SQLite
//! keeps such objects in their own table indexed by expiry (see [`crate::backend::sqlite`]).
//!
//! So nothing scans everything: a start reads only the rows that have not expired, and
//! [`Store::expire`] removes what is due in bounded batches: from memory through the ordinary
//! commit path (the watch sees DELETED, as with etcd), and from disk the rows that expired
//! while the server was down, which no one had loaded.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kgc_meta::GroupResource;
use tokio::sync::oneshot;

use crate::backend::{Op, Unit};
use crate::watch::EventType;
use crate::{Change, Inner, Result, State, Store, stamp};

/// The most objects one expiry step removes from memory, or rows from disk: bounds the write
/// lock's hold and the commit's size, so writers keep their latency while a flood expires.
const BATCH: usize = 2_000;

/// Where the commit thread says a unit was committed.
type Acknowledged = oneshot::Receiver<Result<Vec<crate::backend::Landed>>>;

/// How often due leases are looked for.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

type Key = (GroupResource, String, String);

/// The leases of the objects in memory, ordered by expiry (Unix milliseconds).
#[derive(Default)]
pub(crate) struct Leases {
    pub(crate) ttl: HashMap<GroupResource, Duration>,
    by_expiry: BTreeSet<(i64, Key)>,
    expiry: HashMap<Key, i64>,
    /// Rows on disk expired before the start and were not loaded: they are purged in
    /// batches until none is left (then nothing is purged: the rows of loaded objects go
    /// with their deletion).
    pub backlog: bool,
}

impl Leases {
    pub fn new(ttl: HashMap<GroupResource, Duration>) -> Self {
        Self {
            ttl,
            ..Self::default()
        }
    }

    /// The TTL of `gr`'s objects, if they expire.
    pub fn ttl(&self, gr: &GroupResource) -> Option<Duration> {
        self.ttl.get(gr).copied()
    }

    /// When an object of `gr` written at `now` (Unix milliseconds) expires.
    pub fn expiry_at(&self, gr: &GroupResource, now: i64) -> Option<i64> {
        self.ttl(gr)
            .map(|ttl| now.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)))
    }

    /// Sets (or moves) an object's expiry.
    pub fn grant(&mut self, gr: &GroupResource, ns: &str, name: &str, expires: i64) {
        let key = (gr.clone(), ns.to_owned(), name.to_owned());
        if let Some(old) = self.expiry.insert(key.clone(), expires) {
            self.by_expiry.remove(&(old, key.clone()));
        }
        self.by_expiry.insert((expires, key));
    }

    /// Forgets an object's lease (it was deleted); says whether it had one.
    pub fn revoke(&mut self, gr: &GroupResource, ns: &str, name: &str) -> bool {
        if self.expiry.is_empty() {
            return false;
        }
        let key = (gr.clone(), ns.to_owned(), name.to_owned());
        match self.expiry.remove(&key) {
            Some(old) => self.by_expiry.remove(&(old, key)),
            None => false,
        }
    }

    /// Up to `limit` keys whose lease ended at or before `now`, earliest first; their leases
    /// are forgotten.
    fn take_due(&mut self, now: i64, limit: usize) -> Vec<Key> {
        let mut due = Vec::new();
        while due.len() < limit {
            match self.by_expiry.first() {
                Some((at, _)) if *at <= now => {}
                _ => break,
            }
            if let Some((_, key)) = self.by_expiry.pop_first() {
                self.expiry.remove(&key);
                due.push(key);
            }
        }
        due
    }
}

/// Unix milliseconds of the store's clock.
/// When an object was last written as far as it tells (Unix milliseconds): the latest of its
/// creation, its managed fields' times and an Event's own times (`lastTimestamp`, `eventTime`,
/// `series.lastObservedTime`, which every repeat moves). The etcd backend keeps no expiry, so a
/// start gives a loaded object of a resource with a TTL the expiry of its last write, as etcd's
/// lease would have run meanwhile, rather than a whole TTL from the start.
pub(crate) fn last_written(obj: &serde_json::Value) -> Option<i64> {
    let meta = &obj["metadata"];
    let managed = meta["managedFields"].as_array().into_iter().flatten();
    [
        &meta["creationTimestamp"],
        &obj["lastTimestamp"],
        &obj["eventTime"],
        &obj["series"]["lastObservedTime"],
    ]
    .into_iter()
    .chain(managed.map(|m| &m["time"]))
    .filter_map(|t| t.as_str()?.parse::<kgc_meta::time::Timestamp>().ok())
    .map(|t| t.as_millisecond())
    .max()
}

pub(crate) fn now_ms(store: &Inner) -> i64 {
    store.clock.now().as_millisecond()
}

impl Store {
    /// Removes what has expired by the store's clock: up to a batch of objects from memory (a
    /// DELETED watch event each, as etcd's lease revocation gives), and up to a batch of rows
    /// that expired on disk without ever being loaded. Returns how many of each went, so that
    /// a caller knows whether more are due.
    pub async fn expire(&self) -> Result<(usize, usize)> {
        let now = now_ms(&self.inner);
        let (pending, removed, purge) = {
            let mut st = self.write_lock()?;
            let changes = self.due_deletions(&mut st, now)?;
            let removed = changes.len();
            let pending = self.commit(&mut st, changes)?;
            let purge = match st.leases.backlog && self.inner.durable {
                true => Some(self.purge_expired_rows(&st, now)?),
                false => None,
            };
            (pending, removed, purge)
        };
        pending.wait().await?;
        let mut purged = 0;
        if let Some((count, done)) = purge {
            done.await.unwrap_or(Err(crate::Error::Closed))?;
            purged = count.load(Ordering::Relaxed);
            if purged < BATCH {
                self.inner.lock_state().leases.backlog = false;
            }
        }
        Ok((removed, purged))
    }

    /// The deletions of the objects in memory whose lease ended, under the write lock.
    fn due_deletions(&self, st: &mut State, now: i64) -> Result<Vec<Change>> {
        let mut changes = Vec::new();
        for (gr, ns, name) in st.leases.take_due(now, BATCH) {
            let Some(stored) = st.get(&gr, &ns, &name).cloned() else {
                continue;
            };
            let rv = st.next_rv();
            let mut value = stored.value();
            changes.push(Change {
                gr,
                kind: EventType::Deleted,
                object: stamp(&mut value, rv)?,
                prev: Some(stored),
            });
        }
        Ok(changes)
    }

    /// Queues the deletion of up to a batch of expired rows, under the write lock (as every
    /// unit is queued, so that a failed commit sees the whole queue).
    fn purge_expired_rows(&self, st: &State, now: i64) -> Result<(Arc<AtomicUsize>, Acknowledged)> {
        let deleted = Arc::new(AtomicUsize::new(0));
        let (done, rx) = oneshot::channel();
        let unit = Unit {
            rv: st.rv,
            ops: vec![Op::PurgeExpired {
                before: now,
                limit: BATCH,
                deleted: Arc::clone(&deleted),
            }],
            events: Vec::new(),
            fence: None,
            done,
        };
        let committer = self
            .inner
            .committer
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match committer.as_ref().map(|c| c.submit(unit)) {
            Some(Ok(())) => Ok((deleted, rx)),
            _ => Err(crate::Error::Closed),
        }
    }

    /// Starts the task that expires objects while the store lives: each interval, batches
    /// until nothing more is due. It stops with the store.
    pub(crate) fn start_expiry(&self) {
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let start = tokio::time::Instant::now() + SWEEP_INTERVAL;
            let mut tick = tokio::time::interval_at(start, SWEEP_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                let store = Store { inner };
                loop {
                    match store.expire().await {
                        Ok((removed, purged)) if removed == BATCH || purged == BATCH => {}
                        Ok(_) => break,
                        // Read-only or closed: the next tick tries again (or finds it gone).
                        Err(e) => {
                            tracing::debug!(error = %e, "expiring objects");
                            break;
                        }
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use kgc_meta::time::SignedDuration;
    use serde_json::json;

    use crate::watch::{EventType, WatchEvent, WatchFilter};
    use crate::{GroupResource, Options, Store};

    /// A loaded Event's last write is its latest time, whichever field holds it.
    #[test]
    fn an_objects_last_write_is_its_latest_time() {
        let at = |s: &str| {
            s.parse::<kgc_meta::time::Timestamp>()
                .unwrap()
                .as_millisecond()
        };
        let event = json!({
            "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z",
                         "managedFields": [{"time": "2026-01-01T00:05:00Z"}]},
            "lastTimestamp": "2026-01-01T00:10:00Z",
            "eventTime": "2026-01-01T00:01:00.000000Z",
        });
        assert_eq!(
            super::last_written(&event),
            Some(at("2026-01-01T00:10:00Z"))
        );
        let series = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "series": {"count": 2, "lastObservedTime": "2026-01-01T01:00:00.500000Z"}});
        assert_eq!(
            super::last_written(&series),
            Some(at("2026-01-01T01:00:00.5Z"))
        );
        assert_eq!(super::last_written(&json!({"metadata": {}})), None);
    }

    fn events() -> GroupResource {
        GroupResource::new("", "events")
    }

    async fn open(path: &std::path::Path, offset_secs: i64) -> Store {
        Store::open_with(Options {
            path: Some(path.to_owned()),
            ttl: HashMap::from([(events(), Duration::from_secs(60))]),
            clock: kgc_meta::time::Clock::with_offset(SignedDuration::from_secs(offset_secs)),
            ..Options::default()
        })
        .await
        .unwrap()
    }

    async fn event(store: &Store, name: &str) {
        let info = store.catalog().get("", "v1", "events").unwrap().clone();
        let body = json!({"metadata": {"name": name}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "R", "message": "m", "source": {"component": "c"}, "type": "Normal"});
        store.create(&info, "default", body, false).await.unwrap();
    }

    fn rows(path: &std::path::Path) -> i64 {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row("SELECT count(*) FROM leased_objects", [], |r| r.get(0))
            .unwrap()
    }

    #[tokio::test]
    async fn expired_objects_are_deleted_and_never_loaded_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kgc.db");
        let store = open(&path, 0).await;
        event(&store, "old").await;
        store.close();
        // Two minutes on, a start does not load it, and an expiry step removes its row.
        let store = open(&path, 120).await;
        assert!(store.get(&events(), "default", "old").is_none());
        event(&store, "new").await;
        store.expire().await.unwrap();
        assert_eq!(rows(&path), 1);
        store.close();
        // "new" was written two minutes later: alive at +119 s, gone at +200 s.
        let store = open(&path, 119).await;
        store.expire().await.unwrap();
        assert!(store.get(&events(), "default", "new").is_some());
        store.close();
        let store = open(&path, 200).await;
        assert!(store.get(&events(), "default", "new").is_none());
        store.expire().await.unwrap();
        assert_eq!(rows(&path), 0);
        store.close();
    }

    #[tokio::test]
    async fn an_expiry_in_memory_is_a_watched_deletion() {
        let store = Store::open_with(Options {
            ttl: HashMap::from([(events(), Duration::from_millis(1))]),
            ..Options::default()
        })
        .await
        .unwrap();
        event(&store, "e").await;
        let mut watcher = store.watch(WatchFilter::new(events()), Some(store.revision()));
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(store.expire().await.unwrap(), (1, 0));
        assert!(store.get(&events(), "default", "e").is_none());
        match watcher.next().await {
            WatchEvent::Event(EventType::Deleted, o) => assert_eq!(o.name, "e"),
            other => panic!("expected DELETED e, got {other:?}"),
        }
    }
}
