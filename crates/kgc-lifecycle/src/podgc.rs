//! PodGC (upstream `pkg/controller/podgc/gc_controller.go`): every period it judges the cached
//! pods and nodes in four passes, in upstream's order:
//!
//! 1. terminated pods beyond the threshold, evicted first, then oldest ([`plan_terminated`]);
//! 2. terminating pods on not-Ready nodes tainted `node.kubernetes.io/out-of-service`
//!    ([`plan_terminating`]);
//! 3. pods bound to nodes that are gone: a missing node is quarantined for 40 s, then confirmed
//!    missing by the cache of this pass *and* a live GET ([`orphan_nodes`], [`pods_on`]);
//! 4. terminating pods never scheduled ([`plan_unscheduled_terminating`]).
//!
//! Pods not yet Succeeded/Failed are first marked Failed (passes 2–4; pass 3 adds the
//! `DisruptionTarget` condition), then deleted with grace period 0 and a uid precondition.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kgc_client::Cluster;
use kgc_meta::ResourceInfo;
use serde_json::{Value, json};

use kgc_runtime::informer::{Cache, Key, View, describe, key_of};
use kgc_runtime::queue::WorkQueue;

pub use crate::node::Node;
use crate::{Error, Metrics, Result, Target, grace, str_field, time_field};
use kgc_runtime::Context;

const COLLECTOR: &str = "podgc";

/// Settings (`kube-controller-manager` flags and constants).
#[derive(Debug, Clone)]
pub struct Config {
    /// `gcCheckPeriod`: 20 s.
    pub period: Duration,
    /// `--terminated-pod-gc-threshold`: 12500; 0 disables only the terminated-pod pass.
    pub threshold: usize,
    /// `quarantineTime`: how long a missing node stays missing before its pods go (40 s).
    pub quarantine: Duration,
    /// Concurrent deletions of terminated pods.
    pub parallelism: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            period: Duration::from_secs(20),
            threshold: 12_500,
            quarantine: Duration::from_secs(40),
            parallelism: 50,
        }
    }
}

/// What PodGC keeps of a pod.
#[derive(Debug, Clone, PartialEq)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub phase: String,
    pub reason: String,
    pub node_name: String,
    pub deleting: bool,
    pub created: Option<jiff::Timestamp>,
}

impl Pod {
    /// The view of a pod object; `Err` names the malformed field.
    pub fn from_json(obj: &Value) -> Result<Self> {
        let m = &obj["metadata"];
        let status = &obj["status"];
        if !status.is_null() && !status.is_object() {
            return Err(Error::Invalid {
                object: describe(&key_of(obj)),
                field: "status",
                reason: format!("expected an object, got {status}"),
            });
        }
        Ok(Self {
            namespace: str_field(obj, &m["namespace"], "metadata.namespace")?.to_owned(),
            name: str_field(obj, &m["name"], "metadata.name")?.to_owned(),
            uid: str_field(obj, &m["uid"], "metadata.uid")?.to_owned(),
            phase: str_field(obj, &status["phase"], "status.phase")?.to_owned(),
            reason: str_field(obj, &status["reason"], "status.reason")?.to_owned(),
            node_name: str_field(obj, &obj["spec"]["nodeName"], "spec.nodeName")?.to_owned(),
            deleting: time_field(obj, &m["deletionTimestamp"], "metadata.deletionTimestamp")?
                .is_some(),
            created: time_field(obj, &m["creationTimestamp"], "metadata.creationTimestamp")?,
        })
    }

    /// Upstream `isPodTerminated`: any phase but Pending, Running and Unknown; an empty phase
    /// counts as terminated.
    pub fn terminated(&self) -> bool {
        !matches!(self.phase.as_str(), "Pending" | "Running" | "Unknown")
    }

    /// Upstream `eviction.PodIsEvicted`.
    pub fn evicted(&self) -> bool {
        self.phase == "Failed" && self.reason == "Evicted"
    }

    fn finished(&self) -> bool {
        matches!(self.phase.as_str(), "Succeeded" | "Failed")
    }
}

