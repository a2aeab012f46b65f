//! kube-controller-manager's node lifecycle controller (kubernetes
//! `pkg/controller/nodelifecycle/node_lifecycle_controller.go`), for every Node:
//!
//! - `monitorNodeHealth`, every `--node-monitor-period`: a node's probe time moves when its
//!   Ready heartbeat changes or its Lease is renewed; once it is older than
//!   `--node-monitor-grace-period` (`--node-startup-grace-period` for a node that never posted
//!   Ready), its Ready, MemoryPressure, DiskPressure and PIDPressure conditions become Unknown
//!   ("NodeStatusUnknown", "Kubelet stopped posting node status."), in one status update;
//! - `processTaintBaseEviction`: a node Ready=False gets `node.kubernetes.io/not-ready:NoExecute`,
//!   Ready=Unknown `node.kubernetes.io/unreachable:NoExecute` (mutually exclusive), Ready=True
//!   neither; `handleDisruption`: when every zone is fully disrupted (no Ready node at all) the
//!   NoExecute taints are removed and none are added, and a zone in partial disruption
//!   (more than 2 and at least 55 % of its nodes not Ready) gets no new ones unless it is
//!   larger than 50 nodes (upstream's eviction rate there is 0);
//! - `doNoScheduleTaintingPass`, on every Node change: the NoSchedule taints follow the
//!   conditions (`nodeConditionToTaintKeyStatusMap`) and `spec.unschedulable`;
//! - `MarkPodsNotReady` (`pkg/controller/util/node/controller_utils.go`): when this controller
//!   turns a node's Ready from True, the Ready condition of every pod bound to it becomes False.
//!
//! Not here: events (`RegisteredNode`, `NodeNotReady`), and the pods assigned to a node already
//! not Ready (`processPod`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kgc_client::Cluster;
use kgc_runtime::Context;
use kgc_runtime::events::Recorder;
use kgc_runtime::informer::{Cache, Key, View};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::{NODE_LEASE_NAMESPACE, NodeObject, Result, is_status, node_reference};

/// The name `--controllers` knows it by.
pub const NAME: &str = "node-lifecycle";
/// Upstream's field manager and event source for this controller.
const MANAGER: &str = "node-controller";

pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
const NO_SCHEDULE: &str = "NoSchedule";
const NO_EXECUTE: &str = "NoExecute";

/// `nodeConditionToTaintKeyStatusMap`: (condition, status) → taint key.
const CONDITION_TAINTS: [(&str, &str, &str); 6] = [
    ("Ready", "False", NOT_READY),
    ("Ready", "Unknown", UNREACHABLE),
    (
        "MemoryPressure",
        "True",
        "node.kubernetes.io/memory-pressure",
    ),
    ("DiskPressure", "True", "node.kubernetes.io/disk-pressure"),
    (
        "NetworkUnavailable",
        "True",
        "node.kubernetes.io/network-unavailable",
    ),
    ("PIDPressure", "True", "node.kubernetes.io/pid-pressure"),
];

/// The conditions a silent kubelet's node gets as Unknown (NetworkUnavailable is the control
/// plane's).
const KUBELET_CONDITIONS: [&str; 4] = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// Settings, with kube-controller-manager's flag names and defaults.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--node-monitor-period`.
    pub monitor_period: Duration,
    /// `--node-monitor-grace-period` (50 s since Kubernetes 1.32).
    pub grace_period: Duration,
    /// `--node-startup-grace-period`.
    pub startup_grace_period: Duration,
    /// `--unhealthy-zone-threshold`.
    pub unhealthy_zone_threshold: f64,
    /// `--large-cluster-size-threshold`.
    pub large_cluster_size_threshold: usize,
    /// `--node-eviction-rate`: nodes a second getting NoExecute taints per zone.
    pub eviction_rate: f64,
    /// `--secondary-node-eviction-rate`: the same in a large zone in partial disruption.
    pub secondary_eviction_rate: f64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            monitor_period: Duration::from_secs(5),
            grace_period: Duration::from_secs(50),
            startup_grace_period: Duration::from_secs(60),
            unhealthy_zone_threshold: 0.55,
            large_cluster_size_threshold: 50,
            eviction_rate: 0.1,
            secondary_eviction_rate: 0.01,
        }
    }
}

