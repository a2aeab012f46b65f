//! The one cluster interface every kgc collector uses.
//!
//! A collector is written once against [`Cluster`] and runs unchanged in-process (inside
//! `kgc serve`, straight against the store: kgc-inprocess's `InProcess`) or against any API server over HTTP
//! (through kube-rs: [`Remote`]). The operations are the ones collectors actually perform, not
//! raw REST verbs: "remove these owner references from that object" is one call, which the
//! in-process implementation carries out as one atomic store update and a remote implementation
//! as the exact patch kube-controller-manager sends.
#![forbid(unsafe_code)]

pub mod backoff;
pub mod discovery;
mod fence;
mod reflector;
mod refused;
mod remote;
pub mod throttle;

use std::future::Future;
use std::sync::Arc;

use futures::stream::BoxStream;
use kgc_meta::{DeleteOptions, GroupResource, ObjectMeta, ResourceInfo, Status};
use serde_json::Value;

pub use fence::{Fence, LeaseHolder};
pub use refused::Refused;
pub use remote::{Remote, api_resource, meta};

/// Errors of cluster operations. API outcomes keep their `metav1.Status`, so collectors decide
/// by [`Status::reason`] the same way whichever cluster answered.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Api(#[from] Status),
    /// The API server refused the connection (kubectl's one line).
    #[error("{0}")]
    Refused(#[source] Refused),
    #[error("cluster unreachable: {0}")]
    Transport(String),
    /// A write refused before it was sent: this replica's leadership lapsed ([`Fence`]).
    #[error("not sent: this replica's leader lease lapsed (not renewed within the renew deadline)")]
    Fenced,
}

