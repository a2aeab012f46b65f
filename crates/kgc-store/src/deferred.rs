//! Updates deferred to the next commit: small changes to one object, accumulated under the
//! store's lock and written as one update of it at the latest with the commit of whatever is
//! written after them.
//!
//! The ResourceQuota admission charges a quota before it stores the object it charges for,
//! and every create under a quota would otherwise be two writes: the quota's `status.used`
//! and the object (kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/admission/plugin/
//! resourcequota/controller.go` writes the quota once per batch of admission attempts, and its
//! batches are as long as an etcd round trip). Here a charge is added to the quota's deferred
//! change under the lock every write is planned under, and the commit thread, before it
//! writes a batch, plans every deferred change as one update and writes it in that batch
//! ([`Store::flush_deferred`]): a write planned after a charge is in a batch that also holds
//! the charge (or a later one), so it is never acknowledged without it, and a thousand charges
//! made while SQLite syncs the previous batch cost one update of the quota.
//!
//! A store that is not durable plans a deferred change at once (there is no commit to wait
//! for); a replica on etcd does not defer (another replica's write could win the quota's
//! guard after the object is written), and [`Store::defer`] refuses there.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use kgc_meta::{GroupResource, ResourceInfo, Status};
use serde_json::Value;

use crate::object::StoredObject;
use crate::{Result, State, Store};

/// A change waiting to be applied to one object.
pub trait Deferred: Any + Send {
    /// Whether applying it would change nothing (it is then not written).
    fn is_empty(&self) -> bool;
    /// Applies the change to `obj`, the object's current state, and empties it.
    fn apply(&mut self, obj: Value) -> std::result::Result<Value, Status>;
}

/// One object's deferred change and how to write it.
pub(crate) struct Entry {
    info: ResourceInfo,
    subresource: Option<String>,
    change: Box<dyn Deferred>,
}

/// The deferred changes, by object.
pub(crate) type Entries = HashMap<(GroupResource, String, String), Entry>;

impl Store {
    /// Runs `f` under the store's write lock on the current state of object `namespace/name`
    /// and its deferred change of type `D` (empty the first time), which is written as one
    /// update (of `subresource`) with the next commit. `f` must be quick: every write waits
    /// for it. A 404 when the object does not exist; refused on a replica on etcd.
    pub fn defer<D: Deferred + Default, R>(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        f: impl FnOnce(&Arc<StoredObject>, &mut D) -> R,
    ) -> Result<R> {
        let catalog = self.catalog();
        let info = catalog.stored_as(info);
        let gr = info.group_resource();
        let ns = if info.namespaced() { namespace } else { "" };
        let mut st = self.write_lock()?;
        if st.replicated {
            return Err(Status::internal("a replica on etcd does not defer updates").into());
        }
        let current = st
            .get(&gr, ns, name)
            .cloned()
            .ok_or_else(|| Status::not_found(&gr, name))?;
        let entry = st
            .deferred
            .entry((gr, ns.to_owned(), name.to_owned()))
            .or_insert_with(|| Entry {
                info: info.clone(),
                subresource: subresource.map(str::to_owned),
                change: Box::<D>::default(),
            });
        let change = (entry.change.as_mut() as &mut dyn Any)
            .downcast_mut::<D>()
            .ok_or_else(|| Status::internal(format!("{name}: two kinds of deferred change")))?;
        let out = f(&current, change);
        if !self.inner.durable {
            self.flush_deferred(&mut st)?;
        }
        Ok(out)
    }

    /// Plans every deferred change as an update of its object and queues it for commit, each
    /// in its own unit; the revision of the last, if any. Called with the write lock held: by
    /// the commit thread before it writes a batch, and at once by a store that is not
    /// durable. An object gone since is not written to (its change is dropped).
    pub(crate) fn flush_deferred(&self, st: &mut State) -> Result<Option<u64>> {
        let mut last = None;
        for ((gr, ns, name), mut e) in std::mem::take(&mut st.deferred) {
            if e.change.is_empty() {
                continue;
            }
            let planned = self.plan_update(
                st,
                &e.info,
                &gr.group,
                &ns,
                &name,
                e.subresource.as_deref(),
                false,
                &mut |obj| e.change.apply(obj),
            );
            match planned {
                Ok((_, Some(c))) => {
                    last = Some(c.object.resource_version);
                    // Nobody waits for it: the writes after it are acknowledged with it.
                    drop(self.commit(st, vec![c])?);
                }
                Ok((_, None)) => {}
                Err(e) => {
                    tracing::debug!(%gr, namespace = ns, name, error = %e, "a deferred change has nothing to apply to")
                }
            }
        }
        Ok(last)
    }
}

#[cfg(test)]
mod tests {
    use kgc_meta::ResourceInfo;
    use serde_json::{Value, json};

    use super::Deferred;
    use crate::testing::store_with_configmap;
    use crate::{GroupResource, Store};

    /// A count added to a ConfigMap's `data.n`.
    #[derive(Default)]
    struct Add(u64);

    impl Deferred for Add {
        fn is_empty(&self) -> bool {
            self.0 == 0
        }

        fn apply(&mut self, mut obj: Value) -> Result<Value, kgc_meta::Status> {
            let n: u64 = obj["data"]["n"]
                .as_str()
                .unwrap_or("0")
                .parse()
                .unwrap_or(0);
            obj["data"]["n"] = json!((n + std::mem::take(&mut self.0)).to_string());
            Ok(obj)
        }
    }

    fn n(store: &Store) -> Option<Value> {
        store
            .get(&GroupResource::new("", "configmaps"), "ns", "counter")
            .map(|o| o.value()["data"]["n"].clone())
    }

    async fn store_with_counter(path: Option<std::path::PathBuf>) -> (Store, ResourceInfo) {
        let (store, cm) = store_with_configmap(path, "counter", json!({"n": "0"})).await;
        (store, (*cm).clone())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deferred_changes_are_written_once_with_the_writes_after_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kgc.db");
        let (store, cm) = store_with_counter(Some(path.clone())).await;
        let before = store.revision();
        for _ in 0..100 {
            store
                .defer(&cm, "ns", "counter", None, |_, add: &mut Add| add.0 += 1)
                .unwrap();
        }
        // Nothing written yet: the changes wait for a commit.
        assert_eq!(n(&store), Some(json!("0")));
        assert_eq!(store.revision(), before);
        let after = json!({"metadata": {"name": "after"}});
        store.create(&cm, "ns", after, false).await.unwrap();
        // One update carried the hundred, in the batch of the write after them.
        assert_eq!(n(&store), Some(json!("100")));
        assert_eq!(store.revision(), before + 2);
        store.close();
        drop(store);
        let reopened = Store::open(&path).await.unwrap();
        assert_eq!(n(&reopened), Some(json!("100")));
    }

    #[tokio::test]
    async fn a_store_in_memory_applies_a_deferred_change_at_once() {
        let (store, cm) = store_with_counter(None).await;
        store
            .defer(&cm, "ns", "counter", None, |current, add: &mut Add| {
                assert_eq!(current.name, "counter");
                add.0 = 7;
            })
            .unwrap();
        assert_eq!(n(&store), Some(json!("7")));
        let missing = store
            .defer(&cm, "ns", "absent", None, |_, add: &mut Add| add.0 = 1)
            .unwrap_err();
        assert_eq!(missing.status().code, 404);
    }
}