/// Upstream `byEvictionAndCreationTimestamp`: evicted first, then oldest, then by name.
fn deletion_order(a: &&Pod, b: &&Pod) -> std::cmp::Ordering {
    b.evicted()
        .cmp(&a.evicted())
        .then(a.created.cmp(&b.created))
        .then_with(|| a.name.cmp(&b.name))
}

/// Pass 1: the terminated pods to delete so that exactly `threshold` remain (0 disables).
pub fn plan_terminated<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
    threshold: usize,
) -> Vec<&'a Pod> {
    if threshold == 0 {
        return Vec::new();
    }
    let mut terminated: Vec<&Pod> = pods.into_iter().filter(|p| p.terminated()).collect();
    let Some(excess) = terminated.len().checked_sub(threshold).filter(|n| *n > 0) else {
        return Vec::new();
    };
    if excess < terminated.len() {
        terminated.select_nth_unstable_by(excess, deletion_order);
        terminated.truncate(excess);
    }
    terminated.sort_unstable_by(deletion_order);
    terminated
}

/// Pass 2: terminating pods on known, not-Ready, out-of-service nodes.
pub fn plan_terminating<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
    nodes: &HashMap<Key, Node>,
) -> Vec<&'a Pod> {
    let mut out: Vec<&Pod> = pods
        .into_iter()
        .filter(|p| p.deleting && !p.node_name.is_empty())
        .filter(|p| {
            nodes
                .get(&(String::new(), p.node_name.clone()))
                .is_some_and(|n| !n.ready && n.out_of_service)
        })
        .collect();
    out.sort_unstable_by(deletion_order);
    out
}

/// Pass 3, first half: the node names pods are bound to that the node cache lacks.
pub fn orphan_nodes<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
    nodes: &HashMap<Key, Node>,
) -> BTreeSet<String> {
    pods.into_iter()
        .filter(|p| !p.node_name.is_empty())
        .filter(|p| !nodes.contains_key(&(String::new(), p.node_name.clone())))
        .map(|p| p.node_name.clone())
        .collect()
}

/// Pass 3, second half: the pods bound to nodes confirmed deleted.
pub fn pods_on<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
    deleted: &BTreeSet<String>,
) -> Vec<&'a Pod> {
    pods.into_iter()
        .filter(|p| deleted.contains(&p.node_name))
        .collect()
}

/// Pass 4: terminating pods with no node.
pub fn plan_unscheduled_terminating<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Vec<&'a Pod> {
    pods.into_iter()
        .filter(|p| p.deleting && p.node_name.is_empty())
        .collect()
}

impl View for Pod {
    fn view(obj: &Value) -> Option<Self> {
        Pod::from_json(obj).map_err(|e| tracing::warn!(collector = COLLECTOR, error = %e, "skipping a pod that cannot be judged")).ok()
    }
}

/// The condition pass 3 adds (upstream `gcOrphaned`).
pub fn orphaned_condition(now: jiff::Timestamp) -> Value {
    json!({
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByPodGC",
        "message": "PodGC: node no longer exists",
        "lastTransitionTime": kgc_meta::time::format_time(now),
    })
}

/// The running collector: caches of pods and nodes and the quarantine of missing nodes.
pub struct PodGc<C> {
    ctx: Context<C>,
    metrics: Arc<Metrics>,
    config: Config,
    pods_resource: Arc<ResourceInfo>,
    nodes_resource: Arc<ResourceInfo>,
    pods: Cache<Pod>,
    nodes: Cache<Node>,
    quarantine: WorkQueue<String>,
}

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PassReport {
    pub terminated: usize,
    pub terminating: usize,
    pub orphaned: usize,
    pub unscheduled: usize,
    /// Time spent deciding (reading the cache, planning), without the deletions.
    pub plan_time: Duration,
}

