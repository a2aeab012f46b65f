//! Monitors (upstream `GraphBuilder.syncMonitors`, `GarbageCollector.Sync` in
//! `kubernetes/kubernetes pkg/controller/garbagecollector`): the graph builder follows every
//! deletable resource's watch, following [`discovery::served`]: a CRD's kind is watched once
//! the CRD is served and dropped once it is gone, not at the next periodic discovery.
//! The watches are the process's shared ones
//! ([`kgc_runtime::informer::Informers::subscribe_meta`]): a resource the
//! collectors also cache is watched once for both; one only the GC follows is watched for
//! metadata alone.
//! A resource that cannot be listed or watched only retries its own watch; it never holds up
//! the others.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use futures::StreamExt;
use kgc_client::{Cluster, ObjectEvent, discovery};
use kgc_meta::catalog::api_version;
use kgc_meta::{GroupResource, Reason, ResourceInfo};
use kgc_runtime::informer::Subscription;

use crate::Shared;
use crate::graph_builder::GraphEvent;

/// Resources the garbage collector never watches (upstream `DefaultIgnoredResources`): events
/// are numerous, short-lived and never owners.
pub const IGNORED: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];

/// Whether the collector watches a resource: deletable, listable, watchable, not ignored
/// (upstream `GetDeletableResources`).
pub fn is_deletable(r: &ResourceInfo) -> bool {
    ["delete", "list", "watch"].iter().all(|v| r.supports(v))
        && !IGNORED.iter().any(|(g, p)| r.group == *g && r.plural == *p)
}

/// One followed resource; dropping it stops following.
struct Monitor {
    info: Arc<ResourceInfo>,
    _subscription: Subscription,
}

impl<C: Cluster> Shared<C> {
    /// Keeps one watch per deletable resource the cluster serves, following discovery: a new
    /// resource is watched, and a resource no longer served stops being watched, as soon as
    /// discovery sees it (at once for a CRD; at the latest every `resync`).
    pub(crate) async fn run_monitors(self: Arc<Self>) {
        let mut monitors: HashMap<GroupResource, Monitor> = HashMap::new();
        let mut served = discovery::served(self.cluster.clone(), self.config.resync);
        while let Some(resources) = served.next().await {
            match resources {
                Ok(resources) if !resources.is_empty() => {
                    self.sync_monitors(&mut monitors, resources)
                }
                Ok(_) => {
                    tracing::warn!("discovery returned no resources; keeping the current monitors")
                }
                Err(e) => {
                    tracing::warn!(error = %e, "discovery failed; keeping the current monitors")
                }
            }
        }
    }

    /// Upstream `GraphBuilder.syncMonitors`: starts the missing monitors, stops the unwanted
    /// ones, and refreshes the REST mapper.
    fn sync_monitors(
        self: &Arc<Self>,
        monitors: &mut HashMap<GroupResource, Monitor>,
        resources: Vec<Arc<ResourceInfo>>,
    ) {
        self.mapper
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .replace(&resources);
        let wanted: HashMap<GroupResource, Arc<ResourceInfo>> = resources
            .into_iter()
            .filter(|r| is_deletable(r))
            .map(|r| (r.group_resource(), r))
            .collect();
        monitors.retain(|gr, m| {
            let keep = wanted.get(gr).is_some_and(|w| {
                w.preferred_version() == m.info.preferred_version() && w.kind == m.info.kind
            });
            if !keep {
                tracing::info!(resource = %gr, "stopping monitor");
                self.synced
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(gr);
                if !wanted.contains_key(gr) {
                    tokio::spawn(Arc::clone(self).last_list(Arc::clone(&m.info)));
                }
            }
            keep
        });
        for (gr, info) in wanted {
            if monitors.contains_key(&gr) {
                continue;
            }
            tracing::debug!(resource = %gr, "starting monitor");
            let subscription = self.follow(Arc::clone(&info));
            monitors.insert(
                gr,
                Monitor {
                    info,
                    _subscription: subscription,
                },
            );
        }
        self.monitors.store(monitors.len(), Ordering::Relaxed);
    }

    /// What a monitor stopped because its resource is no longer served leaves behind: one last
    /// list of the resource, so that deletions its watch had not delivered yet are not lost (a
    /// deleted CRD's objects go just before the CRD, and their watch races discovery; an owner
    /// whose deletion was never seen would hold its dependents for ever). A resource that is
    /// not found any more has no objects, as client-go's reflector treats a 404 list
    /// (`kubernetes/kubernetes staging/src/k8s.io/client-go/tools/cache/reflector.go`, `list`);
    /// any other failure leaves the graph as it is, since the resource may come back.
    async fn last_list(self: Arc<Self>, info: Arc<ResourceInfo>) {
        let items = match self.cluster.list(&info, "").await {
            Ok(items) => items,
            Err(e) if e.is(Reason::NotFound) => Vec::new(),
            Err(_) => return,
        };
        let (api_version, kind) = (
            api_version(&info.group, info.preferred_version()),
            info.kind.clone(),
        );
        let _ = self.changes.send(GraphEvent::ListBegin {
            api_version: api_version.clone(),
            kind: kind.clone(),
        });
        for meta in items {
            let _ = self.changes.send(GraphEvent::Apply {
                api_version: api_version.clone(),
                kind: kind.clone(),
                meta,
            });
        }
        let _ = self
            .changes
            .send(GraphEvent::ListDone { api_version, kind });
    }

    /// Follows one resource's shared watch into the graph builder's channel. Failures are the
    /// cluster's to pace and report (`kgc_client::Remote` backs off as client-go's reflector
    /// does), so re-opening never spins against a server that refuses the watch. The handler
    /// holds the collector weakly: the process's informers outlive a collector.
    fn follow(self: &Arc<Self>, info: Arc<ResourceInfo>) -> Subscription {
        let version = api_version(&info.group, info.preferred_version());
        let kind = info.kind.clone();
        let gr = info.group_resource();
        let shared = Arc::downgrade(self);
        self.informers.subscribe_meta(
            info,
            Arc::new(move |event| {
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                let (api_version, kind) = (version.clone(), kind.clone());
                let event = match event {
                    ObjectEvent::Init => GraphEvent::ListBegin { api_version, kind },
                    ObjectEvent::InitApply(meta) | ObjectEvent::Apply(meta) => GraphEvent::Apply {
                        api_version,
                        kind,
                        meta,
                    },
                    ObjectEvent::InitDone => {
                        shared
                            .synced
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(gr.clone());
                        GraphEvent::ListDone { api_version, kind }
                    }
                    ObjectEvent::Delete(meta) => GraphEvent::Delete {
                        api_version,
                        kind,
                        meta,
                    },
                    ObjectEvent::Bookmark(revision) => GraphEvent::Bookmark {
                        resource: gr.clone(),
                        revision,
                    },
                };
                let _ = shared.changes.send(event);
            }),
        )
    }
}
