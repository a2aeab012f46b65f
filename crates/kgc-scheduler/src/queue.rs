//! The scheduling queue (kubernetes/kubernetes pkg/scheduler/backend/queue/
//! scheduling_queue.go): pending pods wait in the active queue (a kgc-runtime work queue); a pod
//! that fits nowhere waits among the *unschedulable* ones until a cluster event (a node added or
//! changed, a pod's resources freed, a claim or class changed) moves them all back, each after its
//! back-off (1 s doubling to 10 s: `podInitialBackoffDuration`, `podMaxBackoffDuration`), or until
//! it has waited 5 minutes (`podMaxInUnschedulablePodsDuration`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use kgc_runtime::informer::Key;
use kgc_runtime::queue::WorkQueue;

use crate::pod::Spec;

const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
pub const MAX_UNSCHEDULABLE: Duration = Duration::from_secs(5 * 60);

/// How often the unschedulable pods are looked at for those waiting too long.
pub const FLUSH_PERIOD: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Attempts {
    count: u32,
    last: Option<Instant>,
}

#[derive(Default)]
struct State {
    /// The spec each pending pod was last queued with: a status write (ours) changes nothing.
    specs: HashMap<Key, Arc<Spec>>,
    attempts: HashMap<Key, Attempts>,
    /// Unschedulable pods, with when they were parked.
    unschedulable: HashMap<Key, Instant>,
    /// Cluster events so far: a pod judged unschedulable across one goes back at once.
    moves: u64,
}

#[derive(Clone)]
pub struct SchedulingQueue {
    pub active: WorkQueue<Key>,
    state: Arc<Mutex<State>>,
}

impl SchedulingQueue {
    pub fn new(active: WorkQueue<Key>) -> Self {
        Self {
            active,
            state: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn backoff(attempts: &Attempts, now: Instant) -> Duration {
        let Some(last) = attempts.last else {
            return Duration::ZERO;
        };
        let exp = attempts.count.saturating_sub(1).min(10);
        let full = (INITIAL_BACKOFF * 2u32.pow(exp)).min(MAX_BACKOFF);
        (last + full).saturating_duration_since(now)
    }

    fn requeue(&self, st: &State, key: Key, now: Instant) {
        let wait = st
            .attempts
            .get(&key)
            .map_or(Duration::ZERO, |a| Self::backoff(a, now));
        self.active.add_after(key, wait);
    }

    /// A pending pod seen: queued when new or when its spec changed.
    pub fn pending(&self, key: &Key, spec: &Arc<Spec>) {
        let mut st = self.lock();
        if st.specs.get(key).is_some_and(|s| s == spec) {
            return;
        }
        st.specs.insert(key.clone(), Arc::clone(spec));
        st.unschedulable.remove(key);
        self.requeue(&st, key.clone(), Instant::now());
    }

    /// The pod is no longer pending (bound, deleted, not ours).
    pub fn forget(&self, key: &Key) {
        let mut st = self.lock();
        st.specs.remove(key);
        st.attempts.remove(key);
        st.unschedulable.remove(key);
    }

    /// The number of cluster events so far, taken before an attempt.
    pub fn moves(&self) -> u64 {
        self.lock().moves
    }

    /// The attempt that started at `moves` found no node: parked until a cluster event, or
    /// queued after its back-off if one happened meanwhile.
    pub fn unschedulable(&self, key: &Key, moves: u64) {
        let now = Instant::now();
        let mut st = self.lock();
        let a = st.attempts.entry(key.clone()).or_default();
        a.count += 1;
        a.last = Some(now);
        if st.moves != moves {
            self.requeue(&st, key.clone(), now);
        } else {
            st.unschedulable.insert(key.clone(), now);
        }
    }

    /// The attempt failed on an error (a binding refused): again after the back-off.
    pub fn error(&self, key: &Key) {
        let now = Instant::now();
        let mut st = self.lock();
        let a = st.attempts.entry(key.clone()).or_default();
        a.count += 1;
        a.last = Some(now);
        self.requeue(&st, key.clone(), now);
    }

    /// A cluster event: every unschedulable pod goes back, after what is left of its back-off.
    pub fn move_all(&self) {
        let now = Instant::now();
        let mut st = self.lock();
        st.moves += 1;
        let keys: Vec<Key> = st.unschedulable.drain().map(|(k, _)| k).collect();
        for k in keys {
            self.requeue(&st, k, now);
        }
    }

    /// Moves back the pods unschedulable for longer than [`MAX_UNSCHEDULABLE`].
    pub fn flush_stale(&self) {
        let now = Instant::now();
        let mut st = self.lock();
        let stale: Vec<Key> = st
            .unschedulable
            .iter()
            .filter(|(_, at)| now.duration_since(**at) >= MAX_UNSCHEDULABLE)
            .map(|(k, _)| k.clone())
            .collect();
        for k in stale {
            st.unschedulable.remove(&k);
            self.requeue(&st, k, now);
        }
    }

    pub fn unschedulable_len(&self) -> usize {
        self.lock().unschedulable.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_ten_seconds() {
        let now = Instant::now();
        let a = |count| Attempts {
            count,
            last: Some(now),
        };
        assert_eq!(SchedulingQueue::backoff(&a(1), now), Duration::from_secs(1));
        assert_eq!(SchedulingQueue::backoff(&a(3), now), Duration::from_secs(4));
        assert_eq!(SchedulingQueue::backoff(&a(9), now), MAX_BACKOFF);
        assert_eq!(
            SchedulingQueue::backoff(&Attempts::default(), now),
            Duration::ZERO
        );
    }

    #[tokio::test]
    async fn unschedulable_pods_wait_for_a_cluster_event() {
        let q = SchedulingQueue::new(WorkQueue::new());
        let key: Key = ("ns".into(), "p".into());
        let spec = Arc::new(crate::pod::Spec {
            requests: Default::default(),
            affinity: Default::default(),
            tolerations: vec![],
            claims: vec![],
            never_preempts: false,
            problem: None,
        });
        q.pending(&key, &spec);
        assert_eq!(q.active.get().await, Some(key.clone()));
        q.active.done(&key);
        let moves = q.moves();
        q.unschedulable(&key, moves);
        assert_eq!((q.unschedulable_len(), q.active.len()), (1, 0));
        // The same spec again (our own status write) does not queue it.
        q.pending(&key, &spec);
        assert_eq!(q.unschedulable_len(), 1);
        q.move_all();
        assert_eq!(q.unschedulable_len(), 0);
        assert!(q.active.contains(&key));
    }
}