impl Error {
    /// The API status, if the server answered with one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Api(s) => Some(s),
            Error::Refused(_) | Error::Transport(_) | Error::Fenced => None,
        }
    }

    pub fn is(&self, reason: kgc_meta::Reason) -> bool {
        self.status().is_some_and(|s| s.is(reason))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a whole-object watch yields (the collectors that judge by spec and status: PodGC, TTL,
/// CSR, volumes, nodes). A (re-)list arrives one object at a time between `Init` and
/// `InitDone`, as client-go's reflector delivers it, so a consumer that keeps only a small view of
/// each object never holds the whole list: 100,000 pods are never in memory at once.
#[derive(Debug, Clone, PartialEq)]
pub enum ObjectEvent<T = Value> {
    /// A complete list begins (the first, or a re-list after the watch expired).
    Init,
    /// One object of that list.
    InitApply(T),
    /// The list is complete: objects the consumer knew but did not see since `Init` are gone.
    InitDone,
    /// An object was created or changed.
    Apply(T),
    /// An object was deleted (its last state).
    Delete(T),
    /// A watch BOOKMARK: every change to the resource up to this revision has been delivered.
    /// Only clusters that can compare revisions across resources send them (the in-process
    /// one; see [`Cluster::last_change`]).
    Bookmark(u64),
}

/// What a DELETE did.
#[derive(Debug, Clone, PartialEq)]
pub enum Deleted {
    /// The object no longer exists.
    Gone,
    /// The object still exists, being deleted (finalizers or a grace period pending).
    Pending(ObjectMeta),
}

/// The operations collectors perform on a cluster.
pub trait Cluster: Clone + Send + Sync + 'static {
    /// Every resource served now, with all its served versions.
    fn resources(&self) -> impl Future<Output = Result<Vec<Arc<ResourceInfo>>>> + Send;

    /// Wakes each time the resources the cluster serves may have changed, so that discovery
    /// ([`discovery::served`]) runs again at once instead of at its next resync. `served` is
    /// what discovery found first. By default, a change to a CustomResourceDefinition or an
    /// APIService among `served`, through [`Cluster::watch`].
    fn resource_changes(&self, served: &[Arc<ResourceInfo>]) -> BoxStream<'static, ()> {
        discovery::definition_changes(self, served)
    }

    /// A metadata watch of one resource across namespaces: a list first (`Init`, `InitApply`…,
    /// `InitDone`), then changes; it re-lists by itself when the watch expires, and re-opens
    /// itself after a failure (a remote cluster after a back-off). The stream ends only when the
    /// cluster goes away; errors are transient and reported for information. A deleted object's
    /// namespace, name, uid and last resourceVersion are always filled; its other fields may be
    /// empty (the in-process cluster does not read a deleted object's text for them): consumers
    /// identify what went, as upstream's graph builder does.
    fn watch(
        &self,
        resource: Arc<ResourceInfo>,
    ) -> BoxStream<'static, Result<ObjectEvent<ObjectMeta>>>;

    /// The revision of the last committed change to `gr`, when the cluster can tell without a
    /// request and its revisions order changes across resources, as its watches' bookmarks
    /// then do. The in-process cluster can: one log orders every change. A real API server's
    /// resourceVersions are opaque (`None`), so a consumer of several watches cannot know
    /// whether one lags behind another, exactly as upstream's informers cannot.
    fn last_change(&self, gr: &GroupResource) -> Option<u64> {
        let _ = gr;
        None
    }

    /// The current metadata of an object, `None` if it does not exist.
    fn get(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<ObjectMeta>>> + Send;

    /// Deletes an object.
    fn delete(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> impl Future<Output = Result<Deleted>> + Send;

    /// Removes the owner references with the given uids from the object whose uid is `uid`
    /// (a different object of the same name is left alone: 409).
    fn remove_owner_references(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
        owners: &[String],
    ) -> impl Future<Output = Result<()>> + Send;

    /// Sets `blockOwnerDeletion: false` on every owner reference of the object that has it true.
    fn unblock_owner_references(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Removes one finalizer from the object whose uid is `uid`; done already if it is absent
    /// or the object is gone.
    fn remove_finalizer(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
        finalizer: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Records a core/v1 Event (`event` is the full object, its namespace set). Collectors do
    /// not call it directly but through kgc-runtime's event recorder, which correlates.
    fn create_event(&self, event: Value) -> impl Future<Output = Result<()>> + Send;

    /// Merge-patches the core/v1 Event `namespace`/`name` with `patch`, a flat object of
    /// top-level fields (the recorder's `count`, `lastTimestamp` and `message` of a repeat, as
    /// client-go's `recordToSink` patches); NotFound when the Event is gone.
    fn patch_event(
        &self,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> impl Future<Output = Result<()>> + Send;

    /// A watch of whole objects of one resource across namespaces, like [`Cluster::watch`]:
    /// a list first (`Init`, `InitApply`…, `InitDone`), then changes; it re-lists by itself.
    /// The objects come without `metadata.managedFields`, as kube-controller-manager's
    /// informers keep them ([`kgc_meta::trim`]).
    fn watch_objects(&self, resource: Arc<ResourceInfo>)
    -> BoxStream<'static, Result<ObjectEvent>>;

    /// The current whole object, `None` if it does not exist. Collectors re-read an object
    /// this way right before acting on it (upstream's "live GET").
    fn get_object(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<Value>>> + Send;

    /// Replaces the status of an object (`PUT …/status`) with that of `object`, a copy read
    /// before: its `metadata.resourceVersion` makes the write fail with 409 if the object
    /// changed (or was replaced by another of the same name) since. Returns the written object.
    fn replace_status(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        object: Value,
    ) -> impl Future<Output = Result<Value>> + Send {
        self.replace_subresource(resource, namespace, name, "status", object)
    }

    /// Replaces a subresource of an object (`PUT …/status`, a namespace's `…/finalize`) as
    /// [`Cluster::replace_status`] does.
    fn replace_subresource(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        subresource: &str,
        object: Value,
    ) -> impl Future<Output = Result<Value>> + Send;

    /// The metadata of every object of a resource in `namespace` (every namespace when empty):
    /// one LIST, for controllers that need a fresh count rather than a cache (the namespace
    /// controller's check that a namespace is empty).
    fn list(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
    ) -> impl Future<Output = Result<Vec<ObjectMeta>>> + Send;

    /// Deletes every object of a resource in `namespace` (every namespace when empty) in one
    /// request (`deletecollection`).
    fn delete_collection(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        options: &DeleteOptions,
    ) -> impl Future<Output = Result<()>> + Send;
}
