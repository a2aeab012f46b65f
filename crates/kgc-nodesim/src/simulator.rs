//! The simulated kubelets (`nodes-sim`): one work queue for every simulated Node, keyed by
//! name and scheduled for the node's next heartbeat, instead of a task and a timer per node: a
//! thousand nodes are a thousand entries of the queue's ordered map, renewed at 100 leases per
//! second, their first renewals spread over the renewal interval.
//!
//! Each heartbeat does what a kubelet's two loops do (kubernetes
//! `staging/src/k8s.io/component-helpers/apimachinery/lease/controller.go` `sync`, and
//! `pkg/kubelet/kubelet_node_status.go` `syncNodeStatus`): the Lease is updated from the last
//! one written (no GET; a Conflict or NotFound falls back to GET or create), and the status is
//! patched when it changed or once per report period. A stopped node is skipped until its
//! annotation goes; a deleted one is forgotten.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kgc_client::Cluster;
use kgc_runtime::events::Recorder;
use kgc_runtime::informer::{Cache, Key};
use kgc_runtime::{Context, Controller};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::capacity::Capacity;
use crate::registration::{self, MAX_INDEX, NAME_PREFIX};
use crate::{
    COMPONENT, NODE_LEASE_NAMESPACE, NodeObject, Result, SIMULATED, STOPPED, is_status, lease,
    node_reference, node_status,
};

/// The name `--controllers` knows it by.
pub const NAME: &str = "nodes-sim";
/// The field manager of its writes.
const MANAGER: &str = "kgc-nodesim";
/// Writes wait for the store's group commit: enough workers that 100 renewals a second share
/// commits instead of queueing for them.
const WORKERS: usize = 16;
/// How many registrations are in flight at once at start-up.
const REGISTRATIONS: usize = 64;
/// `wait.JitterUntil`'s factor in the lease controller.
const JITTER: f64 = 0.04;

/// Settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--nodes`: how many `kgc-node-<i>` to register.
    pub nodes: u32,
    /// `--node-capacity`.
    pub capacity: Capacity,
    /// The lease renewal interval, which is also the status check interval: the kubelet's
    /// 0.25 × `nodeLeaseDurationSeconds` and `nodeStatusUpdateFrequency`, both 10 s.
    pub renew_interval: Duration,
    /// `nodeStatusReportFrequency`: an unchanged status is posted this often.
    pub status_report: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            nodes: 1,
            capacity: crate::capacity::parse(crate::capacity::DEFAULT).expect("a valid default"),
            renew_interval: Duration::from_secs(10),
            status_report: Duration::from_secs(300),
        }
    }
}

/// What the simulator remembers of a running node between heartbeats.
struct Held {
    /// The last lease written (the lease controller's `latestLease`).
    lease: Option<Lease>,
    next_renewal: Instant,
}

