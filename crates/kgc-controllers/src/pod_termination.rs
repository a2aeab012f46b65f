//! Completing graceful pod deletions. On a real cluster the kubelet stops a deleted pod's
//! containers and then sends the final grace-0 DELETE (kubernetes `pkg/kubelet/status/
//! status_manager.go`, `syncPod` → `canBeDeleted`). The simulated kubelet (kgc-kubelet) does
//! that for the pods of simulated nodes; this controller stands in for the kubelet of every
//! other node (nodes a test or a user made without a kubelet, or all of them when the
//! simulated kubelet is off), which upstream has no kubelet for and whose pods would stay
//! Terminating. It sends the DELETE when the grace period, which a graceful DELETE writes as
//! the pod's deletionTimestamp, ends: a pod is looked at when it changes and comes back in the
//! work queue at exactly that instant, no polling. Finalizers are honoured (the DELETE only
//! ends the grace period).

use std::sync::Arc;
use std::time::Duration;

use kgc_client::Cluster;
use kgc_meta::{DeleteOptions, Preconditions, Reason, ResourceInfo};
use kgc_runtime::informer::{Cache, Key, View};
use serde_json::Value;

use kgc_runtime::{Context, Controller, ObjectKey};

use crate::Result;

/// The name `--controllers` knows it by.
pub const NAME: &str = "pod-termination";
const WORKERS: usize = 4;

/// What the controller keeps of a pod: only pods in a graceful deletion (grace period over
/// 0), so the cache holds what there is to do, not every pod.
#[derive(Debug, Clone, PartialEq)]
struct Terminating {
    uid: String,
    node: String,
    /// When the grace period ends.
    due: jiff::Timestamp,
}

impl View for Terminating {
    fn view(obj: &Value) -> Option<Self> {
        let m = &obj["metadata"];
        if m["deletionGracePeriodSeconds"].as_i64().unwrap_or(0) <= 0 {
            return None;
        }
        Some(Self {
            uid: m["uid"].as_str()?.to_owned(),
            node: obj["spec"]["nodeName"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            due: m["deletionTimestamp"].as_str()?.parse().ok()?,
        })
    }
}

/// Whether a node's pods are a kubelet's to finish (the simulated kubelet's nodes).
pub type KubeletNodes = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Runs the controller until dropped; the pods of the nodes `kubelet` names are left to it.
pub async fn run<C: Cluster>(ctx: Context<C>, kubelet: Option<KubeletNodes>) {
    let pods = ctx.informers.resource("", "pods").await;
    let cache = ctx.informers.cache::<Terminating>(Arc::clone(&pods));
    let state = Arc::new((ctx.clone(), pods, cache.clone(), kubelet));
    Controller::new(&ctx, NAME, &cache)
        .run_with(WORKERS, state, |s, key: ObjectKey| async move {
            let (ctx, pods, cache, kubelet) = &*s;
            sync(ctx, pods, cache, &key.0, kubelet.as_ref()).await
        })
        .await;
}

/// How long from `now` until `due`; nothing once it has passed.
fn wait(now: jiff::Timestamp, due: jiff::Timestamp) -> Duration {
    Duration::try_from(now.duration_until(due)).unwrap_or(Duration::ZERO)
}

async fn sync<C: Cluster>(
    ctx: &Context<C>,
    pods: &ResourceInfo,
    cache: &Cache<Terminating>,
    key: &Key,
    kubelet: Option<&KubeletNodes>,
) -> Result<Option<Duration>> {
    let Some(pod) = cache.get(key) else {
        return Ok(None);
    };
    if kubelet.is_some_and(|runs| runs(&pod.node)) {
        return Ok(None);
    }
    let left = wait(ctx.clock.now(), pod.due);
    if !left.is_zero() {
        return Ok(Some(left));
    }
    let options = DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Preconditions {
            uid: Some(pod.uid),
            resource_version: None,
        },
        ..DeleteOptions::default()
    };
    match ctx.cluster().delete(pods, &key.0, &key.1, &options).await {
        Ok(_) => Ok(None),
        Err(e) if e.is(Reason::NotFound) || e.is(Reason::Conflict) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
