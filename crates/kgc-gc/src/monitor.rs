//! Monitors (upstream `GraphBuilder.syncMonitors`, `GarbageCollector.Sync` in
//! `kubernetes/kubernetes pkg/controller/garbagecollector`): one metadata watch per deletable
//! resource, feeding the graph builder, following [`discovery::served`]: a CRD's kind is
//! watched once the CRD is served and dropped once it is gone, not at the next periodic
//! discovery.
//! A resource that cannot be listed or watched only retries its own watch; it never holds up
//! the others.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::StreamExt;
use kgc_client::{Cluster, MetaEvent, discovery};
use kgc_meta::catalog::api_version;
use kgc_meta::{GroupResource, Reason, ResourceInfo};
use tokio::task::JoinHandle;

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

struct Monitor {
    info: Arc<ResourceInfo>,
    task: JoinHandle<()>,
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
                m.task.abort();
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
            let task = tokio::spawn(Arc::clone(self).watch_resource(Arc::clone(&info)));
            monitors.insert(gr, Monitor { info, task });
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
        let mut stream = self.cluster.watch(Arc::clone(&info));
        let items = match stream.next().await {
            Some(Ok(MetaEvent::Relist(items))) => items,
            Some(Err(e)) if e.is(Reason::NotFound) => Vec::new(),
            _ => return,
        };
        let _ = self.changes.send(GraphEvent::Resync {
            api_version: api_version(&info.group, info.preferred_version()),
            kind: info.kind.clone(),
            items,
        });
    }

    /// One resource's watch. The stream re-lists by itself, and the cluster paces re-opening
    /// a failed watch and logs its failures (`kgc_client::Remote`), so an error is only noted
    /// here: re-opening at once on each error is what re-opened watches ten times a second
    /// against a server that refused them.
    async fn watch_resource(self: Arc<Self>, info: Arc<ResourceInfo>) {
        let version = api_version(&info.group, info.preferred_version());
        let kind = info.kind.clone();
        let gr = info.group_resource();
        let mut stream = self.cluster.watch(Arc::clone(&info));
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(MetaEvent::Relist(items)) => {
                    let e = GraphEvent::Resync {
                        api_version: version.clone(),
                        kind: kind.clone(),
                        items,
                    };
                    self.synced
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(gr.clone());
                    e
                }
                Ok(MetaEvent::Apply(meta)) => GraphEvent::Apply {
                    api_version: version.clone(),
                    kind: kind.clone(),
                    meta,
                },
                Ok(MetaEvent::Delete(meta)) => GraphEvent::Delete {
                    api_version: version.clone(),
                    kind: kind.clone(),
                    meta,
                },
                Ok(MetaEvent::Bookmark(revision)) => GraphEvent::Bookmark {
                    resource: gr.clone(),
                    revision,
                },
                Err(e) => {
                    tracing::debug!(resource = %gr, error = %e, "watch error");
                    continue;
                }
            };
            if self.changes.send(event).is_err() {
                return;
            }
        }
    }
}
