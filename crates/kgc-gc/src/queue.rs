//! A work queue with client-go's semantics (`workqueue.Typed`): an item queued twice is held
//! once; an item re-added while a worker holds it runs again after that worker is done; failed
//! items come back after a per-item exponential backoff (5 ms doubling to 1000 s, as
//! `DefaultTypedControllerRateLimiter`).
//!
//! Upstream also paces *all* retries of a queue through one 10/s token bucket, so a storm of
//! unresolvable items of one kind slows retries of every other kind. Here each retry key (the
//! item's resource) has its own bucket instead.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

const BASE_DELAY: Duration = Duration::from_millis(5);
const MAX_DELAY: Duration = Duration::from_secs(1000);
/// Retries per second and burst of one retry key.
const BUDGET_RATE: f64 = 10.0;
const BUDGET_BURST: f64 = 100.0;

struct State<T> {
    queue: VecDeque<T>,
    dirty: HashSet<T>,
    processing: HashSet<T>,
    failures: HashMap<T, u32>,
    budgets: HashMap<String, Bucket>,
    shut_down: bool,
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Bucket {
    /// Takes a token, returning how long to wait for it (golang `rate.Limiter.Reserve`).
    fn reserve(&mut self, now: Instant) -> Duration {
        let elapsed = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * BUDGET_RATE).min(BUDGET_BURST) - 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / BUDGET_RATE)
        }
    }
}

/// The queue; clones share it.
pub struct WorkQueue<T> {
    state: Arc<Mutex<State<T>>>,
    notify: Arc<Notify>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
            notify: Arc::clone(&self.notify),
        }
    }
}

impl<T: Eq + Hash + Clone + Send + 'static> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Eq + Hash + Clone + Send + 'static> WorkQueue<T> {
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                failures: HashMap::new(),
                budgets: HashMap::new(),
                shut_down: false,
            })),
            notify: Arc::new(Notify::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues an item unless it is already waiting.
    pub fn add(&self, item: T) {
        let mut st = self.lock();
        if st.shut_down || !st.dirty.insert(item.clone()) {
            return;
        }
        if !st.processing.contains(&item) {
            st.queue.push_back(item);
            drop(st);
            self.notify.notify_one();
        }
    }

    /// Queues an item after `delay`.
    pub fn add_after(&self, item: T, delay: Duration) {
        if delay.is_zero() {
            self.add(item);
            return;
        }
        let q = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            q.add(item);
        });
    }

    /// Queues an item again after its backoff, charged to `budget_key`'s retry budget.
    pub fn add_rate_limited(&self, item: T, budget_key: &str) {
        let delay = {
            let mut st = self.lock();
            let n = st.failures.entry(item.clone()).or_insert(0);
            let backoff = BASE_DELAY
                .checked_mul(1u32.checked_shl((*n).min(31)).unwrap_or(u32::MAX))
                .unwrap_or(MAX_DELAY)
                .min(MAX_DELAY);
            *n = n.saturating_add(1);
            let now = Instant::now();
            let budget = st
                .budgets
                .entry(budget_key.to_owned())
                .or_insert(Bucket {
                    tokens: BUDGET_BURST,
                    last: now,
                })
                .reserve(now);
            backoff.max(budget)
        };
        self.add_after(item, delay);
    }

    /// Clears an item's backoff after it succeeded.
    pub fn forget(&self, item: &T) {
        self.lock().failures.remove(item);
    }

    /// The next item, waiting for one; `None` once the queue is shut down.
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.lock();
                if let Some(item) = st.queue.pop_front() {
                    st.dirty.remove(&item);
                    st.processing.insert(item.clone());
                    if !st.queue.is_empty() {
                        self.notify.notify_one();
                    }
                    return Some(item);
                }
                if st.shut_down {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Marks an item processed; if it was re-added meanwhile, it is queued again.
    pub fn done(&self, item: &T) {
        let mut st = self.lock();
        st.processing.remove(item);
        if st.dirty.contains(item) {
            st.queue.push_back(item.clone());
            drop(st);
            self.notify.notify_one();
        }
    }

    /// Items waiting (not counting those being processed).
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Items waiting or being processed: zero means idle.
    pub fn pending(&self) -> usize {
        let st = self.lock();
        st.queue.len() + st.processing.len()
    }

    pub fn shut_down(&self) {
        self.lock().shut_down = true;
        self.notify.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