impl<C: Cluster> PodGc<C> {
    /// Starts the caches and waits for their first lists.
    pub async fn start(ctx: Context<C>, config: Config, metrics: Arc<Metrics>) -> Self {
        let pods_resource = ctx.informers.resource("", "pods").await;
        let nodes_resource = ctx.informers.resource("", "nodes").await;
        let pods = ctx.informers.cache::<Pod>(Arc::clone(&pods_resource));
        let nodes = ctx.informers.cache::<Node>(Arc::clone(&nodes_resource));
        pods.synced().await;
        nodes.synced().await;
        // Upstream's queue of the nodes under quarantine (`pkg/controller/podgc`).
        let quarantine = ctx.queue("orphaned_pods_nodes");
        Self {
            ctx,
            metrics,
            config,
            pods_resource,
            nodes_resource,
            pods,
            nodes,
            quarantine,
        }
    }

    /// Pods the cache holds (benchmarks wait on it).
    pub fn cached_pods(&self) -> usize {
        self.pods.len()
    }

    /// One pass of the four rules.
    pub async fn pass(&self) -> PassReport {
        let started = Instant::now();
        let nodes: HashMap<Key, Node> = self.nodes.read(|m| m.clone());
        let (terminated, terminating, missing) = self.pods.read(|pods| {
            (
                owned(plan_terminated(pods.values(), self.config.threshold)),
                owned(plan_terminating(pods.values(), &nodes)),
                orphan_nodes(pods.values(), &nodes),
            )
        });
        for n in missing {
            self.quarantine.add_after(n, self.config.quarantine);
        }
        let mut report = PassReport {
            plan_time: started.elapsed(),
            ..PassReport::default()
        };
        self.metrics.pass(COLLECTOR);

        // 1. Terminated, in parallel (upstream deletes them concurrently).
        report.terminated = futures::stream::iter(terminated)
            .map(|p| async move { self.force_delete(&p, "terminated", None).await })
            .buffer_unordered(self.config.parallelism.max(1))
            .filter(|ok| std::future::ready(*ok))
            .count()
            .await;
        // 2. Terminating on out-of-service nodes.
        report.terminating = futures::stream::iter(terminating)
            .map(|p| async move { self.force_delete(&p, "out-of-service", None).await })
            .buffer_unordered(self.config.parallelism.max(1))
            .filter(|ok| std::future::ready(*ok))
            .count()
            .await;
        // 3. Orphaned: nodes quarantined long enough, still missing from the cache as read at
        // the start of this pass, and missing in a live GET.
        let mut deleted = BTreeSet::new();
        for node in self.quarantine.drain_due() {
            if nodes.contains_key(&(String::new(), node.clone())) {
                continue;
            }
            match self
                .ctx
                .cluster()
                .get(&self.nodes_resource, "", &node)
                .await
            {
                Ok(None) => {
                    deleted.insert(node);
                }
                Ok(Some(_)) => {}
                Err(e) => {
                    tracing::warn!(collector = COLLECTOR, %node, error = %e, "checking whether a node exists; retrying next pass");
                }
            }
        }
        if !deleted.is_empty() {
            let orphans = self
                .pods
                .read(|pods| owned(pods_on(pods.values(), &deleted)));
            let condition = orphaned_condition(self.ctx.clock.now());
            for p in orphans {
                if self.force_delete(&p, "orphaned", Some(&condition)).await {
                    report.orphaned += 1;
                }
            }
        }
        // 4. Unscheduled terminating, one after another.
        let unscheduled = self
            .pods
            .read(|pods| owned(plan_unscheduled_terminating(pods.values())));
        for p in unscheduled {
            if self.force_delete(&p, "unscheduled", None).await {
                report.unscheduled += 1;
            }
        }
        report
    }

