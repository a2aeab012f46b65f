//! The workers (kubernetes/kubernetes `pkg/controller/garbagecollector/garbagecollector.go`):
//! `attemptToDelete` decides, per object, whether its owners are solid, dangling or waiting and
//! deletes, patches or waits accordingly; foreground owners lose their finalizer once no blocking
//! dependent remains; `attemptToOrphan` strips an owner's references from its dependents.
//!
//! Better than upstream (kubernetes#96752): an object the graph has observed is judged from its
//! observed state and deleted with one DELETE carrying uid *and* resourceVersion preconditions,
//! no GET first. A stale judgement cannot delete the wrong thing: the preconditions fail (409),
//! and only then is the object read back and judged again. Owners are looked up in the graph
//! before the API, so a background cascade costs about one request per collected object.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kgc_client::{Cluster, Deleted, Error as ClusterError};
use kgc_meta::catalog::group_of;
use kgc_meta::deletion::{FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
use kgc_meta::{
    DeleteOptions, GroupResource, ObjectMeta, ObjectRef, OwnerReference, Preconditions,
    PropagationPolicy, Reason, ResourceInfo,
};

use kgc_runtime::decisions::{Action, Record};

use crate::Shared;
use crate::graph::{Entry, Graph, Node, Uid, UidKey};
use crate::graph_builder::GraphEvent;

/// Blocking dependents a foreground owner's re-check hands to the workers at once; the rest
/// follow on later re-checks (each dependent's deletion triggers one).
const HURRY: usize = 64;

/// How long a worker waits for the graph to catch up with the watches before it retries the
/// item later (a watch restarting after an error can take this long).
const CATCH_UP: Duration = Duration::from_secs(5);

/// The collector's name in the decision history.
const DECISION_COLLECTOR: &str = "garbagecollector";

/// How a work item ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Finished: forget the item's backoff.
    Done,
    /// Try again later (rate limited).
    Retry,
}

/// Why an item could not be judged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ItemError {
    /// The owner's (or the item's) apiVersion/kind is not served: retried, never dangling.
    #[error("unable to map {api_version}/{kind} to a served resource")]
    RestMapping { api_version: String, kind: String },
    /// A cluster-scoped object names a namespaced owner: unresolvable, never collected.
    #[error("cluster-scoped object {0} has a namespaced owner")]
    NamespacedOwnerOfClusterScoped(String),
    /// A verified-absent identity was handed back to the graph builder.
    #[error("virtual delete event enqueued")]
    VirtualDeleteEnqueued,
    /// The watch of a resource has not delivered changes already committed to it.
    #[error("the graph lags the watch of {0}")]
    GraphBehind(GroupResource),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// What an owner reference resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnerState {
    Solid,
    Dangling,
    Waiting,
}

impl<C: Cluster> Shared<C> {
    /// A readable copy of a node, without its dependents.
    fn node(&self, uid: &str) -> Option<Node> {
        self.lock_builder().graph.node(uid, false)
    }

    /// `f` over a node as stored, if the graph has it.
    fn with_entry<T>(&self, uid: &str, f: impl FnOnce(&Graph, &Entry) -> T) -> Option<T> {
        let b = self.lock_builder();
        let e = b.graph.entry(&UidKey::new(uid))?;
        Some(f(&b.graph, e))
    }

    fn resolve(&self, api_version: &str, kind: &str) -> Result<Arc<ResourceInfo>, ItemError> {
        self.mapper
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .resolve(api_version, kind)
            .ok_or_else(|| ItemError::RestMapping {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            })
    }

    fn virtual_delete(&self, identity: ObjectRef) -> ItemError {
        let _ = self.changes.send(GraphEvent::VirtualDelete(identity));
        ItemError::VirtualDeleteEnqueued
    }

