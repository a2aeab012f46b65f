//! A delaying work queue with client-go's `workqueue` semantics: a key is queued at most once,
//! a key being processed is not handed to a second worker (a re-add while processing runs it
//! again afterwards), and `add_after` schedules a key for an exact instant rather than polling.
//! The TTL collector requeues each Job exactly at its expiry with it.
//!
//! Not `kgc_gc::queue::WorkQueue`: its `add_after` spawns one sleeping task per call and keeps
//! every schedule, which for 10,000 Jobs with TTLs of days means 10,000 parked tasks and a
//! duplicate firing per Job update; here a key has one schedule (the earliest) in one ordered
//! map, and PodGC can take the keys that are due without waiting ([`DelayQueue::drain_due`]).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

struct Inner<K> {
    /// Keys waiting for their instant, ordered by it (the sequence number breaks ties).
    waiting: BTreeMap<(Instant, u64), K>,
    /// When each waiting key is due.
    due: HashMap<K, (Instant, u64)>,
    seq: u64,
    ready: VecDeque<K>,
    queued: HashSet<K>,
    processing: HashSet<K>,
    /// Keys added while being processed: queued again by `done`.
    dirty: HashSet<K>,
}

/// The queue; cheap to clone (shared).
pub struct DelayQueue<K> {
    inner: Arc<Mutex<Inner<K>>>,
    wake: Arc<Notify>,
}

impl<K> Clone for DelayQueue<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            wake: Arc::clone(&self.wake),
        }
    }
}

impl<K: Hash + Eq + Clone> Default for DelayQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq + Clone> DelayQueue<K> {
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                waiting: BTreeMap::new(),
                due: HashMap::new(),
                seq: 0,
                ready: VecDeque::new(),
                queued: HashSet::new(),
                processing: HashSet::new(),
                dirty: HashSet::new(),
            })),
            wake: Arc::new(Notify::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<K>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `key` now (once; a waiting schedule for it is dropped).
    pub fn add(&self, key: K) {
        let mut q = self.lock();
        if let Some(at) = q.due.remove(&key) {
            q.waiting.remove(&at);
        }
        Self::push_ready(&mut q, key);
        drop(q);
        self.wake.notify_one();
    }

    fn push_ready(q: &mut Inner<K>, key: K) {
        if q.processing.contains(&key) {
            q.dirty.insert(key);
        } else if q.queued.insert(key.clone()) {
            q.ready.push_back(key);
        }
    }

    /// Queues `key` after `delay`; an earlier schedule of the same key wins (client-go
    /// `AddAfter`).
    pub fn add_after(&self, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let at = Instant::now() + delay;
        let mut q = self.lock();
        if q.queued.contains(&key) {
            return;
        }
        if let Some(&(current, seq)) = q.due.get(&key) {
            if current <= at {
                return;
            }
            q.waiting.remove(&(current, seq));
        }
        q.seq += 1;
        let slot = (at, q.seq);
        q.waiting.insert(slot, key.clone());
        q.due.insert(key, slot);
        drop(q);
        self.wake.notify_one();
    }

    /// Moves every key whose instant has come to the ready queue; the next instant, if any.
    fn promote(q: &mut Inner<K>, now: Instant) -> Option<Instant> {
        while let Some((&(at, seq), _)) = q.waiting.first_key_value() {
            if at > now {
                return Some(at);
            }
            if let Some(key) = q.waiting.remove(&(at, seq)) {
                q.due.remove(&key);
                Self::push_ready(q, key);
            }
        }
        None
    }

    /// The next key to process, waiting until one is due. Call [`DelayQueue::done`] after.
    pub async fn next(&self) -> K {
        loop {
            let notified = self.wake.notified();
            let next_at = {
                let mut q = self.lock();
                let next_at = Self::promote(&mut q, Instant::now());
                if let Some(key) = q.ready.pop_front() {
                    q.queued.remove(&key);
                    q.processing.insert(key.clone());
                    if !q.ready.is_empty() {
                        self.wake.notify_one();
                    }
                    return key;
                }
                next_at
            };
            match next_at {
                Some(at) => {
                    tokio::select! {
                        _ = notified => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Marks `key` processed; if it was added meanwhile it is queued again.
    pub fn done(&self, key: &K) {
        let mut q = self.lock();
        q.processing.remove(key);
        if q.dirty.remove(key) {
            Self::push_ready(&mut q, key.clone());
            drop(q);
            self.wake.notify_one();
        }
    }

    /// Keys waiting or ready (not those being processed).
    pub fn len(&self) -> usize {
        let q = self.lock();
        q.ready.len() + q.waiting.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes every key already due without waiting (PodGC's quarantine of missing nodes is
    /// drained this way once per pass).
    pub fn drain_due(&self) -> Vec<K> {
        let mut q = self.lock();
        Self::promote(&mut q, Instant::now());
        let keys: Vec<K> = q.ready.drain(..).collect();
        for k in &keys {
            q.queued.remove(k);
        }
        keys
    }

    /// Whether `key` is waiting or ready.
    pub fn contains(&self, key: &K) -> bool {
        let q = self.lock();
        q.queued.contains(key) || q.due.contains_key(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_key_comes_out_exactly_when_due() {
        let q = DelayQueue::new();
        let start = Instant::now();
        q.add_after("b", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(5));
        assert_eq!(q.next().await, "a");
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        assert_eq!(q.next().await, "b");
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn the_earlier_schedule_wins_and_keys_are_deduplicated() {
        let q = DelayQueue::new();
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(3));
        q.add_after("a", Duration::from_secs(7));
        assert_eq!(q.len(), 1);
        let start = Instant::now();
        assert_eq!(q.next().await, "a");
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        q.add("x");
        q.add("x");
        assert_eq!(q.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_added_while_processing_runs_again_after_done() {
        let q = DelayQueue::new();
        q.add("a");
        assert_eq!(q.next().await, "a");
        q.add("a");
        assert!(q.is_empty(), "not handed out twice at once");
        q.done(&"a");
        assert_eq!(q.next().await, "a");
    }

    #[tokio::test(start_paused = true)]
    async fn drain_due_takes_only_due_keys() {
        let q = DelayQueue::new();
        q.add_after("late", Duration::from_secs(40));
        q.add_after("soon", Duration::from_secs(1));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(q.drain_due(), vec!["soon"]);
        assert!(q.contains(&"late"));
    }
}
