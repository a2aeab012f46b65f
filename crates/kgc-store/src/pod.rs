//! Completing graceful pod deletions.
//!
//! On a real cluster the kubelet stops a deleted pod's containers and then issues the final
//! grace-0 DELETE. `kgc serve` runs no kubelet, so the store stands in for it: when a pod's
//! grace period ends, it deletes the pod (uid precondition, finalizers honoured).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Mutex;

use kgc_meta::{DeleteOptions, GroupResource, Preconditions, Reason};
use tokio::sync::Notify;

use crate::Store;
use crate::object::Meta;

/// A pending end of a grace period.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    at: jiff::Timestamp,
    namespace: String,
    name: String,
    uid: String,
}

/// Grace periods in progress, earliest first.
#[derive(Default)]
pub(crate) struct Terminations {
    due: Mutex<BinaryHeap<Reverse<Due>>>,
    wake: Notify,
}

fn pods() -> GroupResource {
    GroupResource::new("", "pods")
}

impl Terminations {
    pub fn schedule(&self, at: jiff::Timestamp, namespace: &str, name: &str, uid: &str) {
        self.due
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Reverse(Due {
                at,
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                uid: uid.to_owned(),
            }));
        self.wake.notify_one();
    }

    /// After a restart, re-schedules the grace periods that were running.
    pub fn recover(&self, store: &Store) {
        let st = store.inner.lock_state();
        let Some(objects) = st.objects.get(&pods()) else {
            return;
        };
        for o in objects.values().filter(|o| o.deleting) {
            let v = o.value();
            if v.deletion_grace().unwrap_or(0) > 0
                && let Some(at) = v.deletion_timestamp().and_then(|t| t.parse().ok())
            {
                self.schedule(at, &o.namespace, &o.name, &o.uid);
            }
        }
    }

    fn pop_due(&self, now: jiff::Timestamp) -> Result<Due, Option<jiff::Timestamp>> {
        let mut due = self.due.lock().unwrap_or_else(|p| p.into_inner());
        match due.peek() {
            Some(Reverse(d)) if d.at <= now => Ok(due.pop().expect("peeked").0),
            Some(Reverse(d)) => Err(Some(d.at)),
            None => Err(None),
        }
    }
}

impl Store {
    /// Runs until the store closes, deleting each pod whose grace period has ended.
    pub async fn run_pod_terminator(self) {
        let info = self
            .catalog()
            .get("", "v1", "pods")
            .cloned()
            .expect("pods are built in");
        loop {
            let now = self.clock().now();
            match self.inner.pods.pop_due(now) {
                Ok(d) => {
                    let opts = DeleteOptions {
                        grace_period_seconds: Some(0),
                        preconditions: Preconditions {
                            uid: Some(d.uid.clone()),
                            resource_version: None,
                        },
                        ..DeleteOptions::default()
                    };
                    match self.delete(&info, &d.namespace, &d.name, &opts).await {
                        Ok(_) => {}
                        Err(crate::Error::Api(s))
                            if s.is(Reason::NotFound) || s.is(Reason::Conflict) => {}
                        Err(e) => {
                            tracing::warn!(pod = %d.name, namespace = %d.namespace, error = %e, "completing pod deletion failed");
                            match e {
                                crate::Error::Closed => return,
                                // Read-only after a failed commit: try again once it recovers.
                                crate::Error::Failed(_) => {
                                    let later = now
                                        .checked_add(jiff::SignedDuration::from_secs(1))
                                        .unwrap_or(now);
                                    self.inner
                                        .pods
                                        .schedule(later, &d.namespace, &d.name, &d.uid);
                                    tokio::time::sleep(crate::persist::PROBE_INTERVAL).await;
                                }
                                _ => {}
                            }
                        }
                    }
                }
                Err(next) => {
                    let wait = next
                        .map(|at| {
                            let secs = now.duration_until(at).as_secs_f64().max(0.0);
                            std::time::Duration::from_secs_f64(secs.min(3600.0))
                        })
                        .unwrap_or(std::time::Duration::from_secs(3600));
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = self.inner.pods.wake.notified() => {}
                    }
                }
            }
        }
    }
}