/// What the controller remembers of a node's health (`nodeHealthData`).
#[derive(Debug, Clone, Default)]
struct Health {
    /// When a heartbeat was last seen, by this controller's clock.
    probe: Option<Timestamp>,
    ready_heartbeat: Option<Timestamp>,
    lease_renewal: Option<Timestamp>,
}

/// A zone's state (`ZoneState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneState {
    Normal,
    PartialDisruption,
    FullDisruption,
}

/// `ComputeZoneState`: from the Ready statuses of a zone's nodes.
pub fn zone_state<'a>(
    ready: impl IntoIterator<Item = Option<&'a str>>,
    threshold: f64,
) -> ZoneState {
    let (mut up, mut down) = (0usize, 0usize);
    for r in ready {
        if r == Some("True") {
            up += 1;
        } else {
            down += 1;
        }
    }
    if up == 0 && down > 0 {
        ZoneState::FullDisruption
    } else if down > 2 && down as f64 / (up + down) as f64 >= threshold {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    }
}

/// `nodetopology.GetZoneKey`: region and zone labels (GA, else beta); empty for none.
fn zone_key(node: &Node) -> String {
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let get = |ga: &str, beta: &str| {
        labels
            .get(ga)
            .or_else(|| labels.get(beta))
            .cloned()
            .unwrap_or_default()
    };
    let region = get(
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/region",
    );
    let zone = get(
        "topology.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/zone",
    );
    if region.is_empty() && zone.is_empty() {
        String::new()
    } else {
        format!("{region}:\x00:{zone}")
    }
}

fn condition<'a>(node: &'a Node, type_: &str) -> Option<&'a NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// The kubelet went silent: its conditions become Unknown (those it never posted are added
/// as never updated). Returns whether Ready changed.
pub fn mark_unknown(node: &mut Node, now: Timestamp) -> bool {
    let before = condition(node, "Ready").cloned();
    let created = node.metadata.creation_timestamp.clone();
    let conditions = node
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    for type_ in KUBELET_CONDITIONS {
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            None => conditions.push(NodeCondition {
                type_: type_.into(),
                status: "Unknown".into(),
                reason: Some("NodeStatusNeverUpdated".into()),
                message: Some("Kubelet never posted node status.".into()),
                last_heartbeat_time: created.clone(),
                last_transition_time: Some(Time(now)),
            }),
            Some(c) if c.status != "Unknown" => {
                c.status = "Unknown".into();
                c.reason = Some("NodeStatusUnknown".into());
                c.message = Some("Kubelet stopped posting node status.".into());
                c.last_transition_time = Some(Time(now));
            }
            Some(_) => {}
        }
    }
    condition(node, "Ready") != before.as_ref()
}

fn taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
}

fn has_taint(node: &Node, key: &str, effect: &str) -> bool {
    taints(node)
        .iter()
        .any(|t| t.key == key && t.effect == effect)
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        effect: effect.into(),
        ..Taint::default()
    }
}

/// `doNoScheduleTaintingPass`: the NoSchedule taints the conditions and `spec.unschedulable`
/// call for, against those the node has: (to add, to remove).
pub fn no_schedule_diff(node: &Node) -> (Vec<Taint>, Vec<Taint>) {
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let mut want: Vec<Taint> = conditions
        .iter()
        .filter_map(|c| {
            CONDITION_TAINTS
                .iter()
                .find(|(t, s, _)| *t == c.type_ && *s == c.status)
        })
        .map(|(_, _, key)| taint(key, NO_SCHEDULE))
        .collect();
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        want.push(taint(UNSCHEDULABLE, NO_SCHEDULE));
    }
    let have: Vec<&Taint> = taints(node)
        .iter()
        .filter(|t| {
            t.effect == NO_SCHEDULE
                && (t.key == UNSCHEDULABLE || CONDITION_TAINTS.iter().any(|(.., k)| *k == t.key))
        })
        .collect();
    let add = want
        .iter()
        .filter(|w| !have.iter().any(|h| h.key == w.key))
        .cloned()
        .collect();
    let remove = have
        .into_iter()
        .filter(|h| !want.iter().any(|w| w.key == h.key))
        .cloned()
        .collect();
    (add, remove)
}