    /// One `attemptToDelete` item.
    pub(crate) async fn attempt_to_delete(&self, uid: &Uid) -> Outcome {
        let Some(item) = self.node(uid) else {
            return Outcome::Done;
        };
        match self.attempt_to_delete_item(&item).await {
            Ok(()) => {
                // A virtual node that exists is polled until a watch observes it
                // (kubernetes#56121).
                if self.with_entry(uid, |_, e| e.is_virtual()) == Some(true) {
                    Outcome::Retry
                } else {
                    Outcome::Done
                }
            }
            Err(ItemError::VirtualDeleteEnqueued) => Outcome::Done,
            Err(e @ ItemError::NamespacedOwnerOfClusterScoped(_)) => {
                tracing::info!(object = %item.identity, reason = %e, "not collecting");
                Outcome::Done
            }
            Err(e) => {
                self.metrics.errors.inc();
                tracing::debug!(object = %item.identity, error = %e, "will retry");
                Outcome::Retry
            }
        }
    }

    /// The latest metadata of an item: the graph's observation, or a GET for virtual nodes.
    async fn latest(&self, item: &Node, resource: &ResourceInfo) -> Result<ObjectMeta, ItemError> {
        if !item.is_virtual {
            let mut finalizers = Vec::new();
            if item.has_orphan_finalizer {
                finalizers.push(FINALIZER_ORPHAN.to_owned());
            }
            if item.has_foreground_finalizer {
                finalizers.push(FINALIZER_FOREGROUND.to_owned());
            }
            return Ok(ObjectMeta {
                namespace: item.identity.namespace.clone(),
                name: item.identity.name.clone(),
                uid: item.identity.uid.clone(),
                resource_version: item.resource_version.clone(),
                deletion_timestamp: item.being_deleted.then(String::new),
                finalizers,
                owner_references: item.owners.clone(),
            });
        }
        let namespace = if resource.namespaced() {
            if item.identity.namespace.is_empty() {
                return Err(ItemError::NamespacedOwnerOfClusterScoped(
                    item.identity.to_string(),
                ));
            }
            item.identity.namespace.as_str()
        } else {
            ""
        };
        self.metrics.api_get.inc();
        match self
            .cluster
            .get(resource, namespace, &item.identity.name)
            .await?
        {
            Some(m) if m.uid == item.identity.uid => Ok(m),
            _ => Err(self.virtual_delete(item.identity.clone())),
        }
    }

    /// Upstream `attemptToDeleteItem`.
    async fn attempt_to_delete_item(&self, item: &Node) -> Result<(), ItemError> {
        if item.being_deleted && !item.deleting_dependents {
            return Ok(());
        }
        let resource = self.resolve(&item.identity.api_version, &item.identity.kind)?;
        let latest = self.latest(item, &resource).await?;
        if item.deleting_dependents {
            return self.process_deleting_dependents(item, &resource).await;
        }
        if latest.owner_references.is_empty() {
            return Ok(());
        }
        let mut states = Vec::with_capacity(latest.owner_references.len());
        for r in &latest.owner_references {
            states.push(self.classify(&latest, &resource, r).await?);
        }
        let count = |s: OwnerState| states.iter().filter(|x| **x == s).count();
        let (solid, dangling, waiting) = (
            count(OwnerState::Solid),
            count(OwnerState::Dangling),
            count(OwnerState::Waiting),
        );
        if solid > 0 {
            if dangling == 0 && waiting == 0 {
                return Ok(());
            }
            // Waiting refs must go too, or their owners keep `foregroundDeletion` forever.
            let gone: Vec<String> = latest
                .owner_references
                .iter()
                .zip(&states)
                .filter(|(_, s)| **s != OwnerState::Solid)
                .map(|(r, _)| r.uid.clone())
                .collect();
            tracing::info!(object = %item.identity, owners = ?gone, "removing dangling owner references");
            self.metrics.api_patch.inc();
            return match self
                .cluster
                .remove_owner_references(
                    &resource,
                    &latest.namespace,
                    &latest.name,
                    &latest.uid,
                    &gone,
                )
                .await
            {
                Err(e) if e.is(Reason::NotFound) => Err(self.virtual_delete(item.identity.clone())),
                other => {
                    other?;
                    self.metrics.refs_removed.inc();
                    Ok(())
                }
            };
        }
        let has_dependents =
            self.with_entry(&item.identity.uid, |_, e| e.has_dependents()) == Some(true);
        let policy = if waiting > 0 && has_dependents {
            // Cycle guard: a dependent already waiting on this item would deadlock with it.
            let cycle = self
                .lock_builder()
                .graph
                .has_dependent_deleting_dependents(&UidKey::new(&item.identity.uid));
            if cycle {
                self.metrics.api_patch.inc();
                self.cluster
                    .unblock_owner_references(
                        &resource,
                        &latest.namespace,
                        &latest.name,
                        &latest.uid,
                    )
                    .await?;
            }
            PropagationPolicy::Foreground
        } else if latest.has_finalizer(FINALIZER_ORPHAN) {
            PropagationPolicy::Orphan
        } else if latest.has_finalizer(FINALIZER_FOREGROUND) {
            PropagationPolicy::Foreground
        } else {
            PropagationPolicy::Background
        };
        self.delete_object(item, &resource, &latest, policy).await?;
        let reason = DeletionReason {
            owners: &latest.owner_references,
            states: &states,
        };
        self.record(Action::Delete, &item.identity, Some(policy), &reason);
        Ok(())
    }

