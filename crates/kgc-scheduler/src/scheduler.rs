//! One scheduling cycle per pod, one at a time (kubernetes/kubernetes pkg/scheduler/
//! schedule_one.go): PreFilter (volumes), Filter and Score over the cache, *assume* the pod on
//! the chosen node, then bind in the background (PreBind volumes, the `pods/binding` POST) while
//! the next pod is scheduled; or, when no node fits, the `PodScheduled=False` condition and a
//! `FailedScheduling` event.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod as PodObject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Status};
use kgc_meta::time::{Clock, format_time};
use kgc_runtime::informer::{self, Key, describe};
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::cache::{Cache, State};
use crate::filter::{Rejection, filter, fit_error};
use crate::pod::{Condition, Pod};
use crate::queue::SchedulingQueue;
use crate::score::score;
use crate::selector::Term;
use crate::volume::Volumes;
use crate::{Error, FIELD_MANAGER};
use kgc_runtime::events::Recorder;

/// Bindings in flight at most: the scheduling loop waits for a slot.
pub const PARALLEL_BINDS: usize = 128;

/// `ErrNoNodesAvailable`.
const NO_NODES: &str = "no nodes available to schedule pods";

pub struct Scheduler {
    pub client: kube::Client,
    pub clock: Clock,
    pub cache: Cache,
    pub queue: SchedulingQueue,
    pub pods: informer::Cache<Pod>,
    pub volumes: Volumes,
    pub recorder: Recorder,
    pub binds: Arc<Semaphore>,
}

/// `numFeasibleNodesToFind` with the default `percentageOfNodesToScore`: every node up to 100,
/// then an adaptive share (50% less 1% per 125 nodes, at least 5%), at least 100.
fn nodes_to_find(all: usize) -> usize {
    if all < 100 {
        return all;
    }
    let percentage = 50usize.saturating_sub(all / 125).max(5);
    (all * percentage / 100).max(100)
}

/// Filter and Score over the cached nodes, starting where the last search stopped; the best
/// node (ties at random), or every node's rejection.
fn select(
    st: &mut State,
    pod: &Pod,
    volume_terms: &[Vec<Term>],
) -> Result<String, (usize, Vec<Rejection>)> {
    let (outcome, processed, all) = {
        let nodes: Vec<_> = st
            .nodes
            .iter()
            .filter_map(|(name, e)| e.node.as_ref().map(|n| (name, n, &e.usage)))
            .collect();
        let all = nodes.len();
        if all == 0 {
            return Err((0, Vec::new()));
        }
        let want = nodes_to_find(all);
        let start = st.next_start % all;
        let (mut best, mut best_score, mut ties) = (None, i64::MIN, 0u32);
        let (mut feasible, mut processed) = (0, 0);
        let mut rejections = Vec::new();
        for i in 0..all {
            let (name, node, usage) = nodes[(start + i) % all];
            processed += 1;
            match filter(&pod.spec, name, node, usage, volume_terms) {
                Ok(()) => {
                    feasible += 1;
                    let s = score(&pod.spec, node, usage);
                    if s > best_score {
                        (best, best_score, ties) = (Some(name), s, 1);
                    } else if s == best_score {
                        ties += 1;
                        if fastrand::u32(0..ties) == 0 {
                            best = Some(name);
                        }
                    }
                    if feasible >= want {
                        break;
                    }
                }
                Err(r) => rejections.push(r),
            }
        }
        let outcome = best.cloned().ok_or(rejections);
        ((outcome, start), processed, all)
    };
    let (outcome, start) = outcome;
    st.next_start = (start + processed) % all;
    outcome.map_err(|r| (all, r))
}

impl Scheduler {
    /// One scheduling cycle for the pod `key`; `permit` is a binding slot.
    pub fn schedule_one(self: &Arc<Self>, key: Key, permit: OwnedSemaphorePermit) {
        let Some(pod) = self.pods.get(&key) else {
            self.queue.forget(&key);
            return;
        };
        if !pod.pending() || self.cache.lock().is_assumed(&key) {
            return;
        }
        let moves = self.queue.moves();
        if let Some(problem) = pod.spec.problem.clone() {
            self.queue.error(&key);
            return self.report(key, pod, "SchedulerError", problem);
        }
        let prepared = match self.volumes.prepare(&key.0, &pod.spec.claims) {
            Ok(p) => p,
            Err(msg) => {
                let nodes = self
                    .cache
                    .lock()
                    .nodes
                    .values()
                    .filter(|e| e.node.is_some())
                    .count();
                self.queue.unschedulable(&key, moves);
                let message = fit_error(nodes, Some(&msg), &[], pod.spec.never_preempts);
                return self.report(key, pod, "Unschedulable", message);
            }
        };
        let chosen = {
            let mut st = self.cache.lock();
            let chosen = select(&mut st, &pod, &prepared.node_terms);
            if let Ok(node) = &chosen {
                st.assume(key.clone(), node, Arc::clone(&pod.spec));
            }
            chosen
        };
        match chosen {
            Ok(node) => {
                let this = Arc::clone(self);
                tokio::spawn(async move {
                    this.bind(key, pod, node, prepared.to_provision, permit)
                        .await
                });
            }
            Err((0, _)) => {
                self.queue.unschedulable(&key, moves);
                self.report(key, pod, "Unschedulable", NO_NODES.to_owned());
            }
            Err((nodes, rejections)) => {
                self.queue.unschedulable(&key, moves);
                let message = fit_error(nodes, None, &rejections, pod.spec.never_preempts);
                self.report(key, pod, "Unschedulable", message);
            }
        }
    }

