//! The resource-quota controller (kubernetes/kubernetes `pkg/controller/resourcequota/
//! resource_quota_controller.go`): keeps each ResourceQuota's `status.hard` (its `spec.hard`)
//! and `status.used` (what its namespace's objects in its scopes use, computed by kgc-quota).
//!
//! A quota is recalculated in full:
//! - at once when it is created or its `spec.hard` changes, or its status lacks a name of
//!   `spec.hard` (upstream's `addQuota`), not on the status writes of the admission plugin;
//! - when an object it may count goes (replenishment, upstream's `QuotaMonitor`): a deleted
//!   pod, Service, claim, ConfigMap, Secret or ReplicationController, or a pod that ended
//!   (Succeeded, Failed), requeues its namespace's quotas; so does a deleted object of any
//!   other resource a quota counts (`count/<resource>.<group>`), watched from the moment a
//!   quota names it (upstream watches every quotable resource; kgc only those quotas name);
//! - every `--resource-quota-sync-period` (5 minutes), every quota.
//!
//! The namespace's objects are listed live (not from a cache), and the status is written with
//! the quota's resourceVersion as read before listing: if the admission plugin charged the
//! quota meanwhile, the write is a conflict and the quota is recalculated again, so a charge is
//! never lost to a recalculation that did not see its object.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kgc_client::Cluster;
use kgc_meta::ResourceInfo;
use kgc_runtime::informer::{Key, View};
use kgc_runtime::{Controller, ObjectKey};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

use kgc_runtime::Context;

use crate::{Error, Result};

/// The name `--controllers` knows it by.
pub const NAME: &str = "resourcequota";
const WORKERS: usize = 2;

/// Settings.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// `--resource-quota-sync-period`: how often every quota is recalculated in full.
    pub sync_period: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            sync_period: Duration::from_secs(300),
        }
    }
}

/// What the controller keeps of a quota: whether its status needs computing, and the
/// resources beyond [`REPLENISHED`] it counts, `(group, resource)`, whose deletions replenish it.
#[derive(Debug, Clone, PartialEq)]
struct Quota {
    stale: bool,
    counted: Vec<(String, String)>,
}

impl View for Quota {
    /// `addQuota`: stale when `status.hard` differs from `spec.hard` or `status.used` lacks a
    /// name of `spec.hard`.
    fn view(obj: &Value) -> Option<Self> {
        let hard = &obj["spec"]["hard"];
        let used = &obj["status"]["used"];
        let missing = hard
            .as_object()
            .is_some_and(|h| h.keys().any(|k| used.get(k).is_none()));
        let counted = kgc_quota::usage::resources_to_list(obj)
            .into_iter()
            .filter(|(g, r)| !(g.is_empty() && REPLENISHED.contains(&r.as_str())))
            .collect();
        Some(Quota {
            stale: obj["status"]["hard"] != *hard || missing,
            counted,
        })
    }
}

/// What the controller keeps of a charged object: whether it still counts for compute
/// resources (a pod that ended does not).
#[derive(Debug, Clone, PartialEq)]
struct Charged {
    ended: bool,
}