    /// Records one decision in the process's history.
    fn record(
        &self,
        action: Action,
        object: &ObjectRef,
        policy: Option<PropagationPolicy>,
        reason: &dyn std::fmt::Display,
    ) {
        self.config.decisions.record(Record {
            time: self.config.clock.now(),
            collector: DECISION_COLLECTOR,
            action,
            api_version: &object.api_version,
            kind: &object.kind,
            namespace: &object.namespace,
            name: &object.name,
            uid: &object.uid,
            propagation_policy: policy.map(|p| p.as_str()),
            reason,
        });
    }

    /// Classifies one owner reference of `item` (upstream `isDangling` plus the
    /// waiting-for-dependents check).
    async fn classify(
        &self,
        item: &ObjectMeta,
        item_resource: &ResourceInfo,
        r: &OwnerReference,
    ) -> Result<OwnerState, ItemError> {
        let cluster_key = ObjectRef::from_owner(r, "");
        let namespaced_key = ObjectRef::from_owner(r, &item.namespace);
        {
            let b = self.lock_builder();
            if b.absent.has(&cluster_key) || b.absent.has(&namespaced_key) {
                return Ok(OwnerState::Dangling);
            }
        }
        let owner_resource = self.resolve(&r.api_version, &r.kind)?;
        if owner_resource.namespaced() && !item_resource.namespaced() {
            return Err(ItemError::NamespacedOwnerOfClusterScoped(format!(
                "{}/{} {}",
                item_resource.plural, item.name, item.uid
            )));
        }
        let namespace = if owner_resource.namespaced() {
            item.namespace.as_str()
        } else {
            ""
        };
        // The graph first: an observed owner with these coordinates exists.
        let observed = self.with_entry(&r.uid, |g, owner| {
            (!owner.is_virtual()
                && g.kind(owner) == r.kind
                && group_of(g.api_version(owner)) == group_of(&r.api_version)
                && g.name(owner) == r.name
                && g.namespace(owner) == namespace)
                // Its latest observation decides, as a GET would: `deleting_dependents` only
                // ever turns on, so it would call an owner that finished its foreground
                // deletion (and is held by another finalizer) waiting for ever.
                .then(|| {
                    if owner.being_deleted() && owner.has_foreground_finalizer() {
                        OwnerState::Waiting
                    } else {
                        OwnerState::Solid
                    }
                })
        });
        if let Some(Some(state)) = observed {
            return Ok(state);
        }
        self.metrics.api_get.inc();
        let found = self
            .cluster
            .get(&owner_resource, namespace, &r.name)
            .await?;
        match found {
            Some(owner) if owner.uid == r.uid => Ok(
                if owner.is_deleting() && owner.has_finalizer(FINALIZER_FOREGROUND) {
                    OwnerState::Waiting
                } else {
                    OwnerState::Solid
                },
            ),
            _ => {
                let key = if owner_resource.namespaced() {
                    namespaced_key
                } else {
                    cluster_key
                };
                self.lock_builder().absent.add(key);
                Ok(OwnerState::Dangling)
            }
        }
    }

