//! The ResourceQuota admission's charges to one quota, written together: concurrent writes to
//! a namespace under a quota each wait for the quota's write slot, and whoever takes it charges
//! every charge waiting by then, in turn, to one version of the quota and writes it once, as
//! upstream's quota evaluator queues admission attempts per namespace and charges each batch
//! with one update per quota (kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/admission/
//! plugin/resourcequota/controller.go`, `checkQuotas`). Under 16 concurrent creates a quota is
//! written a few times per batch instead of once per create.
//!
//! Each charge is judged again on the version it is written to, so that together they can never
//! exceed the quota: a charge that no longer fits is refused alone, the others go on. On SQLite
//! the write is not waited for on its own ([`kgc_store::Store::update_before_next_write`]): the
//! object written next is acknowledged only once the charge before it is durable.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use kgc_meta::{ResourceInfo, Status};
use kgc_quota::Refusal;
use kgc_quota::resources::{self, ResourceList};
use kgc_store::Store;
use tokio::sync::oneshot;

/// A charge's outcome: what it added to `status.used` (`None`: nothing the quota limits), or
/// why it does not fit; `Err` when the quota could not be written (a 404 once it is gone).
pub(crate) type Outcome = Result<Result<Option<ResourceList>, Refusal>, Status>;

/// The write slots of the quotas being charged, by namespace and name.
#[derive(Default)]
pub(crate) struct Batches {
    quotas: Mutex<HashMap<(String, String), Arc<Slot>>>,
}

/// One quota's waiting charges and the lock whoever writes them holds.
#[derive(Default)]
struct Slot {
    waiting: Mutex<Vec<Waiting>>,
    writing: Arc<tokio::sync::Mutex<()>>,
}

struct Waiting {
    delta: ResourceList,
    done: oneshot::Sender<Outcome>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Batches {
    /// Charges `delta` (a [`kgc_quota::Request::delta`]) to quota `namespace/name`, with
    /// whatever other charges wait for it.
    pub(crate) async fn charge(
        &self,
        store: &Store,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        delta: ResourceList,
    ) -> Outcome {
        let key = (namespace.to_owned(), name.to_owned());
        let slot = Arc::clone(locked(&self.quotas).entry(key.clone()).or_default());
        let (done, mut outcome) = oneshot::channel();
        locked(&slot.waiting).push(Waiting { delta, done });
        let writing = Arc::clone(&slot.writing).lock_owned().await;
        // The writer before may have taken this charge with its batch.
        let result = match outcome.try_recv() {
            Ok(o) => {
                drop(writing);
                o
            }
            Err(_) => {
                let batch = std::mem::take(&mut *locked(&slot.waiting));
                // A task of its own: a request dropped by its client must not drop the
                // batch's write (nor leave the others waiting).
                let (store, info) = (store.clone(), Arc::clone(info));
                let (ns, name) = key.clone();
                tokio::spawn(async move {
                    write(&store, &info, &ns, &name, batch).await;
                    drop(writing);
                });
                outcome
                    .await
                    .unwrap_or_else(|_| Err(Status::internal("a quota charge was dropped")))
            }
        };
        // Forgotten once nobody waits: a slot is cloned only under the map's lock.
        let mut quotas = locked(&self.quotas);
        if Arc::strong_count(&slot) == 2 && locked(&slot.waiting).is_empty() {
            quotas.remove(&key);
        }
        result
    }
}

/// Charges `batch` in turn to the quota's current version, writes it once, and tells each.
async fn write(store: &Store, info: &ResourceInfo, ns: &str, name: &str, batch: Vec<Waiting>) {
    tracing::trace!(
        quota = name,
        namespace = ns,
        charges = batch.len(),
        "charging"
    );
    let mut outcomes = Vec::with_capacity(batch.len());
    let written = store
        .update_before_next_write(info, ns, name, Some("status"), |mut q| {
            // Run again on a fresher version if another replica wrote the quota first.
            outcomes.clear();
            for w in &batch {
                // A request whose client went away is not charged: it will store nothing.
                if w.done.is_closed() {
                    outcomes.push(Ok(None));
                    continue;
                }
                let charged = kgc_quota::charge(&q, &w.delta).map(|used| {
                    used.map(|used| {
                        let before = resources::from_json(&q["status"]["used"]);
                        q["status"]["used"] = resources::to_json(&used);
                        resources::subtract(&used, &before)
                    })
                });
                outcomes.push(charged);
            }
            Ok(q)
        })
        .await;
    match written {
        Ok(_) => {
            for (w, o) in batch.into_iter().zip(outcomes) {
                let _ = w.done.send(Ok(o));
            }
        }
        Err(e) => {
            if !matches!(e, kgc_store::Error::Api(_)) {
                tracing::error!(quota = name, namespace = ns, error = %e, "charging a quota");
            }
            let status = e.status();
            for w in batch {
                let _ = w.done.send(Err(status.clone()));
            }
        }
    }
}
