//! The work queue every controller and collector uses, with client-go's `workqueue` semantics
//! (`staging/src/k8s.io/client-go/util/workqueue`: `queue.go`, `delaying_queue.go`,
//! `default_rate_limiters.go`):
//!
//! - **de-duplicating**: a key queued twice is held once; a key re-added while a worker holds
//!   it runs again once that worker is done, never on two workers at once;
//! - **delaying**: `add_after` schedules a key for an instant; a key has one schedule (the
//!   earliest) in one ordered map, so 10,000 Jobs with TTLs of days are 10,000 map entries,
//!   not 10,000 parked timers, and an update of a scheduled key does not fire it twice;
//! - **rate limited**: `add_rate_limited` retries a failed key after a per-key exponential
//!   back-off (5 ms doubling to 1000 s, `DefaultTypedControllerRateLimiter`) and through a token
//!   bucket of 10 retries a second (burst 100). Upstream has one bucket per queue, so a storm of
//!   unresolvable items of one kind slows the retries of every other kind; here the caller
//!   names the bucket (the owner-reference GC uses one per resource), and one name gives
//!   upstream's behaviour.
//!
//! Each queue reports client-go's `workqueue_*` metrics under its name.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::Registry;

const BASE_DELAY: Duration = Duration::from_millis(5);
const MAX_DELAY: Duration = Duration::from_secs(1000);
/// Retries per second and burst of one bucket (client-go's `BucketRateLimiter`).
const BUCKET_RATE: f64 = 10.0;
const BUCKET_BURST: f64 = 100.0;

/// The label of every `workqueue_*` series: the queue's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabel {
    name: String,
}

fn latency_histogram() -> Histogram {
    // client-go's buckets: 1 µs to 10 s, by tens.
    Histogram::new(exponential_buckets(1e-6, 10.0, 8))
}

/// The `workqueue_*` families of a registry; every queue made with them reports there.
#[derive(Clone)]
pub struct QueueMetrics {
    depth: Family<QueueLabel, Gauge>,
    adds: Family<QueueLabel, Counter>,
    retries: Family<QueueLabel, Counter>,
    queue_duration: Family<QueueLabel, Histogram, fn() -> Histogram>,
    work_duration: Family<QueueLabel, Histogram, fn() -> Histogram>,
}

impl QueueMetrics {
    /// Registers the families under client-go's names ([`Registry::queues`] does, once).
    pub(crate) fn register(registry: &Registry) -> Self {
        let m = Self {
            depth: Family::default(),
            adds: Family::default(),
            retries: Family::default(),
            queue_duration: Family::new_with_constructor(latency_histogram),
            work_duration: Family::new_with_constructor(latency_histogram),
        };
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            m.depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            m.adds.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            m.retries.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            m.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            m.work_duration.clone(),
        );
        m
    }
}

/// One queue's series.
struct Series {
    depth: Gauge,
    adds: Counter,
    retries: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
}

impl Series {
    fn of(metrics: Option<&QueueMetrics>, name: &str) -> Self {
        let label = QueueLabel {
            name: name.to_owned(),
        };
        match metrics {
            Some(m) => Self {
                depth: m.depth.get_or_create(&label).clone(),
                adds: m.adds.get_or_create(&label).clone(),
                retries: m.retries.get_or_create(&label).clone(),
                queue_duration: m.queue_duration.get_or_create(&label).clone(),
                work_duration: m.work_duration.get_or_create(&label).clone(),
            },
            None => Self {
                depth: Gauge::default(),
                adds: Counter::default(),
                retries: Counter::default(),
                queue_duration: latency_histogram(),
                work_duration: latency_histogram(),
            },
        }
    }
}

/// A token bucket (golang `rate.Limiter.Reserve`).
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Bucket {
    /// Takes a token, returning how long to wait for it.
    fn reserve(&mut self, now: Instant) -> Duration {
        let elapsed = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * BUCKET_RATE).min(BUCKET_BURST) - 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / BUCKET_RATE)
        }
    }
}

struct State<K> {
    /// Keys waiting for their instant, ordered by it (the sequence number breaks ties).
    waiting: BTreeMap<(Instant, u64), K>,
    /// When each waiting key is due.
    due: HashMap<K, (Instant, u64)>,
    seq: u64,
    /// Keys ready to be handed out, with the instant they became ready.
    ready: VecDeque<(K, Instant)>,
    queued: HashSet<K>,
    /// Keys held by a worker, with the instant it took them.
    processing: HashMap<K, Instant>,
    /// Keys added while being processed: queued again by `done`.
    dirty: HashSet<K>,
    failures: HashMap<K, u32>,
    buckets: HashMap<String, Bucket>,
    shut_down: bool,
}