struct Simulator<C> {
    ctx: Context<C>,
    recorder: Recorder,
    config: Config,
    nodes: Cache<NodeObject>,
    held: Mutex<HashMap<String, Held>>,
    /// Address indexes handed to nodes whose pod CIDR does not carry one.
    reserved: Mutex<HashMap<String, u32>>,
    /// The malformed annotations already reported, by (node, key): the value reported.
    reported: Mutex<HashMap<(String, &'static str), String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs the simulator until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config) {
    let resource = ctx.informers.resource("", "nodes").await;
    let nodes = ctx.informers.cache::<NodeObject>(resource);
    let declared =
        Controller::named(&ctx, NAME).watches(&nodes, |key: &Key, node: Option<&NodeObject>| {
            node.is_none_or(NodeObject::claims_simulation)
                .then(|| key.1.clone())
        });
    // The nodes already there, before registering the missing ones.
    nodes.synced().await;
    let sim = Arc::new(Simulator {
        recorder: Recorder::new(ctx.client.clone(), COMPONENT, ctx.clock),
        ctx,
        config,
        nodes,
        held: Mutex::default(),
        reserved: Mutex::default(),
        reported: Mutex::default(),
    });
    sim.ensure_namespace().await;
    sim.register().await;
    tracing::info!(controller = NAME, nodes = sim.config.nodes, "registered");
    declared
        .run_with(WORKERS, sim, |sim, name: String| async move {
            sim.sync(&name).await
        })
        .await;
}

impl<C: Cluster> Simulator<C> {
    /// Creates `kube-node-lease` if missing (kube-apiserver's system namespaces controller
    /// does), retrying until it exists.
    async fn ensure_namespace(&self) {
        let api: Api<Namespace> = Api::all(self.ctx.client.clone());
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(NODE_LEASE_NAMESPACE.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        let mut delay = Duration::from_millis(100);
        loop {
            match api.create(&post_params(), &ns).await {
                Ok(_) => return,
                Err(e) if is_status(&e, &[409]) => return,
                Err(e) => {
                    tracing::warn!(controller = NAME, error = %e, "creating the kube-node-lease namespace; retrying");
                }
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(7));
        }
    }

    /// Registers the `--nodes` nodes that do not exist, as kubelets starting would, retrying
    /// each until it is registered. A node deleted later is not registered again.
    async fn register(&self) {
        let api: Api<Node> = Api::all(self.ctx.client.clone());
        let missing: Vec<u32> = (0..self.config.nodes.min(MAX_INDEX + 1))
            .filter(|i| {
                let key = (String::new(), format!("{NAME_PREFIX}{i}"));
                self.nodes.get(&key).is_none()
            })
            .collect();
        if self.config.nodes > MAX_INDEX + 1 {
            tracing::warn!(
                controller = NAME,
                max = MAX_INDEX + 1,
                "--nodes is more than there are pod ranges for; registering the first"
            );
        }
        for chunk in missing.chunks(REGISTRATIONS) {
            let mut tasks = tokio::task::JoinSet::new();
            for &i in chunk {
                let api = api.clone();
                tasks.spawn(async move {
                    let node = registration::node(i);
                    let mut delay = Duration::from_millis(100);
                    loop {
                        match api.create(&post_params(), &node).await {
                            Ok(_) => return,
                            Err(e) if is_status(&e, &[409]) => return,
                            Err(e) => {
                                tracing::warn!(controller = NAME, node = %i, error = %e, "registering a node; retrying");
                            }
                        }
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(Duration::from_secs(7));
                    }
                });
            }
            while tasks.join_next().await.is_some() {}
        }
    }

    async fn sync(&self, name: &str) -> Result<Option<Duration>> {
        let key = (String::new(), name.to_owned());
        let forget = || {
            lock(&self.held).remove(name);
            lock(&self.reserved).remove(name);
        };
        let Some(node) = self.nodes.get(&key) else {
            forget();
            lock(&self.reported).retain(|(n, _), _| n != name);
            return Ok(None);
        };
        self.report_bad_annotations(&node).await;
        if !node.is_simulated() {
            forget();
            return Ok(None);
        }
        if node.is_stopped() {
            return Ok(None);
        }
        let Some(index) = self.index(&node.0) else {
            tracing::warn!(
                controller = NAME,
                node = name,
                "no free pod range is left for this node (spec.podCIDR); it is not simulated"
            );
            return Ok(None);
        };
        let node = match self.fill_in_spec(&node.0, index).await? {
            Some(patched) => Arc::new(patched),
            None => node.0,
        };
        let now = Instant::now();
        let (base, due) = match lock(&self.held).get(name) {
            Some(h) => (h.lease.clone(), h.next_renewal <= now),
            None => (None, true),
        };
        let next_renewal = if due {
            let renewed = self.renew(name, node.metadata.uid.as_deref(), base).await?;
            // The first renewal of a node comes at a random point of the interval, so that
            // nodes registered together renew apart; then every interval, jittered.
            let first = !lock(&self.held).contains_key(name);
            let factor = if first {
                fastrand::f64()
            } else {
                1.0 + JITTER * fastrand::f64()
            };
            let next = now + self.config.renew_interval.mul_f64(factor);
            lock(&self.held).insert(
                name.to_owned(),
                Held {
                    lease: Some(renewed),
                    next_renewal: next,
                },
            );
            next
        } else {
            lock(&self.held).get(name).map_or(now, |h| h.next_renewal)
        };
        self.post_status(&node, index).await?;
        Ok(Some(next_renewal.saturating_duration_since(Instant::now())))
    }

    /// A `kgc.io/simulated` or `kgc.io/stopped` annotation that is neither `"true"` nor
    /// `"false"` gets a Warning Event on the node (once per value): the node is then not
    /// simulated, or not stopped.
    async fn report_bad_annotations(&self, node: &NodeObject) {
        let name = node.0.metadata.name.clone().unwrap_or_default();
        for (key, then) in [
            (SIMULATED, "the node is not simulated"),
            (STOPPED, "the node is not stopped"),
        ] {
            let Err(value) = node.flag(key) else { continue };
            let first = lock(&self.reported).insert((name.clone(), key), value.clone())
                != Some(value.clone());
            if !first {
                continue;
            }
            let message = format!(
                "Node {name}: annotation {key}: {value:?} is neither \"true\" nor \"false\"; {then}"
            );
            tracing::warn!(controller = NAME, node = %name, "{message}");
            self.recorder
                .warning(node_reference(&node.0), "InvalidAnnotation", message);
        }
    }

    /// The node's address index: that of its pod CIDR when this simulator handed it out,
    /// else one reserved for it (its own `kgc-node-<i>` number when free, else the lowest).
    fn index(&self, node: &Node) -> Option<u32> {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let cidr = node.spec.as_ref().and_then(|s| s.pod_cidr.as_deref());
        if let Some(i) = cidr.and_then(registration::index_of_cidr) {
            return Some(i);
        }
        let mut reserved = lock(&self.reserved);
        if let Some(&i) = reserved.get(name) {
            return Some(i);
        }
        let mut used: BTreeSet<u32> = self.nodes.read(|m| {
            m.values()
                .filter_map(|n| n.0.spec.as_ref()?.pod_cidr.as_deref())
                .filter_map(registration::index_of_cidr)
                .collect()
        });
        used.extend(reserved.values().copied());
        let own = name
            .strip_prefix(NAME_PREFIX)
            .and_then(|i| i.parse::<u32>().ok())
            .filter(|i| *i <= MAX_INDEX && !used.contains(i));
        let i = own.or_else(|| (0..=MAX_INDEX).find(|i| !used.contains(i)))?;
        reserved.insert(name.to_owned(), i);
        Some(i)
    }

    /// Gives a node what the user left out of it: a pod CIDR and the kubelet's labels. What is
    /// set stays. Returns the patched node when there was something to do.
    async fn fill_in_spec(&self, node: &Node, index: u32) -> Result<Option<Node>> {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let has = node.metadata.labels.clone().unwrap_or_default();
        let labels: serde_json::Map<String, serde_json::Value> = registration::labels(name)
            .into_iter()
            .filter(|(k, _)| !has.contains_key(k))
            .map(|(k, v)| (k, v.into()))
            .collect();
        let spec = node.spec.clone().unwrap_or_default();
        let cidr_missing = spec.pod_cidr.as_deref().unwrap_or_default().is_empty()
            && spec.pod_cidrs.as_ref().is_none_or(Vec::is_empty);
        if labels.is_empty() && !cidr_missing {
            return Ok(None);
        }
        let mut patch = json!({"metadata": {"labels": labels}});
        if cidr_missing {
            let cidr = registration::pod_cidr(index);
            patch["spec"] = json!({"podCIDR": cidr, "podCIDRs": [cidr]});
        }
        let api: Api<Node> = Api::all(self.ctx.client.clone());
        Ok(Some(
            api.patch(name, &patch_params(), &Patch::Merge(patch))
                .await?,
        ))
    }

    /// Renews the node's lease from `base`, the last one written; on a Conflict or NotFound,
    /// from a fresh GET, or creates it.
    async fn renew(&self, name: &str, uid: Option<&str>, base: Option<Lease>) -> Result<Lease> {
        let api: Api<Lease> = Api::namespaced(self.ctx.client.clone(), NODE_LEASE_NAMESPACE);
        if let Some(base) = base {
            let lease = lease::renewed(Some(&base), name, uid, self.ctx.clock.now());
            match api.replace(name, &post_params(), &lease).await {
                Ok(l) => return Ok(l),
                Err(e) if is_status(&e, &[404, 409]) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let now = self.ctx.clock.now();
        Ok(match api.get_opt(name).await? {
            None => {
                api.create(&post_params(), &lease::renewed(None, name, uid, now))
                    .await?
            }
            Some(current) => {
                let lease = lease::renewed(Some(&current), name, uid, now);
                api.replace(name, &post_params(), &lease).await?
            }
        })
    }

    /// Posts the node's status when it changed or the report period passed.
    async fn post_status(&self, node: &Node, index: u32) -> Result<()> {
        let now = self.ctx.clock.now();
        let desired = node_status::desired(node, &self.config.capacity, index, now);
        if !node_status::needs_post(node, &desired, now, self.config.status_report) {
            return Ok(());
        }
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let api: Api<Node> = Api::all(self.ctx.client.clone());
        let patch = json!({"status": desired});
        match api
            .patch_status(name, &patch_params(), &Patch::Merge(patch))
            .await
        {
            Ok(_) => Ok(()),
            // Deleted meanwhile: the next sync forgets it.
            Err(e) if is_status(&e, &[404]) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER.into()),
        ..PostParams::default()
    }
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(MANAGER.into()),
        ..PatchParams::default()
    }
}
