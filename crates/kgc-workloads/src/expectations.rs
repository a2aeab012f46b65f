//! Upstream's `ControllerExpectations` (`kubernetes/kubernetes pkg/controller/
//! controller_utils.go`): after a controller creates or deletes pods, its cache lags behind
//! those writes; until the cache has seen them (or five minutes have passed, in case a watch
//! event was lost), it must not count pods again, or it would create or delete twice.

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
}
