//! The ResourceQuota admission's charges to one quota, written together, as upstream's quota
//! evaluator queues admission attempts per namespace and charges each batch with one update
//! per quota (kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/admission/plugin/
//! resourcequota/controller.go`, `checkQuotas`).
//!
//! On a store of its own (SQLite, memory) a charge is checked against the quota's `status.used`
//! plus the charges not yet written, and added to them, in one step under the store's lock
//! ([`kgc_store::Store::defer`]); the commit thread writes them as one update of the quota in
//! the batch that carries the charged objects, so an object is never acknowledged without its
//! charge, and a quota is written once per commit instead of once per create.
//!
//! On a replica on etcd, where another replica may write the quota meanwhile, concurrent writes
//! to a namespace under a quota each wait for the quota's write slot, and whoever takes it
//! charges every charge waiting by then, in turn, to one version of the quota and writes it
//! once, guarded by its revision. Each charge is judged again on the version it is written to,
//! so that together they can never exceed the quota: a charge that no longer fits is refused
//! alone, the others go on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use kgc_meta::quantity::Quantity;
use kgc_meta::{ResourceInfo, Status};
use kgc_quota::Refusal;
use kgc_quota::resources::{self, ResourceList};
use kgc_store::{Store, StoredObject};
use serde_json::Value;
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
    /// Charges `delta` (a [`kgc_quota::Request::delta`]) to `quota` (as the admission read it),
    /// with whatever other charges wait for it.
    pub(crate) async fn charge(
        &self,
        store: &Store,
        info: &Arc<ResourceInfo>,
        quota: &QuotaView,
        delta: ResourceList,
    ) -> Outcome {
        let (namespace, name) = (quota.namespace.as_str(), quota.quota.name.as_str());
        if !store.is_replicated() {
            return charge_deferred(store, info, quota, &delta);
        }
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

/// Gives `charged` back to quota `namespace/name` (a write it was charged for failed).
pub(crate) async fn refund(
    store: &Store,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    charged: &ResourceList,
) -> Result<(), kgc_store::Error> {
    if !store.is_replicated() {
        return store.defer(
            info,
            namespace,
            name,
            Some("status"),
            |_, u: &mut Unwritten| {
                u.0 = resources::subtract(&u.0, charged);
            },
        );
    }
    let refunded = store
        .update(info, namespace, name, Some("status"), false, |mut q| {
            q["status"]["used"] = resources::to_json(&kgc_quota::refund(&q, charged));
            Ok(q)
        })
        .await;
    refunded.map(drop)
}

/// A quota as the admission reads it: parsed once per version.
pub(crate) struct QuotaView {
    pub(crate) namespace: String,
    pub(crate) resource_version: u64,
    pub(crate) quota: kgc_quota::Quota,
}

impl QuotaView {
    pub(crate) fn new(stored: &StoredObject) -> Self {
        Self {
            namespace: stored.namespace.clone(),
            resource_version: stored.resource_version,
            quota: kgc_quota::Quota::parse(&stored.value()),
        }
    }
}

/// The quotas of each namespace as last read, so that a quota is parsed once per version and
/// not once per create it judges.
#[derive(Default)]
pub(crate) struct QuotaViews(Mutex<HashMap<String, Vec<Arc<QuotaView>>>>);

/// How many namespaces' quotas are kept; past it all are forgotten (and read again).
const VIEWED_NAMESPACES: usize = 4096;

impl QuotaViews {
    /// The views of `stored`, namespace `ns`'s quotas, parsing those that changed.
    pub(crate) fn read(&self, ns: &str, stored: &[Arc<StoredObject>]) -> Vec<Arc<QuotaView>> {
        let mut all = locked(&self.0);
        let known = all.get(ns).map(Vec::as_slice).unwrap_or_default();
        let unchanged = known.len() == stored.len()
            && known
                .iter()
                .zip(stored)
                .all(|(v, s)| v.quota.name == s.name && v.resource_version == s.resource_version);
        if unchanged {
            return known.to_vec();
        }
        let views: Vec<Arc<QuotaView>> = stored
            .iter()
            .map(|s| {
                known
                    .iter()
                    .find(|v| v.quota.name == s.name && v.resource_version == s.resource_version)
                    .cloned()
                    .unwrap_or_else(|| Arc::new(QuotaView::new(s)))
            })
            .collect();
        if all.len() >= VIEWED_NAMESPACES && !all.contains_key(ns) {
            all.clear();
        }
        all.insert(ns.to_owned(), views.clone());
        views
    }
}

/// The charges made to a quota and not yet written to it, less what was given back: a
/// [`kgc_store::Deferred`] change of its `status.used`.
#[derive(Default)]
struct Unwritten(ResourceList);

impl kgc_store::Deferred for Unwritten {
    fn is_empty(&self) -> bool {
        self.0.values().all(Quantity::is_zero)
    }

    fn apply(&mut self, mut q: Value) -> Result<Value, Status> {
        let used = resources::from_json(&q["status"]["used"]);
        q["status"]["used"] = resources::to_json(&with_unwritten(&used, &self.0));
        self.0.clear();
        Ok(q)
    }
}

/// `used` with the charges not yet written: never below zero, and a name `used` lacks is
/// added only by a charge (a refund leaves the names the quota no longer limits alone, as
/// [`kgc_quota::refund`]).
fn with_unwritten(used: &ResourceList, unwritten: &ResourceList) -> ResourceList {
    let mut out = used.clone();
    for (name, d) in unwritten {
        let sum = match out.get(name) {
            Some(u) => u.add(d),
            None if d.is_negative() || d.is_zero() => continue,
            None => d.clone(),
        };
        let sum = if sum.is_negative() {
            Quantity::default()
        } else {
            sum
        };
        out.insert(name.clone(), sum);
    }
    out
}

/// Checks `delta` against the quota's `status.used` and the charges not yet written, and adds
/// it to them, under the store's lock: the quota is parsed again only if it changed since the
/// admission read it.
fn charge_deferred(
    store: &Store,
    info: &ResourceInfo,
    quota: &QuotaView,
    delta: &ResourceList,
) -> Outcome {
    let name = quota.quota.name.as_str();
    let charged = store.defer(
        info,
        &quota.namespace,
        name,
        Some("status"),
        |current, unwritten: &mut Unwritten| {
            let fresh;
            let view = if current.resource_version == quota.resource_version {
                quota
            } else {
                fresh = QuotaView::new(current);
                &fresh
            };
            let used = with_unwritten(&view.quota.used, &unwritten.0);
            let charged = kgc_quota::charge_to(name, &view.quota.hard, &used, delta)?
                .map(|new_used| resources::subtract(&new_used, &used));
            if let Some(c) = &charged {
                unwritten.0 = resources::add(&unwritten.0, c);
            }
            Ok(charged)
        },
    );
    charged.map_err(|e| e.status())
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
        .update_retrying(info, ns, name, Some("status"), false, |mut q| {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn list(pairs: &[(&str, &str)]) -> ResourceList {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
            .collect()
    }

    #[test]
    fn unwritten_charges_add_and_refunds_never_go_below_zero_or_add_names() {
        let used = list(&[("pods", "2"), ("requests.cpu", "500m")]);
        let charged = list(&[("pods", "1"), ("requests.cpu", "250m"), ("services", "1")]);
        assert_eq!(
            with_unwritten(&used, &charged),
            list(&[("pods", "3"), ("requests.cpu", "750m"), ("services", "1")])
        );
        let refunds = resources::subtract(
            &ResourceList::new(),
            &list(&[("pods", "5"), ("secrets", "1")]),
        );
        assert_eq!(
            with_unwritten(&used, &refunds),
            list(&[("pods", "0"), ("requests.cpu", "500m")])
        );
    }
}