/// The NoExecute taint Ready calls for (`processTaintBaseEviction`): not-ready for False,
/// unreachable for Unknown, none for True.
fn no_execute_for(ready: Option<&str>) -> Option<&'static str> {
    match ready {
        Some("False") => Some(NOT_READY),
        Some("True") => None,
        _ => Some(UNREACHABLE),
    }
}

/// The NoExecute taints (to add, to remove) for a node, given whether the whole cluster is
/// down (then all go, as `handleDisruption` does). A swap of not-ready and unreachable removes
/// one and adds the other; a new taint adds only, and waits for its zone's rate limiter.
pub fn no_execute_diff(node: &Node, all_down: bool) -> (Vec<Taint>, Vec<Taint>) {
    let has = |k: &str| has_taint(node, k, NO_EXECUTE);
    let present: Vec<Taint> = [NOT_READY, UNREACHABLE]
        .into_iter()
        .filter(|k| has(k))
        .map(|k| taint(k, NO_EXECUTE))
        .collect();
    let want = if all_down {
        None
    } else {
        no_execute_for(condition(node, "Ready").map(|c| c.status.as_str()))
    };
    let Some(want) = want else {
        return (Vec::new(), present);
    };
    if has(want) {
        return (
            Vec::new(),
            present.into_iter().filter(|t| t.key != want).collect(),
        );
    }
    (vec![taint(want, NO_EXECUTE)], present)
}

/// How many nodes a second a zone may get new NoExecute taints (`setLimiterInZone`): the
/// eviction rate, in partial disruption the secondary rate for a large zone and none for a
/// small one.
pub fn eviction_rate(state: ZoneState, size: usize, config: &Config) -> f64 {
    match state {
        ZoneState::Normal | ZoneState::FullDisruption => config.eviction_rate,
        ZoneState::PartialDisruption if size > config.large_cluster_size_threshold => {
            config.secondary_eviction_rate
        }
        ZoneState::PartialDisruption => 0.0,
    }
}

/// What the controller keeps of a pod: only pods bound to a node and Ready, those a node
/// going silent marks not Ready.
#[derive(Debug, Clone, PartialEq)]
struct ReadyPod {
    node: String,
}

impl View for ReadyPod {
    fn view(obj: &serde_json::Value) -> Option<Self> {
        let node = obj["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())?;
        let ready = obj["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        ready.then(|| Self {
            node: node.to_owned(),
        })
    }
}

struct Controller<C> {
    ctx: Context<C>,
    recorder: Recorder,
    config: Config,
    nodes: Cache<NodeObject>,
    leases: Cache<Renewed>,
    pods: Cache<ReadyPod>,
    health: Mutex<HashMap<String, Health>>,
    /// When each zone last got a new NoExecute taint.
    tainted: Mutex<HashMap<String, std::time::Instant>>,
}

/// What the controller keeps of a node's Lease: its last renewal (`spec.renewTime`); `None`
/// when it has none or not an RFC 3339 time, and the node's own heartbeat decides then.
#[derive(Debug, Clone, PartialEq)]
struct Renewed(Option<Timestamp>);

impl View for Renewed {
    fn view(obj: &serde_json::Value) -> Option<Self> {
        let at = obj["spec"]["renewTime"].as_str();
        Some(Self(at.and_then(|t| t.parse().ok())))
    }
}