impl View for Charged {
    fn view(obj: &Value) -> Option<Self> {
        let ended = matches!(
            obj["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        );
        Some(Charged { ended })
    }
}

/// The resources whose deletion replenishes quota at once.
const REPLENISHED: [&str; 6] = [
    "pods",
    "services",
    "persistentvolumeclaims",
    "configmaps",
    "secrets",
    "replicationcontrollers",
];

/// Runs the controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config) {
    let resource = ctx.informers.resource("", "resourcequotas").await;
    let quotas = ctx.informers.cache::<Quota>(Arc::clone(&resource));
    // The resources quotas count beyond the replenished ones, each sent once to `monitors`.
    let (monitor_tx, mut monitor_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut controller = Controller::<ObjectKey>::named(&ctx, NAME)
        .watches(&quotas, move |key: &Key, v: Option<&Quota>| {
            for counted in v.map(|v| v.counted.as_slice()).unwrap_or_default() {
                let _ = monitor_tx.send(counted.clone());
            }
            v.filter(|v| v.stale).map(|_| ObjectKey(key.clone()))
        })
        .resyncs(&quotas, config.sync_period);
    let in_namespace = {
        let quotas = quotas.clone();
        move |ns: &str| -> Vec<ObjectKey> {
            quotas.read(|m| {
                m.keys()
                    .filter(|k| k.0 == ns)
                    .cloned()
                    .map(ObjectKey)
                    .collect()
            })
        }
    };
    for plural in REPLENISHED {
        let charged = ctx
            .informers
            .cache::<Charged>(ctx.informers.resource("", plural).await);
        let (gone, ended) = (in_namespace.clone(), in_namespace.clone());
        controller = controller
            .watches_deletions(&charged, move |key: &Key, _: &Charged| gone(&key.0))
            .watches(&charged, move |key: &Key, v: Option<&Charged>| {
                match v.is_some_and(|v| v.ended) {
                    true => ended(&key.0),
                    false => Vec::new(),
                }
            });
    }
    let monitors = {
        let (informers, queue) = (ctx.informers.clone(), controller.queue().clone());
        async move {
            let mut asked: HashSet<(String, String)> = HashSet::new();
            // Aborted with the controller (a lost leadership drops it).
            let mut running = tokio::task::JoinSet::new();
            while let Some((group, plural)) = monitor_rx.recv().await {
                if asked.insert((group.clone(), plural.clone())) {
                    let (queue, in_namespace) = (queue.clone(), in_namespace.clone());
                    let requeue = move |ns: &str| {
                        for key in in_namespace(ns) {
                            queue.add(key);
                        }
                    };
                    running.spawn(monitor(informers.clone(), group, plural, requeue));
                }
            }
            std::future::pending::<()>().await
        }
    };
    let reconcile = move |key: ObjectKey| {
        let (ctx, resource) = (ctx.clone(), Arc::clone(&resource));
        async move { sync(&ctx, &resource, &key.0).await.map(|()| None) }
    };
    controller.beside(monitors).run(WORKERS, reconcile).await;
}

/// Upstream's quota monitor of one more resource: once it is served, its deletions requeue
/// their namespace's quotas. Runs as long as the controller (the cache lives with it).
async fn monitor<C: Cluster>(
    informers: kgc_runtime::informer::Informers<C>,
    group: String,
    plural: String,
    requeue: impl Fn(&str) + Send + Sync + 'static,
) {
    let info = informers.resource(&group, &plural).await;
    let cache = informers.cache::<Charged>(info);
    cache.on_delete(Arc::new(move |key: &Key, _: &Charged| requeue(&key.0)));
    std::future::pending::<()>().await;
}

/// `syncResourceQuota`: recomputes the quota's status from a live list of its namespace's
/// objects and writes it if it changed.
async fn sync<C: Cluster>(ctx: &Context<C>, resource: &ResourceInfo, key: &Key) -> Result<()> {
    let Some(mut quota) = ctx.cluster().get_object(resource, &key.0, &key.1).await? else {
        return Ok(());
    };
    let wanted: BTreeSet<(String, String)> = kgc_quota::usage::resources_to_list(&quota);
    let served = ctx.cluster().resources().await?;
    let mut objects: Vec<((String, String), Vec<Value>)> = Vec::new();
    for (group, plural) in wanted {
        let Some(info) = served
            .iter()
            .find(|r| r.group == group && r.plural == plural)
        else {
            // Not served: nothing of it to count.
            continue;
        };
        let listed = list(ctx, info, &key.0).await?;
        objects.push(((group, plural), listed));
    }
    let none: Vec<Value> = Vec::new();
    let status = kgc_quota::usage::status(
        &quota,
        |g, r| {
            objects
                .iter()
                .find(|((og, or), _)| og == g && or == r)
                .map_or(&none, |(_, v)| v)
                .iter()
        },
        ctx.clock.now(),
    );
    if quota["status"] == status {
        return Ok(());
    }
    quota["status"] = status;
    // The resourceVersion read above: a charge made since is a conflict, retried.
    ctx.cluster()
        .replace_status(resource, &key.0, &key.1, quota)
        .await?;
    Ok(())
}

/// Every object of a resource in a namespace, whole.
async fn list<C: Cluster>(ctx: &Context<C>, info: &ResourceInfo, ns: &str) -> Result<Vec<Value>> {
    let version = info.preferred_version();
    let ar = ApiResource {
        group: info.group.clone(),
        version: version.to_owned(),
        api_version: kgc_meta::catalog::api_version(&info.group, version),
        kind: info.kind.clone(),
        plural: info.plural.clone(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), ns, &ar);
    let items = api.list(&ListParams::default()).await?.items;
    items
        .into_iter()
        .map(|o| serde_json::to_value(o).map_err(Error::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_quota_is_stale_until_its_status_covers_its_spec() {
        let quota = |stale| {
            Some(Quota {
                stale,
                counted: Vec::new(),
            })
        };
        let fresh = json!({"spec": {"hard": {"pods": "2"}}});
        assert_eq!(Quota::view(&fresh), quota(true));
        let done = json!({"spec": {"hard": {"pods": "2"}},
            "status": {"hard": {"pods": "2"}, "used": {"pods": "1"}}});
        assert_eq!(Quota::view(&done), quota(false));
        let raised = json!({"spec": {"hard": {"pods": "3"}},
            "status": {"hard": {"pods": "2"}, "used": {"pods": "1"}}});
        assert_eq!(Quota::view(&raised), quota(true));
    }

    /// The resources a quota counts beyond the always-watched ones, which its controller
    /// starts watching for their deletions.
    #[test]
    fn a_quota_names_the_resources_it_counts() {
        let q = json!({"spec": {"hard": {"pods": "2", "count/leases.coordination.k8s.io": "1",
            "count/configmaps": "3", "count/widgets.example.com": "4"}}});
        let counted = Quota::view(&q).unwrap().counted;
        assert_eq!(
            counted,
            [
                ("coordination.k8s.io".to_owned(), "leases".to_owned()),
                ("example.com".to_owned(), "widgets".to_owned()),
            ]
        );
    }
}