    /// The binding cycle: volumes first, then the pod; on failure the assumption goes and the
    /// pod is tried again after its back-off.
    async fn bind(
        self: Arc<Self>,
        key: Key,
        pod: Pod,
        node: String,
        to_provision: Vec<String>,
        permit: OwnedSemaphorePermit,
    ) {
        let result = async {
            if !to_provision.is_empty() {
                self.volumes
                    .bind(&self.client, &key.0, &to_provision, &node)
                    .await?;
            }
            let binding = Binding {
                metadata: ObjectMeta {
                    name: Some(key.1.clone()),
                    namespace: Some(key.0.clone()),
                    uid: Some(pod.uid.clone()),
                    ..ObjectMeta::default()
                },
                target: ObjectReference {
                    kind: Some("Node".into()),
                    name: Some(node.clone()),
                    ..ObjectReference::default()
                },
            };
            kube::Api::<PodObject>::namespaced(self.client.clone(), &key.0)
                .create_subresource::<_, Status>(
                    "binding",
                    &key.1,
                    &PostParams::default(),
                    &binding,
                )
                .await?;
            Ok::<_, Error>(())
        }
        .await;
        drop(permit);
        match result {
            Ok(()) => {
                self.queue.forget(&key);
                self.recorder.forget(&key.0, &key.1);
                let message = format!("Successfully assigned {}/{} to {node}", key.0, key.1);
                self.recorder
                    .normal(involved(&key, &pod), "Scheduled", message);
            }
            Err(e) => {
                // What the assumption held is free again: pods judged against it may fit.
                self.cache.forget(&key);
                self.queue.move_all();
                if e.is_not_found() {
                    self.queue.forget(&key);
                    return;
                }
                tracing::warn!(pod = %describe(&key), %node, error = %e, "binding failed; retrying");
                self.queue.error(&key);
                self.report(key, pod, "SchedulerError", format!("binding rejected: {e}"));
            }
        }
    }

    /// Reports a failed attempt: the `PodScheduled=False` condition (written when it changes)
    /// and a `FailedScheduling` Warning, in the background.
    fn report(self: &Arc<Self>, key: Key, pod: Pod, reason: &str, message: String) {
        let this = Arc::clone(self);
        let reason = reason.to_owned();
        tokio::spawn(async move {
            if let Err(e) = this.write_condition(&key, &pod, &reason, &message).await {
                tracing::warn!(pod = %describe(&key), error = %e, "writing the PodScheduled condition failed");
            }
            // Events carry at most 1024 characters of the message (`truncateMessage`).
            let note: String = message.chars().take(1024).collect();
            this.recorder
                .warning(involved(&key, &pod), "FailedScheduling", note);
        });
    }

    /// `updatePod`: a strategic-merge patch of the `PodScheduled` condition, only when it
    /// changes; its transition time moves only when its status does.
    async fn write_condition(
        &self,
        key: &Key,
        pod: &Pod,
        reason: &str,
        message: &str,
    ) -> Result<(), Error> {
        let want = Condition {
            status: "False".into(),
            reason: reason.into(),
            message: message.into(),
        };
        if pod.scheduled.as_ref() == Some(&want) {
            return Ok(());
        }
        let mut condition = json!({
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastProbeTime": null,
        });
        if pod.scheduled.as_ref().is_none_or(|c| c.status != "False") {
            condition["lastTransitionTime"] = json!(format_time(self.clock.now()));
        }
        let patch = json!({"status": {"conditions": [condition]}});
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        kube::Api::<PodObject>::namespaced(self.client.clone(), &key.0)
            .patch_status(&key.1, &params, &Patch::Strategic(&patch))
            .await?;
        Ok(())
    }
}

/// The pod an event is about.
fn involved(key: &Key, pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(key.0.clone()),
        name: Some(key.1.clone()),
        uid: Some(pod.uid.clone()),
        ..ObjectReference::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn how_many_nodes_are_searched() {
        assert_eq!(nodes_to_find(5), 5);
        assert_eq!(nodes_to_find(100), 100);
        assert_eq!(nodes_to_find(1000), 420);
        assert_eq!(nodes_to_find(5000), 500);
        assert_eq!(nodes_to_find(200), 100);
    }
}