/// Runs the controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config) {
    let node_resource = ctx.informers.resource("", "nodes").await;
    let lease_resource = ctx
        .informers
        .resource("coordination.k8s.io", "leases")
        .await;
    let pod_resource = ctx.informers.resource("", "pods").await;
    let nodes = ctx.informers.cache::<NodeObject>(node_resource);
    let leases = ctx.informers.cache::<Renewed>(lease_resource);
    let pods = ctx.informers.cache::<ReadyPod>(pod_resource);
    let declared = kgc_runtime::Controller::named(&ctx, NAME)
        .watches(&nodes, |key: &Key, node: Option<&NodeObject>| {
            node.map(|_| key.1.clone())
        })
        .reads(&leases)
        .reads(&pods);
    tracing::info!(controller = NAME, grace_period = ?config.grace_period, "monitoring nodes");
    let c = Arc::new(Controller {
        recorder: Recorder::new(ctx.client.clone(), MANAGER, ctx.clock),
        ctx,
        config,
        nodes,
        leases,
        pods,
        health: Mutex::default(),
        tainted: Mutex::default(),
    });
    let monitor = {
        let c = Arc::clone(&c);
        async move {
            let mut tick = tokio::time::interval(c.config.monitor_period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                c.monitor().await;
            }
        }
    };
    declared
        .beside(monitor)
        .run_with(2, c, |c, name: String| async move {
            c.no_schedule_pass(&name).await.map(|()| None)
        })
        .await;
}

impl<C: Cluster> Controller<C> {
    fn node(&self, name: &str) -> Option<NodeObject> {
        self.nodes.get(&(String::new(), name.to_owned()))
    }

    async fn no_schedule_pass(&self, name: &str) -> Result<()> {
        let Some(node) = self.node(name) else {
            return Ok(());
        };
        let (add, remove) = no_schedule_diff(&node.0);
        self.swap_taints(&node.0, add, remove).await
    }

    /// `monitorNodeHealth`: one pass over every node.
    async fn monitor(&self) {
        let nodes: Vec<NodeObject> = self.nodes.read(|m| m.values().cloned().collect());
        {
            // `knownNodeSet`: nodes seen for the first time, and nodes gone, get their events.
            let names: std::collections::HashSet<&str> = nodes
                .iter()
                .filter_map(|n| n.0.metadata.name.as_deref())
                .collect();
            let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            for n in nodes.iter().filter(|n| {
                n.0.metadata
                    .name
                    .as_deref()
                    .is_some_and(|name| !health.contains_key(name))
            }) {
                let name = n.0.metadata.name.as_deref().unwrap_or_default();
                let message = format!("Registered Node {name} in Controller");
                self.recorder
                    .normal(node_reference(&n.0), "RegisteredNode", message);
            }
            health.retain(|n, _| {
                let known = names.contains(n.as_str());
                if !known {
                    let gone = k8s_openapi::api::core::v1::ObjectReference {
                        kind: Some("Node".into()),
                        name: Some(n.clone()),
                        ..Default::default()
                    };
                    let message = format!("Removing Node {n} from Controller");
                    self.recorder.normal(gone, "RemovingNode", message);
                    self.recorder.forget("default", n);
                }
                known
            });
        }
        let mut current = Vec::with_capacity(nodes.len());
        for node in nodes {
            match self.update_health(&node.0).await {
                Ok(Some(updated)) => current.push(Arc::new(updated)),
                Ok(None) => current.push(node.0),
                Err(e) => {
                    let name = node.0.metadata.name.clone().unwrap_or_default();
                    tracing::warn!(controller = NAME, node = %name, error = %e, "updating the node's health; retrying next period");
                }
            }
        }
        let mut zones: BTreeMap<String, Vec<Option<&str>>> = BTreeMap::new();
        for n in &current {
            zones
                .entry(zone_key(n))
                .or_default()
                .push(condition(n, "Ready").map(|c| c.status.as_str()));
        }
        let states: BTreeMap<&String, (ZoneState, usize)> = zones
            .iter()
            .map(|(z, r)| {
                let state = zone_state(r.iter().copied(), self.config.unhealthy_zone_threshold);
                (z, (state, r.len()))
            })
            .collect();
        let all_down = !states.is_empty()
            && states
                .values()
                .all(|(s, _)| *s == ZoneState::FullDisruption);
        for n in &current {
            let zone = zone_key(n);
            let (state, size) = states[&zone];
            let (mut add, remove) = no_execute_diff(n, all_down);
            let new_taint = !add.is_empty() && remove.is_empty();
            if new_taint && !self.take_token(&zone, eviction_rate(state, size, &self.config)) {
                add.clear();
            }
            if let Err(e) = self.swap_taints(n, add, remove).await {
                let name = n.metadata.name.clone().unwrap_or_default();
                tracing::warn!(controller = NAME, node = %name, error = %e, "swapping the node's NoExecute taints; retrying next period");
            }
        }
    }