    /// Upstream `deleteObject`: uid and resourceVersion preconditions; on a conflict, read the
    /// object back and retry without the resourceVersion only when nothing the decision rested
    /// on changed. Upstream compares the owner references alone, because its `latest` is a live
    /// GET. Ours is the graph's observation, which can lag this collector's own writes: a
    /// Background DELETE retried on an object another pass has just put into foreground
    /// deletion would strip its `foregroundDeletion` finalizer and let it go ahead of the
    /// dependents that block it. So the deletion state and the collector's finalizers must be
    /// unchanged too; otherwise the item is retried once the graph has caught up.
    async fn delete_object(
        &self,
        item: &Node,
        resource: &ResourceInfo,
        latest: &ObjectMeta,
        policy: PropagationPolicy,
    ) -> Result<(), ItemError> {
        let mut opts = DeleteOptions {
            propagation_policy: Some(policy),
            preconditions: Preconditions {
                uid: Some(latest.uid.clone()),
                resource_version: Some(latest.resource_version.clone()).filter(|rv| !rv.is_empty()),
            },
            ..DeleteOptions::default()
        };
        for attempt in 0..2 {
            tracing::info!(object = %item.identity, policy = policy.as_str(), "deleting object");
            self.metrics.api_delete.inc();
            match self
                .cluster
                .delete(resource, &latest.namespace, &latest.name, &opts)
                .await
            {
                Ok(Deleted::Gone | Deleted::Pending(_)) => {
                    self.metrics.deleted.inc();
                    // Until the watch reports it, later passes (a foreground owner re-checking
                    // its blockers) need not delete it again: uids are never reused, so this
                    // object is on its way out for good.
                    if policy == PropagationPolicy::Background {
                        let uid = UidKey::new(&item.identity.uid);
                        let mut b = self.lock_builder();
                        if b.graph.entry(&uid).is_some_and(|n| !n.is_virtual()) {
                            b.graph.set_being_deleted(&uid);
                        }
                    }
                    return Ok(());
                }
                Err(e) if e.is(Reason::NotFound) => {
                    return Err(self.virtual_delete(item.identity.clone()));
                }
                Err(e)
                    if e.is(Reason::Conflict)
                        && attempt == 0
                        && opts.preconditions.resource_version.is_some() =>
                {
                    self.metrics.api_get.inc();
                    match self
                        .cluster
                        .get(resource, &latest.namespace, &latest.name)
                        .await?
                    {
                        None => return Err(self.virtual_delete(item.identity.clone())),
                        Some(now) if now.uid != latest.uid => {
                            return Err(self.virtual_delete(item.identity.clone()));
                        }
                        Some(now) if decided_alike(&now, latest) => {
                            opts.preconditions.resource_version = None;
                        }
                        Some(_) => return Err(e.into()),
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Waits until the graph holds every change committed so far to every watched resource,
    /// when the cluster can tell ([`Cluster::last_change`]).
    ///
    /// Better than upstream: each resource has its own watch, so the graph can hold an owner's
    /// foreground deletion before a blocking reference to it that another resource's watch has
    /// not delivered yet, although it was committed first. Upstream then removes
    /// `foregroundDeletion` at once and the owner goes ahead of a dependent that blocks it;
    /// orphaning likewise misses a dependent it has not seen, which then loses its owner and
    /// is collected instead of orphaned. Waiting for the other watches' bookmarks closes that
    /// window wherever revisions are comparable (`kgc serve`).
    ///
    /// The revisions are read once, on entry: changes committed later need not be waited
    /// for, so a resource that never stops changing cannot hold the worker up.
    async fn caught_up(&self) -> Result<(), ItemError> {
        let targets: Vec<(GroupResource, u64)> = self
            .synced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(|gr| Some((gr.clone(), self.cluster.last_change(gr)?)))
            .collect();
        let deadline = tokio::time::Instant::now() + CATCH_UP;
        loop {
            let progress = self.progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            let lagging = {
                let b = self.lock_builder();
                targets
                    .iter()
                    .find(|(gr, committed)| b.bookmark(gr) < *committed)
            };
            let Some((gr, _)) = lagging else {
                return Ok(());
            };
            if tokio::time::timeout_at(deadline, progress).await.is_err() {
                return Err(ItemError::GraphBehind(gr.clone()));
            }
        }
    }

    /// Upstream `processDeletingDependentsItem`, judging "no blocking dependent left" only
    /// once the graph has caught up ([`Self::caught_up`]).
    async fn process_deleting_dependents(
        &self,
        item: &Node,
        resource: &ResourceInfo,
    ) -> Result<(), ItemError> {
        let blocking = || {
            self.lock_builder()
                .graph
                .blocking_progress(&item.identity.uid, HURRY)
        };
        let (mut blocked, mut next) = blocking();
        if !blocked {
            self.caught_up().await?;
            (blocked, next) = blocking();
        }
        if !blocked {
            tracing::info!(object = %item.identity, "no blocking dependents left; removing foregroundDeletion");
            self.metrics.api_patch.inc();
            match self
                .cluster
                .remove_finalizer(
                    resource,
                    &item.identity.namespace,
                    &item.identity.name,
                    &item.identity.uid,
                    FINALIZER_FOREGROUND,
                )
                .await
            {
                Ok(()) => {
                    self.metrics.finalizers_removed.inc();
                    return Ok(());
                }
                Err(e) if e.is(Reason::Conflict) => {
                    // Another object by that name: the one we know is gone.
                    return Err(self.virtual_delete(item.identity.clone()));
                }
                Err(e) => return Err(e.into()),
            }
        }
        for d in next {
            self.attempt_to_delete_queue.add(d);
        }
        Ok(())
    }

    /// One `attemptToOrphan` item (upstream `attemptToOrphanWorker`).
    pub(crate) async fn attempt_to_orphan(&self, uid: &Uid) -> Outcome {
        if self.with_entry(uid, |_, _| ()).is_none() {
            return Outcome::Done;
        }
        // Every dependent committed so far must be in the graph ([`Self::caught_up`]).
        if let Err(e) = self.caught_up().await {
            tracing::debug!(owner = %uid, error = %e, "will retry");
            return Outcome::Retry;
        }
        let Some(owner) = self.node(uid) else {
            return Outcome::Done;
        };
        let dependents: Vec<ObjectRef> = {
            let b = self.lock_builder();
            let g = &b.graph;
            g.entry(&UidKey::new(uid))
                .map(Entry::sorted_dependents)
                .unwrap_or_default()
                .iter()
                .filter_map(|d| g.entry(d).map(|n| g.identity(d, n)))
                .collect()
        };
        let owner_uid = [owner.identity.uid.clone()];
        let owner_uid = &owner_uid;
        let owner_identity = &owner.identity;
        let results: Vec<Result<(), ItemError>> = futures::stream::iter(dependents)
            .map(|dep| async move {
                let resource = self.resolve(&dep.api_version, &dep.kind)?;
                self.metrics.api_patch.inc();
                match self
                    .cluster
                    .remove_owner_references(
                        &resource,
                        &dep.namespace,
                        &dep.name,
                        &dep.uid,
                        owner_uid,
                    )
                    .await
                {
                    Ok(()) => {
                        self.metrics.refs_removed.inc();
                        self.record(
                            Action::Orphan,
                            &dep,
                            None,
                            &format_args!(
                                "orphaned: its owner {} {} (uid {}) was deleted with \
                                 propagationPolicy Orphan; the owner reference was removed",
                                owner_identity.kind, owner_identity.name, owner_identity.uid
                            ),
                        );
                        Ok(())
                    }
                    Err(e) if e.is(Reason::NotFound) || e.is(Reason::Conflict) => Ok(()),
                    Err(e) => Err(e.into()),
                }
            })
            .buffer_unordered(self.config.orphan_concurrency)
            .collect()
            .await;
        if let Some(e) = results.into_iter().find_map(Result::err) {
            tracing::warn!(owner = %owner.identity, error = %e, "orphaning dependents failed; will retry");
            self.metrics.errors.inc();
            return Outcome::Retry;
        }
        let resource = match self.resolve(&owner.identity.api_version, &owner.identity.kind) {
            Ok(r) => r,
            Err(_) => return Outcome::Retry,
        };
        tracing::info!(owner = %owner.identity, "dependents orphaned; removing the orphan finalizer");
        self.metrics.api_patch.inc();
        match self
            .cluster
            .remove_finalizer(
                &resource,
                &owner.identity.namespace,
                &owner.identity.name,
                &owner.identity.uid,
                FINALIZER_ORPHAN,
            )
            .await
        {
            Ok(()) => {
                self.metrics.finalizers_removed.inc();
                Outcome::Done
            }
            Err(e) if e.is(Reason::Conflict) => Outcome::Done,
            Err(e) => {
                tracing::warn!(owner = %owner.identity, error = %e, "removing the orphan finalizer failed");
                self.metrics.errors.inc();
                Outcome::Retry
            }
        }
    }
}

/// Why `attemptToDelete` deletes an object whose owners resolved to `states`: no owner is
/// solid, so each is absent (not found by its uid, as the collector looks owners up) or
/// deleting its dependents in the foreground. Written straight into the decision history,
/// which keeps it only when asked (`kgc why`): formatted per collected object, it cost the
/// collector more than its lookups.
struct DeletionReason<'a> {
    owners: &'a [OwnerReference],
    states: &'a [OwnerState],
}

impl std::fmt::Display for DeletionReason<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let with = |want: OwnerState| {
            self.owners
                .iter()
                .zip(self.states)
                .filter(move |(_, s)| **s == want)
                .map(|(r, _)| r)
        };
        let list = |f: &mut std::fmt::Formatter<'_>, want: OwnerState| {
            // Pieces, not `write!`: this runs once per collected object.
            for (i, r) in with(want).enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                for piece in [sep, &r.kind, " ", &r.name, " (uid ", &r.uid, ")"] {
                    f.write_str(piece)?;
                }
            }
            Ok(())
        };
        let absent = with(OwnerState::Dangling).next().is_some();
        let waiting = with(OwnerState::Waiting).next().is_some();
        f.write_str(if waiting {
            "no owner remains: "
        } else {
            "all owners absent: "
        })?;
        if absent {
            f.write_str("not found by uid: ")?;
            list(f, OwnerState::Dangling)?;
        }
        if waiting {
            f.write_str(if absent { "; " } else { "" })?;
            f.write_str("deleting its dependents in the foreground: ")?;
            list(f, OwnerState::Waiting)?;
        }
        Ok(())
    }
}