/// The queue; clones share it.
pub struct WorkQueue<K> {
    state: Arc<Mutex<State<K>>>,
    wake: Arc<Notify>,
    series: Arc<Series>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
            wake: Arc::clone(&self.wake),
            series: Arc::clone(&self.series),
        }
    }
}

impl<K: Hash + Eq + Clone> WorkQueue<K> {
    /// A queue whose metrics go nowhere (tests, one-shot passes).
    pub fn new() -> Self {
        Self::build(Series::of(None, ""))
    }

    /// A queue reporting its `workqueue_*` series as `name`.
    pub fn with_metrics(name: &str, metrics: &QueueMetrics) -> Self {
        Self::build(Series::of(Some(metrics), name))
    }

    fn build(series: Series) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                waiting: BTreeMap::new(),
                due: HashMap::new(),
                seq: 0,
                ready: VecDeque::new(),
                queued: HashSet::new(),
                processing: HashMap::new(),
                dirty: HashSet::new(),
                failures: HashMap::new(),
                buckets: HashMap::new(),
                shut_down: false,
            })),
            wake: Arc::new(Notify::new()),
            series: Arc::new(series),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `key` now (once; a waiting schedule for it is dropped).
    pub fn add(&self, key: K) {
        let mut q = self.lock();
        if q.shut_down {
            return;
        }
        if let Some(at) = q.due.remove(&key) {
            q.waiting.remove(&at);
        }
        let pushed = self.push_ready(&mut q, key, Instant::now());
        drop(q);
        // Only a key made ready needs a worker: waking one for a key already queued or held
        // (the common case when many events name one key, as a foreground owner's dependents
        // do) makes idle workers spin, and cost the GC's foreground cascade five times its CPU.
        if pushed {
            self.wake.notify_one();
        }
    }

    /// Counted as an add only when the key was not already waiting to run (client-go counts
    /// the same way); `true` when the key joined the ready queue.
    fn push_ready(&self, q: &mut State<K>, key: K, now: Instant) -> bool {
        if q.processing.contains_key(&key) {
            if q.dirty.insert(key) {
                self.series.adds.inc();
            }
            false
        } else if q.queued.insert(key.clone()) {
            q.ready.push_back((key, now));
            self.series.depth.inc();
            self.series.adds.inc();
            true
        } else {
            false
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
        if q.shut_down || q.queued.contains(&key) {
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
        // Workers sleep until the earliest schedule: only a new earliest one needs them.
        let earliest = q.waiting.first_key_value().is_some_and(|(s, _)| *s == slot);
        drop(q);
        if earliest {
            self.wake.notify_one();
        }
    }

    /// Queues a failed `key` again after its back-off: the longer of its per-key exponential
    /// delay and the wait for a token of `bucket`.
    pub fn add_rate_limited(&self, key: K, bucket: &str) {
        let now = Instant::now();
        let delay = {
            let mut q = self.lock();
            let failures = q.failures.entry(key.clone()).or_insert(0);
            let exp = BASE_DELAY
                .checked_mul(1u32.checked_shl(*failures).unwrap_or(u32::MAX))
                .unwrap_or(MAX_DELAY)
                .min(MAX_DELAY);
            *failures = failures.saturating_add(1);
            let bucket = q.buckets.entry(bucket.to_owned()).or_insert(Bucket {
                tokens: BUCKET_BURST,
                last: now,
            });
            exp.max(bucket.reserve(now))
        };
        self.series.retries.inc();
        self.add_after(key, delay);
    }

    /// Clears the back-off of `key` (it succeeded).
    pub fn forget(&self, key: &K) {
        self.lock().failures.remove(key);
    }

    /// How many times `key` was retried since it last succeeded.
    pub fn requeues(&self, key: &K) -> u32 {
        self.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// Moves every key whose instant has come to the ready queue; the next instant, if any.
    fn promote(&self, q: &mut State<K>, now: Instant) -> Option<Instant> {
        while let Some((&(at, seq), _)) = q.waiting.first_key_value() {
            if at > now {
                return Some(at);
            }
            let key = q.waiting.remove(&(at, seq)).expect("first key");
            q.due.remove(&key);
            self.push_ready(q, key, now);
        }
        None
    }

    /// Takes the next ready key, waiting for one; `None` once the queue is shut down. The key
    /// is held (not handed to another worker) until [`WorkQueue::done`].
    pub async fn get(&self) -> Option<K> {
        loop {
            // Registered before the state is read, so that a wake-up between the read and the
            // wait (an add, a shutdown) is not lost.
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let next = {
                let mut q = self.lock();
                let now = Instant::now();
                let next = self.promote(&mut q, now);
                if let Some((key, since)) = q.ready.pop_front() {
                    q.queued.remove(&key);
                    q.processing.insert(key.clone(), now);
                    self.series.depth.dec();
                    self.series
                        .queue_duration
                        .observe(now.duration_since(since).as_secs_f64());
                    let more = !q.ready.is_empty();
                    drop(q);
                    if more {
                        self.wake.notify_one();
                    }
                    return Some(key);
                }
                if q.shut_down {
                    return None;
                }
                next
            };
            match next {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = notified => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Releases a key taken by [`WorkQueue::get`]; if it was added meanwhile, it is queued again.
    pub fn done(&self, key: &K) {
        let mut q = self.lock();
        if let Some(started) = q.processing.remove(key) {
            self.series
                .work_duration
                .observe(started.elapsed().as_secs_f64());
        }
        if q.dirty.remove(key) && !q.shut_down && q.queued.insert(key.clone()) {
            q.ready.push_back((key.clone(), Instant::now()));
            self.series.depth.inc();
            drop(q);
            self.wake.notify_one();
        }
    }

    /// Takes every key that is due now without waiting, for a periodic pass that handles what
    /// came due since the last one (PodGC's quarantine of missing nodes). The keys are not
    /// held: no [`WorkQueue::done`] follows.
    pub fn drain_due(&self) -> Vec<K> {
        let mut q = self.lock();
        let now = Instant::now();
        self.promote(&mut q, now);
        let mut out = Vec::with_capacity(q.ready.len());
        while let Some((key, since)) = q.ready.pop_front() {
            q.queued.remove(&key);
            self.series.depth.dec();
            self.series
                .queue_duration
                .observe(now.duration_since(since).as_secs_f64());
            out.push(key);
        }
        out
    }

    /// Whether `key` is queued or scheduled (not counting a worker holding it).
    pub fn contains(&self, key: &K) -> bool {
        let q = self.lock();
        q.queued.contains(key) || q.due.contains_key(key)
    }

    /// Keys ready now (client-go `Len`), scheduled keys that came due included.
    pub fn len(&self) -> usize {
        let mut q = self.lock();
        self.promote(&mut q, Instant::now());
        q.ready.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys ready or being processed: zero means idle (keys scheduled for later, such as
    /// retries backing off, do not count).
    pub fn pending(&self) -> usize {
        let mut q = self.lock();
        self.promote(&mut q, Instant::now());
        q.ready.len() + q.processing.len()
    }

    /// Stops the queue: no more adds; `get` drains what is ready, then returns `None`.
    pub fn shut_down(&self) {
        self.lock().shut_down = true;
        self.wake.notify_waiters();
        self.wake.notify_one();
    }
}

impl<K: Hash + Eq + Clone> Default for WorkQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_key_queued_twice_is_handed_out_once() {
        let q = WorkQueue::new();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(q.get().await, Some("b"));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn deduplicates_and_requeues_items_added_while_processing() {
        let q: WorkQueue<u32> = WorkQueue::new();
        q.add(1);
        q.add(1);
        q.add(2);
        assert_eq!(q.len(), 2);
        let a = q.get().await.unwrap();
        assert_eq!(a, 1);
        q.add(1);
        assert_eq!(q.len(), 1, "held while processing");
        q.done(&1);
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await, Some(2));
        assert_eq!(q.get().await, Some(1));
        q.shut_down();
        assert_eq!(q.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_items_come_back_after_backoff() {
        let q: WorkQueue<u32> = WorkQueue::new();
        q.add_rate_limited(7, "pods");
        assert_eq!(q.len(), 0);
        tokio::time::sleep(Duration::from_millis(6)).await;
        tokio::task::yield_now().await;
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn budgets_pace_one_key_only() {
        let mut b = Bucket {
            tokens: 1.0,
            last: Instant::now(),
        };
        let now = b.last;
        assert_eq!(b.reserve(now), Duration::ZERO);
        assert!(b.reserve(now) > Duration::ZERO);
    }

    #[tokio::test]
    async fn a_key_added_while_processing_runs_again_after_done() {
        let q = WorkQueue::new();
        q.add(1);
        assert_eq!(q.get().await, Some(1));
        q.add(1);
        assert_eq!(q.len(), 0, "not handed to a second worker while held");
        q.done(&1);
        assert_eq!(q.get().await, Some(1));
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_keeps_the_earliest_schedule() {
        let q = WorkQueue::new();
        let start = Instant::now();
        q.add_after("k", Duration::from_secs(10));
        q.add_after("k", Duration::from_secs(3));
        q.add_after("k", Duration::from_secs(20));
        assert!(q.contains(&"k"));
        assert_eq!(q.get().await, Some("k"));
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        q.done(&"k");
        assert_eq!(q.pending(), 0, "the later schedules were dropped");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_worker_wakes_for_an_earlier_schedule() {
        let q = WorkQueue::new();
        q.add_after("late", Duration::from_secs(10));
        let worker = {
            let q = q.clone();
            tokio::spawn(async move { (q.get().await, Instant::now()) })
        };
        tokio::task::yield_now().await;
        let start = Instant::now();
        q.add_after("soon", Duration::from_secs(1));
        let (key, at) = worker.await.unwrap();
        assert_eq!(key, Some("soon"));
        assert_eq!(at - start, Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_exponentially_until_forgotten() {
        let q = WorkQueue::new();
        let mut waits = Vec::new();
        for _ in 0..4 {
            let start = Instant::now();
            q.add_rate_limited("k", "bucket");
            assert_eq!(q.get().await, Some("k"));
            waits.push(start.elapsed());
            q.done(&"k");
        }
        let ms = |n| Duration::from_millis(n);
        assert_eq!(waits, [ms(5), ms(10), ms(20), ms(40)]);
        assert_eq!(q.requeues(&"k"), 4);
        q.forget(&"k");
        let start = Instant::now();
        q.add_rate_limited("k", "bucket");
        q.get().await;
        assert_eq!(start.elapsed(), ms(5));
    }

    #[test]
    fn the_bucket_paces_retries_past_its_burst() {
        let now = Instant::now();
        let mut b = Bucket {
            tokens: BUCKET_BURST,
            last: now,
        };
        for _ in 0..100 {
            assert_eq!(b.reserve(now), Duration::ZERO);
        }
        assert_eq!(b.reserve(now), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn drain_due_takes_what_came_due_without_waiting() {
        let q = WorkQueue::new();
        q.add_after(1, Duration::from_secs(1));
        q.add_after(2, Duration::from_secs(5));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(q.drain_due(), vec![1]);
        assert!(!q.contains(&1));
        assert!(q.contains(&2));
        q.add_after(1, Duration::from_secs(1));
        assert!(q.contains(&1), "a drained key can be scheduled again");
    }

    #[tokio::test]
    async fn shut_down_wakes_every_waiting_worker() {
        let q: WorkQueue<u8> = WorkQueue::new();
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { q.get().await })
            })
            .collect();
        tokio::task::yield_now().await;
        q.shut_down();
        for w in workers {
            assert_eq!(w.await.unwrap(), None);
        }
    }

    #[tokio::test]
    async fn shut_down_ends_get_once_drained() {
        let q = WorkQueue::new();
        q.add(7);
        q.shut_down();
        q.add(8);
        assert_eq!(q.get().await, Some(7));
        assert_eq!(q.get().await, None);
    }

    #[tokio::test]
    async fn metrics_count_adds_retries_and_depth_by_queue_name() {
        let registry = Registry::default();
        let q = WorkQueue::with_metrics("podgc", &registry.queues());
        q.add("a");
        q.add("b");
        q.add_rate_limited("c", "x");
        assert_eq!(q.get().await, Some("a"));
        q.done(&"a");
        let text = registry.encode(crate::metrics::Format::Prometheus);
        assert!(
            text.contains("workqueue_depth{name=\"podgc\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("workqueue_adds_total{name=\"podgc\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("workqueue_retries_total{name=\"podgc\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("workqueue_work_duration_seconds_count{name=\"podgc\"} 1\n"),
            "{text}"
        );
    }
}