    /// A token of the zone's NoExecute tainting limiter (a token bucket of `rate` per second,
    /// burst 1, as upstream's `RateLimitedTimedQueue`).
    fn take_token(&self, zone: &str, rate: f64) -> bool {
        if rate <= 0.0 {
            return false;
        }
        let now = std::time::Instant::now();
        let mut last = self.tainted.lock().unwrap_or_else(PoisonError::into_inner);
        let due = last
            .get(zone)
            .is_none_or(|t| now.duration_since(*t).as_secs_f64() * rate >= 1.0);
        if due {
            last.insert(zone.to_owned(), now);
        }
        due
    }

    /// `tryUpdateNodeHealth`: moves the probe time on a new Ready heartbeat or lease renewal,
    /// and marks the conditions Unknown once it is older than the grace period. Returns the
    /// node as written, when it was.
    async fn update_health(&self, node: &Node) -> Result<Option<Node>> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let now = self.ctx.clock.now();
        let ready = condition(node, "Ready");
        let heartbeat = ready
            .and_then(|c| c.last_heartbeat_time.as_ref())
            .map(|t| t.0);
        let renewal = self
            .leases
            .get(&(NODE_LEASE_NAMESPACE.to_owned(), name.clone()))
            .and_then(|l| l.0);
        let grace = if ready.is_some() {
            self.config.grace_period
        } else {
            self.config.startup_grace_period
        };
        let probe = {
            let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            let h = health.entry(name.clone()).or_insert_with(|| Health {
                // A node first seen without Ready counts from its creation, else from now.
                probe: if ready.is_none() {
                    node.metadata.creation_timestamp.as_ref().map(|t| t.0)
                } else {
                    Some(now)
                },
                ready_heartbeat: heartbeat,
                lease_renewal: None,
            });
            if h.ready_heartbeat != heartbeat {
                h.ready_heartbeat = heartbeat;
                h.probe = Some(now);
            }
            if renewal.is_some() && h.lease_renewal < renewal {
                h.lease_renewal = renewal;
                h.probe = Some(now);
            }
            h.probe.unwrap_or(now)
        };
        let limit = jiff::SignedDuration::try_from(grace).unwrap_or(jiff::SignedDuration::MAX);
        if now.duration_since(probe) <= limit {
            return Ok(None);
        }
        let mut updated = node.clone();
        if !mark_unknown(&mut updated, now) {
            return Ok(None);
        }
        tracing::info!(controller = NAME, node = %name, "the node's kubelet stopped posting status: conditions Unknown");
        let was_ready = ready.is_some_and(|c| c.status == "True");
        let api: Api<Node> = Api::all(self.ctx.client.clone());
        let pp = PostParams {
            field_manager: Some(MANAGER.into()),
            ..PostParams::default()
        };
        let written = match api.replace_status(&name, &pp, &updated).await {
            Ok(n) => n,
            Err(e) if is_status(&e, &[404, 409]) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if was_ready {
            // `RecordNodeStatusChange`.
            let message = format!("Node {name} status is now: NodeNotReady");
            self.recorder
                .normal(node_reference(node), "NodeNotReady", message);
            self.mark_pods_not_ready(&name).await;
        }
        Ok(Some(written))
    }

