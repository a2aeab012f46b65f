//! The loop shared by the store's finalizing controllers (namespaces, CRDs): track the objects
//! of one resource that are being deleted, and run a step for each whenever anything commits,
//! or every few seconds while some remain.

use std::collections::BTreeMap;
use std::time::Duration;

use kgc_meta::GroupResource;

use crate::Store;
use crate::watch::{EventType, WatchEvent, WatchFilter};

/// How often a deleting object is looked at again when nothing else happens.
const RESYNC: Duration = Duration::from_secs(2);

impl Store {
    /// Runs `step(name, uid)` for every object of `gr` that has a deletionTimestamp, until the
    /// store closes. A failing step is logged and retried on the next round.
    pub(crate) async fn run_terminating(
        &self,
        gr: GroupResource,
        mut step: impl AsyncFnMut(String, String) -> crate::Result<()>,
    ) {
        let mut changes = self.inner.committed.subscribe();
        let mut watcher = self.watch(WatchFilter::new(gr.clone()), None);
        let mut deleting: BTreeMap<String, String> = BTreeMap::new();
        loop {
            while let Some(e) = watcher.try_next() {
                match e {
                    WatchEvent::Event(kind, o) => {
                        if kind != EventType::Deleted && o.deleting {
                            deleting.insert(o.name.clone(), o.uid.clone());
                        } else {
                            deleting.remove(&o.name);
                        }
                    }
                    WatchEvent::Expired { .. } => {
                        watcher = self.watch(WatchFilter::new(gr.clone()), None);
                        deleting.clear();
                    }
                    WatchEvent::Closed => return,
                }
            }
            for (name, uid) in deleting.clone() {
                if let Err(e) = step(name.clone(), uid).await {
                    tracing::warn!(resource = %gr, %name, error = %e, "finalization will be retried");
                }
            }
            changes.borrow_and_update();
            let wait = if deleting.is_empty() {
                Duration::from_secs(3600)
            } else {
                RESYNC
            };
            if let Ok(Err(_)) = tokio::time::timeout(wait, changes.changed()).await {
                return;
            }
        }
    }
}
