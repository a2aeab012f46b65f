//! Upstream's `ControllerExpectations` (`kubernetes/kubernetes pkg/controller/
//! controller_utils.go`): after a controller creates or deletes pods, its cache lags behind
//! those writes; until the cache has seen them (or five minutes have passed, in case a watch
//! event was lost), it must not count pods again, or it would create or delete twice.
//! [`Writes`] is the same guard for a controller's writes to its own object's status.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Upstream's `ExpectationsTimeout`.
pub const TIMEOUT: Duration = Duration::from_secs(5 * 60);

#[derive(Debug)]
struct Expected {
    adds: i64,
    deletes: i64,
    set: Instant,
}

/// Pending creations and deletions per controller key.
#[derive(Debug, Default)]
pub struct Expectations<K> {
    by_key: Mutex<HashMap<K, Expected>>,
}

impl<K: std::hash::Hash + Eq + Clone> Expectations<K> {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<K, Expected>) -> R) -> R {
        f(&mut self.by_key.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Whether the controller may count again: nothing pending, or the expectations expired,
    /// or none were ever set (upstream `SatisfiedExpectations`).
    pub fn satisfied(&self, key: &K) -> bool {
        self.with(|m| match m.get(key) {
            None => true,
            Some(e) => (e.adds <= 0 && e.deletes <= 0) || e.set.elapsed() > TIMEOUT,
        })
    }

    /// The controller is about to create `adds` and delete `deletes` (upstream `SetExpectations`).
    pub fn expect(&self, key: &K, adds: usize, deletes: usize) {
        self.with(|m| {
            m.insert(
                key.clone(),
                Expected {
                    adds: i64::try_from(adds).unwrap_or(i64::MAX),
                    deletes: i64::try_from(deletes).unwrap_or(i64::MAX),
                    set: Instant::now(),
                },
            )
        });
    }

    /// One expected creation was seen (or will never happen: the create failed).
    pub fn creation_observed(&self, key: &K) {
        self.with(|m| {
            if let Some(e) = m.get_mut(key) {
                e.adds -= 1;
            }
        });
    }

    /// One expected deletion was seen (or will never happen).
    pub fn deletion_observed(&self, key: &K) {
        self.with(|m| {
            if let Some(e) = m.get_mut(key) {
                e.deletes -= 1;
            }
        });
    }

    /// The controller is gone (upstream `DeleteExpectations`).
    pub fn forget(&self, key: &K) {
        self.with(|m| m.remove(key));
    }
}

/// How long a sync waits for its cache to show the controller's own last write: long past
/// any lag of a live watch, short enough that a relist which skipped that version (the object
/// was written again meanwhile) only delays the next sync.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// How many versions delivered while a write is in flight are remembered.
const SEEN_WHILE_WRITING: usize = 16;

#[derive(Debug)]
struct Write {
    /// The version the write produced; `None` while it is in flight.
    version: Option<String>,
    /// Versions the cache delivered while the write was in flight: the watch may deliver the
    /// write's own event before its response arrives.
    seen: Vec<String>,
    set: Instant,
}

/// Per controller key, the controller's last write to its own object until its cache has
/// delivered that version. A controller that counts from its object's status (the Job
/// controller's `succeeded`, `uncountedTerminatedPods`) must not sync against an older
/// status: it would miss pods whose tracking finalizer it already removed and create them
/// again. Upstream's Job controller hides that lag by batching pod-triggered syncs for a
/// second (`syncJobBatchPeriod` in `kubernetes/kubernetes pkg/controller/job/
/// job_controller.go`); waiting for the version itself is exact and costs no second.
#[derive(Debug, Default)]
pub struct Writes<K> {
    by_key: Mutex<HashMap<K, Write>>,
}

impl<K: std::hash::Hash + Eq + Clone> Writes<K> {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<K, Write>) -> R) -> R {
        f(&mut self.by_key.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A write of `key`'s object is about to be sent.
    pub fn writing(&self, key: &K) {
        self.with(|m| {
            m.insert(
                key.clone(),
                Write {
                    version: None,
                    seen: Vec::new(),
                    set: Instant::now(),
                },
            )
        });
    }

    /// The write of an object at version `sent` was answered with `version` (`None`: it
    /// failed). Nothing is awaited after a failure, nor after a write that changed nothing:
    /// the server keeps the version and sends no event (kube-apiserver's `GuaranteedUpdate`
    /// skips an unchanged object).
    pub fn written(&self, key: &K, sent: Option<&str>, version: Option<&str>) {
        self.with(|m| match (version, m.get_mut(key)) {
            (Some(v), Some(w)) if sent != Some(v) && !w.seen.iter().any(|s| s == v) => {
                w.version = Some(v.to_owned());
                w.seen = Vec::new();
                w.set = Instant::now();
            }
            _ => {
                m.remove(key);
            }
        });
    }

    /// The cache delivered `version` of `key`'s object.
    pub fn observed(&self, key: &K, version: &str) {
        self.with(|m| {
            let Some(w) = m.get_mut(key) else { return };
            match &w.version {
                Some(v) if v == version => {
                    m.remove(key);
                }
                Some(_) => {}
                None if w.seen.len() < SEEN_WHILE_WRITING => w.seen.push(version.to_owned()),
                None => {}
            }
        });
    }

    /// How long a sync of `key` should still wait for its cache, if at all.
    pub fn pending(&self, key: &K) -> Option<Duration> {
        self.with(|m| {
            let w = m.get(key)?;
            w.version.as_ref()?;
            let left = WRITE_TIMEOUT.saturating_sub(w.set.elapsed());
            if left.is_zero() {
                m.remove(key);
                return None;
            }
            Some(left)
        })
    }

    /// The object is gone.
    pub fn forget(&self, key: &K) {
        self.with(|m| m.remove(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn satisfied_once_every_write_is_observed() {
        let e = Expectations::default();
        assert!(e.satisfied(&"rs"));
        e.expect(&"rs", 2, 1);
        assert!(!e.satisfied(&"rs"));
        e.creation_observed(&"rs");
        e.creation_observed(&"rs");
        assert!(!e.satisfied(&"rs"));
        e.deletion_observed(&"rs");
        assert!(e.satisfied(&"rs"));
        e.forget(&"rs");
        assert!(e.satisfied(&"rs"));
    }

    #[test]
    fn a_write_is_pending_until_its_version_is_observed() {
        let w = Writes::default();
        assert_eq!(w.pending(&"job"), None);
        w.writing(&"job");
        // In flight: nothing to wait for yet (one sync per key runs at a time).
        assert_eq!(w.pending(&"job"), None);
        w.written(&"job", Some("6"), Some("7"));
        assert!(w.pending(&"job").is_some());
        w.observed(&"job", "6");
        assert!(w.pending(&"job").is_some());
        w.observed(&"job", "7");
        assert_eq!(w.pending(&"job"), None);
    }

    #[test]
    fn nothing_is_awaited_that_has_no_event_to_come() {
        let w = Writes::default();
        w.writing(&"job");
        w.observed(&"job", "9");
        w.written(&"job", Some("8"), Some("9"));
        assert_eq!(w.pending(&"job"), None);
        // A write that changed nothing keeps the version and has no event.
        w.writing(&"job");
        w.written(&"job", Some("9"), Some("9"));
        assert_eq!(w.pending(&"job"), None);
        // A failed write awaits nothing.
        w.writing(&"job");
        w.written(&"job", Some("9"), None);
        assert_eq!(w.pending(&"job"), None);
    }
}