    /// `MarkPodsNotReady`: the Ready condition of the node's pods becomes False (a strategic
    /// merge patch of that condition alone, keyed by type). A failure is logged; the pod stays.
    async fn mark_pods_not_ready(&self, node: &str) {
        let pods: Vec<Key> = self.pods.read(|m| {
            m.iter()
                .filter(|(_, p)| p.node == node)
                .map(|(k, _)| k.clone())
                .collect()
        });
        let now = Time(self.ctx.clock.now());
        let pp = PatchParams {
            field_manager: Some(MANAGER.into()),
            ..PatchParams::default()
        };
        for (namespace, name) in pods {
            let api: Api<k8s_openapi::api::core::v1::Pod> =
                Api::namespaced(self.ctx.client.clone(), &namespace);
            let patch = json!({"status": {"conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": now},
            ]}});
            match api.patch_status(&name, &pp, &Patch::Strategic(patch)).await {
                Ok(_) => {}
                Err(e) if is_status(&e, &[404]) => {}
                Err(e) => {
                    tracing::warn!(controller = NAME, node, pod = %format!("{namespace}/{name}"), error = %e, "marking a pod not Ready");
                }
            }
        }
    }

    /// `SwapNodeControllerTaint`: adds and removes taints in one patch, conditional on the
    /// node's resourceVersion; an added taint records when.
    async fn swap_taints(&self, node: &Node, add: Vec<Taint>, remove: Vec<Taint>) -> Result<()> {
        if add.is_empty() && remove.is_empty() {
            return Ok(());
        }
        let now = self.ctx.clock.now();
        let mut next: Vec<Taint> = taints(node)
            .iter()
            .filter(|t| {
                !remove
                    .iter()
                    .any(|r| r.key == t.key && r.effect == t.effect)
            })
            .cloned()
            .collect();
        for mut t in add {
            t.time_added = Some(Time(now));
            next.push(t);
        }
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let patch = json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "spec": {"taints": if next.is_empty() { serde_json::Value::Null } else { json!(next) }},
        });
        let pp = PatchParams {
            field_manager: Some(MANAGER.into()),
            ..PatchParams::default()
        };
        let api: Api<Node> = Api::all(self.ctx.client.clone());
        match api.patch(name, &pp, &Patch::Merge(patch)).await {
            Ok(_) => Ok(()),
            // Changed meanwhile: its change event brings it back; deleted: nothing to do.
            Err(e) if is_status(&e, &[404, 409]) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeSpec, NodeStatus};

    fn node(ready: Option<&str>, taints: &[(&str, &str)]) -> Node {
        Node {
            spec: Some(NodeSpec {
                taints: Some(taints.iter().map(|(k, e)| taint(k, e)).collect()),
                ..NodeSpec::default()
            }),
            status: Some(NodeStatus {
                conditions: ready.map(|s| {
                    vec![NodeCondition {
                        type_: "Ready".into(),
                        status: s.into(),
                        ..NodeCondition::default()
                    }]
                }),
                ..NodeStatus::default()
            }),
            ..Node::default()
        }
    }

    fn keys(ts: &[Taint]) -> Vec<(&str, &str)> {
        ts.iter()
            .map(|t| (t.key.as_str(), t.effect.as_str()))
            .collect()
    }

    #[test]
    fn zones_are_judged_as_upstream_does() {
        let t = 0.55;
        assert_eq!(zone_state([Some("True")], t), ZoneState::Normal);
        assert_eq!(
            zone_state([Some("Unknown"), None], t),
            ZoneState::FullDisruption
        );
        assert_eq!(
            zone_state([Some("True"), Some("False"), Some("False")], t),
            ZoneState::Normal
        );
        let partial = [Some("True"), Some("False"), Some("False"), Some("Unknown")];
        assert_eq!(zone_state(partial, t), ZoneState::PartialDisruption);
        assert_eq!(zone_state(std::iter::empty(), t), ZoneState::Normal);
    }

    #[test]
    fn a_silent_node_gets_unknown_conditions_once() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let mut n = node(Some("True"), &[]);
        assert!(mark_unknown(&mut n, now));
        let ready = condition(&n, "Ready").unwrap();
        assert_eq!(ready.status, "Unknown");
        assert_eq!(ready.reason.as_deref(), Some("NodeStatusUnknown"));
        assert_eq!(
            ready.message.as_deref(),
            Some("Kubelet stopped posting node status.")
        );
        let never = condition(&n, "PIDPressure").unwrap();
        assert_eq!(never.reason.as_deref(), Some("NodeStatusNeverUpdated"));
        assert!(!mark_unknown(&mut n, now));
    }

    #[test]
    fn no_schedule_taints_follow_the_conditions() {
        let (add, remove) = no_schedule_diff(&node(Some("Unknown"), &[]));
        assert_eq!(keys(&add), [(UNREACHABLE, NO_SCHEDULE)]);
        assert!(remove.is_empty());
        let (add, remove) = no_schedule_diff(&node(
            Some("True"),
            &[(UNREACHABLE, NO_SCHEDULE), ("mine", NO_SCHEDULE)],
        ));
        assert!(add.is_empty());
        assert_eq!(keys(&remove), [(UNREACHABLE, NO_SCHEDULE)]);
        let (add, remove) = no_schedule_diff(&node(Some("False"), &[(UNREACHABLE, NO_SCHEDULE)]));
        assert_eq!(
            (keys(&add), keys(&remove)),
            (
                vec![(NOT_READY, NO_SCHEDULE)],
                vec![(UNREACHABLE, NO_SCHEDULE)]
            )
        );
    }

    #[test]
    fn no_execute_taints_swap_and_respect_disruption() {
        let (add, remove) = no_execute_diff(&node(Some("Unknown"), &[]), false);
        assert_eq!(
            (keys(&add), remove.len()),
            (vec![(UNREACHABLE, NO_EXECUTE)], 0)
        );
        let (add, remove) =
            no_execute_diff(&node(Some("False"), &[(UNREACHABLE, NO_EXECUTE)]), false);
        assert_eq!(
            (keys(&add), keys(&remove)),
            (
                vec![(NOT_READY, NO_EXECUTE)],
                vec![(UNREACHABLE, NO_EXECUTE)]
            )
        );
        // Everything down: no NoExecute taints at all; back: removed.
        let (add, remove) =
            no_execute_diff(&node(Some("Unknown"), &[(UNREACHABLE, NO_EXECUTE)]), true);
        assert_eq!(
            (add.len(), keys(&remove)),
            (0, vec![(UNREACHABLE, NO_EXECUTE)])
        );
        let (add, remove) =
            no_execute_diff(&node(Some("True"), &[(UNREACHABLE, NO_EXECUTE)]), false);
        assert_eq!(
            (add.len(), keys(&remove)),
            (0, vec![(UNREACHABLE, NO_EXECUTE)])
        );
        assert_eq!(
            no_execute_diff(&node(Some("Unknown"), &[(UNREACHABLE, NO_EXECUTE)]), false),
            (vec![], vec![])
        );
    }

    #[test]
    fn eviction_rates_follow_the_zone_state() {
        let c = Config::default();
        assert_eq!(eviction_rate(ZoneState::Normal, 3, &c), 0.1);
        assert_eq!(eviction_rate(ZoneState::FullDisruption, 3, &c), 0.1);
        assert_eq!(eviction_rate(ZoneState::PartialDisruption, 50, &c), 0.0);
        assert_eq!(eviction_rate(ZoneState::PartialDisruption, 51, &c), 0.01);
    }
}