/// Whether `now` would lead `attemptToDelete` to the same DELETE as `then`: the same owner
/// references, deletion state and collector finalizers (which choose the propagation policy).
fn decided_alike(now: &ObjectMeta, then: &ObjectMeta) -> bool {
    now.owner_references == then.owner_references
        && now.is_deleting() == then.is_deleting()
        && [FINALIZER_ORPHAN, FINALIZER_FOREGROUND]
            .iter()
            .all(|f| now.has_finalizer(f) == then.has_finalizer(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(kind: &str, name: &str, uid: &str) -> OwnerReference {
        OwnerReference::from_json(&serde_json::json!({
            "apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid,
        }))
    }

    #[test]
    fn deletion_reasons_name_each_owner_and_how_it_was_judged() {
        let reason = |owners: &[OwnerReference], states: &[OwnerState]| {
            DeletionReason { owners, states }.to_string()
        };
        let owners = [
            owner("ReplicaSet", "a", "u1"),
            owner("Deployment", "d", "u2"),
        ];
        assert_eq!(
            reason(&owners, &[OwnerState::Dangling, OwnerState::Dangling]),
            "all owners absent: not found by uid: ReplicaSet a (uid u1), Deployment d (uid u2)"
        );
        assert_eq!(
            reason(&owners, &[OwnerState::Dangling, OwnerState::Waiting]),
            "no owner remains: not found by uid: ReplicaSet a (uid u1); deleting its dependents \
             in the foreground: Deployment d (uid u2)"
        );
        assert_eq!(
            reason(&owners[1..], &[OwnerState::Waiting]),
            "no owner remains: deleting its dependents in the foreground: Deployment d (uid u2)"
        );
    }
}