    /// Upstream `markFailedAndDeletePodWithCondition`: a pod not yet Succeeded/Failed has its
    /// status set to Failed (with the condition) first; then it is deleted with grace period 0
    /// and a uid precondition. False when nothing was deleted.
    async fn force_delete(
        &self,
        pod: &Pod,
        reason: &'static str,
        condition: Option<&Value>,
    ) -> bool {
        let key = (pod.namespace.clone(), pod.name.clone());
        if !pod.finished()
            && let Err(e) = self.mark_failed(pod, condition).await
        {
            self.metrics.error(COLLECTOR, reason);
            tracing::warn!(collector = COLLECTOR, pod = %describe(&key), error = %e, "marking the pod Failed; retrying next pass");
            return false;
        }
        let target = Target {
            resource: &self.pods_resource,
            namespace: &pod.namespace,
            name: &pod.name,
            uid: &pod.uid,
        };
        crate::delete(
            &self.ctx,
            &self.metrics,
            (COLLECTOR, reason),
            target,
            grace(0),
        )
        .await
        .unwrap_or(false)
    }

    async fn mark_failed(&self, pod: &Pod, condition: Option<&Value>) -> Result<()> {
        let Some(mut live) = self
            .ctx
            .cluster()
            .get_object(&self.pods_resource, &pod.namespace, &pod.name)
            .await?
        else {
            return Ok(());
        };
        if live["metadata"]["uid"] != pod.uid.as_str() {
            return Ok(());
        }
        let status = match live.get_mut("status") {
            Some(Value::Object(s)) => s,
            _ => {
                live["status"] = json!({});
                live["status"]
                    .as_object_mut()
                    .ok_or_else(|| Error::Invalid {
                        object: describe(&(pod.namespace.clone(), pod.name.clone())),
                        field: "status",
                        reason: "not an object".into(),
                    })?
            }
        };
        if matches!(
            status.get("phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        ) {
            return Ok(());
        }
        status.insert("phase".into(), "Failed".into());
        if let Some(c) = condition {
            let conditions = status.entry("conditions").or_insert_with(|| json!([]));
            if let Some(list) = conditions.as_array_mut() {
                list.retain(|x| x["type"] != c["type"]);
                list.push(c.clone());
            }
        }
        self.ctx
            .cluster()
            .replace_status(&self.pods_resource, &pod.namespace, &pod.name, live)
            .await?;
        Ok(())
    }
}

fn owned(pods: Vec<&Pod>) -> Vec<Pod> {
    pods.into_iter().cloned().collect()
}

/// Runs PodGC every period until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config, metrics: Arc<Metrics>) {
    let period = config.period;
    let gc = PodGc::start(ctx, config, metrics).await;
    tracing::info!(
        collector = COLLECTOR,
        ?period,
        threshold = gc.config.threshold,
        "started"
    );
    let mut tick = crate::every(period);
    loop {
        tick.tick().await;
        let r = gc.pass().await;
        tracing::debug!(collector = COLLECTOR, ?r, "pass");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pods created one hour apart in list order, as upstream's tests create them.
    fn pods(specs: &[(&str, &str, &str)]) -> Vec<Pod> {
        let base: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        specs
            .iter()
            .enumerate()
            .map(|(i, (name, phase, node))| Pod {
                namespace: "default".into(),
                name: (*name).into(),
                uid: format!("uid-{name}"),
                phase: (*phase).into(),
                reason: String::new(),
                node_name: (*node).into(),
                deleting: false,
                created: Some(base + jiff::SignedDuration::from_hours(i as i64)),
            })
            .collect()
    }

    fn names(ps: &[&Pod]) -> Vec<String> {
        let mut n: Vec<String> = ps.iter().map(|p| p.name.clone()).collect();
        n.sort();
        n
    }

    #[test]
    fn test_gc_terminated() {
        // (upstream case name, pods (name, phase, evicted), threshold, deleted)
        type Case<'a> = (
            &'a str,
            &'a [(&'a str, &'a str, bool)],
            usize,
            &'a [&'a str],
        );
        let cases: &[Case] = &[
            (
                "delete pod a which is PodFailed and pod b which is PodSucceeded",
                &[
                    ("a", "Failed", false),
                    ("b", "Succeeded", false),
                    ("c", "Failed", false),
                ],
                1,
                &["a", "b"],
            ),
            (
                "threshold = 0, disables terminated pod deletion",
                &[("a", "Failed", false), ("b", "Succeeded", false)],
                0,
                &[],
            ),
            (
                "threshold = 1, delete pod b which is PodSucceeded",
                &[
                    ("a", "Running", false),
                    ("b", "Succeeded", false),
                    ("c", "Failed", false),
                ],
                1,
                &["b"],
            ),
            (
                "threshold = 1, delete pod a which is PodFailed",
                &[("a", "Failed", false), ("b", "Succeeded", false)],
                1,
                &["a"],
            ),
            (
                "threshold = 5, don't delete pod",
                &[("a", "Failed", false), ("b", "Succeeded", false)],
                5,
                &[],
            ),
            (
                "delete evicted pods first",
                &[
                    ("a", "Failed", false),
                    ("b", "Succeeded", false),
                    ("c", "Failed", true),
                ],
                1,
                &["a", "c"],
            ),
            (
                "delete evicted pod c",
                &[
                    ("a", "Running", false),
                    ("b", "Succeeded", false),
                    ("c", "Failed", true),
                ],
                1,
                &["c"],
            ),
        ];
        for (name, specs, threshold, want) in cases {
            let mut ps = pods(
                &specs
                    .iter()
                    .map(|(n, p, _)| (*n, *p, "node"))
                    .collect::<Vec<_>>(),
            );
            for (p, (_, _, evicted)) in ps.iter_mut().zip(specs.iter()) {
                if *evicted {
                    p.reason = "Evicted".into();
                }
            }
            let got = plan_terminated(&ps, *threshold);
            assert_eq!(names(&got), *want, "{name}");
        }
    }

    #[test]
    fn evicted_pods_go_first_then_the_oldest() {
        let mut ps = pods(&[
            ("a", "Failed", ""),
            ("b", "Succeeded", ""),
            ("c", "Failed", ""),
        ]);
        ps[2].reason = "Evicted".into();
        let got = plan_terminated(&ps, 1);
        assert_eq!(
            got.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["c", "a"]
        );
    }

    #[test]
    fn an_empty_phase_counts_as_terminated() {
        let ps = pods(&[("a", "", ""), ("b", "Succeeded", "")]);
        assert_eq!(names(&plan_terminated(&ps, 1)), ["a"]);
    }

    fn node(ready: bool, oos: bool) -> Node {
        Node {
            uid: String::new(),
            created: None,
            ready,
            out_of_service: oos,
        }
    }

    fn node_map(nodes: &[(&str, Node)]) -> HashMap<Key, Node> {
        nodes
            .iter()
            .map(|(n, v)| ((String::new(), (*n).to_owned()), v.clone()))
            .collect()
    }

    #[test]
    fn test_gc_orphaned() {
        // "pods on existing nodes (in the informer)": nothing queued.
        let nodes = node_map(&[
            ("existing1", node(true, false)),
            ("existing2", node(true, false)),
        ]);
        let ps = pods(&[("a", "Running", "existing1"), ("b", "Running", "existing2")]);
        assert!(orphan_nodes(&ps, &nodes).is_empty());
        // "a Failed, b Succeeded on deleted": both deleted once the node is confirmed gone.
        let nodes = node_map(&[("existing", node(true, false))]);
        let ps = pods(&[
            ("a", "Failed", "deleted"),
            ("b", "Failed", "existing"),
            ("c", "Succeeded", "deleted"),
            ("d", "Running", "deleted"),
        ]);
        let missing = orphan_nodes(&ps, &nodes);
        assert_eq!(missing.iter().collect::<Vec<_>>(), ["deleted"]);
        assert_eq!(names(&pods_on(&ps, &missing)), ["a", "c", "d"]);
        // Only d is not finished: it alone is marked Failed before deletion.
        let to_patch: Vec<_> = pods_on(&ps, &missing)
            .into_iter()
            .filter(|p| !p.finished())
            .collect();
        assert_eq!(names(&to_patch), ["d"]);
    }

    #[test]
    fn test_gc_unscheduled_terminating() {
        let mut ps = pods(&[
            ("a", "Failed", ""),
            ("b", "Succeeded", ""),
            ("c", "Running", ""),
        ]);
        for p in &mut ps {
            p.deleting = true;
        }
        assert_eq!(names(&plan_unscheduled_terminating(&ps)), ["a", "b", "c"]);
        // "Unscheduled pod in any phase must not be deleted, the phase of the running pod must
        // not be changed": not deleting, or scheduled.
        let mut ps = pods(&[
            ("a", "Failed", ""),
            ("b", "Succeeded", "node"),
            ("c", "Running", ""),
        ]);
        ps[1].deleting = true;
        assert!(plan_unscheduled_terminating(&ps).is_empty());
    }

    #[test]
    fn test_gc_terminating() {
        // "pods have deletion timestamp set and the corresponding nodes are not ready": no
        // out-of-service taint, nothing deleted.
        let nodes = node_map(&[
            ("worker-0", node(false, false)),
            ("worker-1", node(false, false)),
        ]);
        let mut ps = pods(&[("a", "Running", "worker-0"), ("b", "Running", "worker-1")]);
        for p in &mut ps {
            p.deleting = true;
        }
        assert!(plan_terminating(&ps, &nodes).is_empty());
        // "some pods have deletion timestamp and/or phase set and some of the corresponding
        // nodes have an outofservice taint that are not ready".
        let nodes = node_map(&[
            ("worker-0", node(false, true)),
            ("worker-1", node(false, false)),
            ("worker-2", node(true, false)),
            ("worker-3", node(false, true)),
            ("worker-4", node(false, true)),
            ("worker-5", node(false, true)),
        ]);
        let mut ps = pods(&[
            ("a", "", "worker-0"),
            ("b", "", "worker-0"),
            ("c", "", "worker-1"),
            ("d", "", "worker-2"),
            ("e", "", "worker-3"),
            ("f", "", "worker-4"),
            ("g", "", "worker-5"),
        ]);
        for p in &mut ps {
            p.deleting = p.name != "a";
        }
        assert_eq!(names(&plan_terminating(&ps, &nodes)), ["b", "e", "f", "g"]);
        // "pods deleted from node tained out-of-service; PodGC resets the phase of running
        // pods": every deleting pod on the node goes, the running one is patched.
        let nodes = node_map(&[("worker", node(false, true))]);
        let mut ps = pods(&[
            ("a", "Running", "worker"),
            ("b", "Failed", "worker"),
            ("c", "Succeeded", "worker"),
        ]);
        for p in &mut ps {
            p.deleting = true;
        }
        let got = plan_terminating(&ps, &nodes);
        assert_eq!(names(&got), ["a", "b", "c"]);
        assert_eq!(
            names(
                &got.into_iter()
                    .filter(|p| !p.finished())
                    .collect::<Vec<_>>()
            ),
            ["a"]
        );
    }

    #[test]
    fn malformed_pods_are_named_and_not_judged() {
        let bad = json!({"metadata": {"namespace": "n", "name": "p"}, "status": "Failed"});
        let e = Pod::from_json(&bad).unwrap_err().to_string();
        assert!(e.contains("n/p") && e.contains("status"), "{e}");
        let bad = json!({"metadata": {"namespace": "n", "name": "p"}, "status": {"phase": 3}});
        assert!(
            Pod::from_json(&bad)
                .unwrap_err()
                .to_string()
                .contains("status.phase")
        );
        let bad =
            json!({"metadata": {"namespace": "n", "name": "p", "creationTimestamp": "yesterday"}});
        assert!(
            Pod::from_json(&bad)
                .unwrap_err()
                .to_string()
                .contains("creationTimestamp")
        );
    }

    #[test]
    fn a_pass_over_many_pods_keeps_exactly_the_threshold() {
        let specs: Vec<(String, &str)> = (0..1000)
            .map(|i| {
                (
                    format!("p{i:04}"),
                    if i % 5 == 0 { "Succeeded" } else { "Running" },
                )
            })
            .collect();
        let ps = pods(
            &specs
                .iter()
                .map(|(n, p)| (n.as_str(), *p, "node"))
                .collect::<Vec<_>>(),
        );
        let got = plan_terminated(&ps, 150);
        assert_eq!(got.len(), 50);
        // The oldest terminated ones.
        assert_eq!(got[0].name, "p0000");
        assert_eq!(got[49].name, "p0245");
    }

    /// One pass against the real store: the threshold, an unscheduled terminating pod (marked
    /// Failed, force-deleted, kept by its finalizer), a terminating pod on a not-Ready
    /// out-of-service node, and a pod whose status is malformed (never touched).
    #[tokio::test]
    async fn a_pass_against_the_store() {
        let store = kgc_store::Store::in_memory().await.unwrap();
        let find = |plural: &str| {
            store
                .catalog()
                .resources()
                .find(|r| r.group.is_empty() && r.plural == plural)
                .cloned()
                .unwrap()
        };
        let (pods, nodes, namespaces) = (find("pods"), find("nodes"), find("namespaces"));
        store
            .create(&namespaces, "", json!({"metadata": {"name": "t"}}), false)
            .await
            .unwrap();
        let node = json!({"metadata": {"name": "oos"},
            "spec": {"taints": [{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}]},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        store.create(&nodes, "", node, false).await.unwrap();
        let set_status = |name: &'static str, status: Value| {
            let (store, pods) = (store.clone(), Arc::clone(&pods));
            async move {
                store
                    .update(&pods, "t", name, Some("status"), false, move |mut o| {
                        o["status"] = status;
                        Ok(o)
                    })
                    .await
            }
        };
        for (name, node, finalizer) in [
            ("done-0", "", false),
            ("done-1", "", false),
            ("done-2", "", false),
            ("unscheduled", "", true),
            ("on-oos", "oos", true),
            ("odd", "", false),
        ] {
            let mut pod = json!({"metadata": {"name": name},
                "spec": {"containers": [{"name": "c", "image": "i"}]}});
            if !node.is_empty() {
                pod["spec"]["nodeName"] = json!(node);
            }
            if finalizer {
                pod["metadata"]["finalizers"] = json!(["example.com/keep"]);
            }
            store.create(&pods, "t", pod, false).await.unwrap();
        }
        for name in ["done-0", "done-1", "done-2"] {
            set_status(name, json!({"phase": "Succeeded"}))
                .await
                .unwrap();
        }
        // The store may refuse a status that is not an object; if it takes it, PodGC must
        // leave the pod alone (it would otherwise count as terminated: no phase).
        let odd_stored = set_status("odd", json!("garbage")).await.is_ok();
        for name in ["unscheduled", "on-oos"] {
            store
                .delete(&pods, "t", name, &kgc_meta::DeleteOptions::default())
                .await
                .unwrap();
        }
        let cluster = kgc_testcluster::TestCluster::over(store.clone());
        let metrics = Arc::new(Metrics::default());
        let config = Config {
            threshold: 2,
            ..Config::default()
        };
        let gc = PodGc::start(cluster.context(), config, Arc::clone(&metrics)).await;
        let report = gc.pass().await;
        let live = |name: &str| {
            store
                .get(&pods.group_resource(), "t", name)
                .map(|o| o.value())
        };
        assert_eq!(report.terminated, 1, "{report:?}");
        assert!(live("done-0").is_none() && live("done-1").is_some() && live("done-2").is_some());
        assert_eq!(report.terminating, 1, "{report:?}");
        assert_eq!(report.unscheduled, 1, "{report:?}");
        for name in ["unscheduled", "on-oos"] {
            let pod = live(name).expect("kept by its finalizer");
            assert_eq!(pod["status"]["phase"], "Failed", "{name}");
            assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 0, "{name}");
        }
        assert!(live("odd").is_some());
        if odd_stored {
            assert_eq!(metrics.deleted_count(COLLECTOR, "terminated"), 1);
        }
    }
}
