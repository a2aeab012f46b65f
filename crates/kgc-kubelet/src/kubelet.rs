//! The controller: one kubelet's work for every simulated node, on kgc-runtime.
//!
//! It reads two shared caches, simulated Nodes (a few fields) and pods bound to a node (whole,
//! since their status is rewritten from them), and has one work queue of pods and nodes with
//! a fixed pool of workers: no task per pod. A pod is synced when it changes and when the
//! next thing its containers do is due (an exit, a restart after back-off, the end of a grace
//! period: one schedule per pod in the queue's ordered map). A sync replays the pod's runtime
//! up to now and, when the status it generates differs from the last one written, writes it
//! through `pods/status` with the cached copy's resourceVersion as precondition (a 409 waits
//! for the newer copy the watch brings). That is one status write per transition, and no
//! read: the cache is the only input. Upstream: `pkg/kubelet/pod_workers.go` (one worker per
//! pod there), `pkg/kubelet/status/status_manager.go` (`syncPod`, `canBeDeleted`).

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeStatus, ObjectReference, Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kgc_client::Cluster;
use kgc_node::containers::ContainerGcPolicy;
use kgc_node::images::{ImageGcPolicy, ImageReason};
use kgc_runtime::events::Recorder;
use kgc_runtime::informer::{Cache, Informers, Key, View, describe};
use kgc_runtime::queue::WorkQueue;
use kgc_runtime::{Context, Controller};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde::Deserialize;
use serde_json::Value;

use crate::annotations;
use crate::image::resolve;
use crate::ipam::Range;
use crate::metrics::Metrics;
use crate::node::NodeRuntime;
use crate::runtime::{Behaviour, PodRuntime, RestartPolicy, Settings, Spec, State, Stop};
use crate::status::{self, Placement};
use crate::volumes::{self, Needed};
use crate::{Error, SIMULATED, STOPPED};

/// The name `--controllers` knows it by.
pub const NAME: &str = "kubelet-sim";
/// Enough writes in flight to fill the store's group commits.
const WORKERS: usize = 32;
const FIELD_MANAGER: &str = "kubelet";
/// The event source, as a kubelet's recorder names itself.
const COMPONENT: &str = "kubelet";
/// `nodeStatusMaxImages`.
const MAX_STATUS_IMAGES: usize = 50;
/// How long a pod whose sandbox could not be created waits before the next try.
const SANDBOX_RETRY: Duration = Duration::from_secs(10);
/// How long a pod whose volumes cannot be mounted waits before the next try, besides the try
/// made when a Secret, ConfigMap or claim of its namespace appears.
const MOUNT_RETRY: Duration = Duration::from_secs(5);
/// How long image changes gather before `status.images` is patched.
const PUBLISH_DELAY: Duration = Duration::from_secs(1);

/// The kubelet's settings (`kgc serve` flags named as the kubelet's).
#[derive(Clone, Debug)]
pub struct Config {
    pub runtime: Settings,
    pub images: ImageGcPolicy,
    pub containers: ContainerGcPolicy,
    /// The simulated image filesystem's capacity, in bytes.
    pub image_fs_size: u64,
    /// The size of an image whose pod names none (`kgc.io/image-size`).
    pub default_image_size: u64,
    /// `ImageGCPeriod` (5 min) and `ContainerGCPeriod` (1 min).
    pub image_gc_period: Duration,
    pub container_gc_period: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            runtime: Settings::default(),
            images: ImageGcPolicy::default(),
            containers: ContainerGcPolicy::default(),
            image_fs_size: 10 << 30,
            default_image_size: 100 << 20,
            image_gc_period: Duration::from_secs(300),
            container_gc_period: Duration::from_secs(60),
        }
    }
}

impl Config {
    /// Upstream's checks of the image GC policy.
    pub fn validate(&self) -> Result<(), Error> {
        Ok(self.images.validate()?)
    }
}

/// A simulated node as the kubelet reads it; other nodes are not cached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimNode {
    stopped: bool,
    pod_cidr: Option<String>,
    host_ip: Option<String>,
}

impl View for SimNode {
    fn view(obj: &Value) -> Option<Self> {
        let a = &obj["metadata"]["annotations"];
        if a[SIMULATED].as_str() != Some("true") {
            return None;
        }
        let internal = obj["status"]["addresses"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["type"] == "InternalIP"));
        Some(SimNode {
            stopped: a[STOPPED].as_str() == Some("true"),
            pod_cidr: obj["spec"]["podCIDR"].as_str().map(str::to_owned),
            host_ip: internal
                .and_then(|x| x["address"].as_str())
                .map(str::to_owned),
        })
    }
}

/// A pod bound to a node, whole; unbound pods are not cached.
#[derive(Clone, Debug)]
struct Bound(Arc<Pod>);

impl View for Bound {
    fn view(obj: &Value) -> Option<Self> {
        obj["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())?;
        match Pod::deserialize(obj) {
            Ok(p) => Some(Bound(Arc::new(p))),
            Err(e) => {
                tracing::warn!(controller = NAME, pod = %describe(&kgc_runtime::informer::key_of(obj)), error = %e, "cannot read the pod");
                None
            }
        }
    }
}

/// Whether the pods of a node are a simulated kubelet's (the node is simulated, running or
/// stopped): the predicate pod termination leaves those pods to the kubelet by.
pub async fn simulated_nodes<C: Cluster>(
    informers: &Informers<C>,
) -> Arc<dyn Fn(&str) -> bool + Send + Sync> {
    let nodes = informers.cache::<SimNode>(informers.resource("", "nodes").await);
    Arc::new(move |name: &str| nodes.read(|m| m.contains_key(&(String::new(), name.to_owned()))))
}

/// That an object exists: the kubelet only needs to know whether a pod's volume can be mounted.
#[derive(Clone, Copy, Debug)]
struct Exists;

impl View for Exists {
    fn view(_: &Value) -> Option<Self> {
        Some(Exists)
    }
}

/// The Secrets, ConfigMaps and claims the pods' volumes mount.
struct Mountable {
    secrets: Cache<Exists>,
    config_maps: Cache<Exists>,
    claims: Cache<Exists>,
}

impl Mountable {
    fn exists(&self, namespace: &str, needed: &Needed) -> bool {
        let (cache, name) = match needed {
            Needed::Secret(n) => (&self.secrets, n),
            Needed::ConfigMap(n) => (&self.config_maps, n),
            Needed::Claim(n) => (&self.claims, n),
        };
        cache.get(&(namespace.to_owned(), name.clone())).is_some()
    }
}

/// What the queue holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Work {
    Pod(Key),
    /// A node's simulation changed (started, stopped, new range): its pods are looked at.
    Node(String),
    /// A Secret, ConfigMap or claim of this namespace changed: its pods not started yet are
    /// looked at (one may wait for it to mount a volume).
    Mounts(String),
    /// A node's container GC, then image GC, and its `status.images` patch.
    Containers(String),
    Images(String),
    Publish(String),
}

impl std::fmt::Display for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Work::Pod(k) => write!(f, "pod {}", describe(k)),
            Work::Node(n) => write!(f, "node {n}"),
            Work::Mounts(ns) => write!(f, "volumes of namespace {ns}"),
            Work::Containers(n) => write!(f, "container GC of {n}"),
            Work::Images(n) => write!(f, "image GC of {n}"),
            Work::Publish(n) => write!(f, "images of {n}"),
        }
    }
}

/// A pod the kubelet runs.
struct Entry {
    node: String,
    rt: PodRuntime,
    behaviour: Behaviour,
    /// The address its sandbox holds (given back when the pod ends).
    held: Option<Ipv4Addr>,
    /// What `status.podIP` reports (kept after the sandbox is gone, as upstream does).
    address: Option<String>,
    /// The resourceVersion and status of the last write.
    written: Option<(u64, PodStatus)>,
}

#[derive(Default)]
struct Table {
    pods: HashMap<Key, Entry>,
    nodes: HashMap<String, NodeRuntime>,
}

impl Table {
    /// The pod is gone from the node (deleted, or moved off a simulated node): its containers
    /// are dead containers the next container GC removes, its address is free.
    fn forget(&mut self, key: &Key) {
        let Some(e) = self.pods.remove(key) else {
            return;
        };
        let node = self.nodes.entry(e.node).or_default();
        node.pods.remove(key);
        // The kubelet kills what still runs.
        node.dead.extend(e.rt.containers.iter().map(|c| {
            let mut dead = c.as_cri(&e.rt.uid);
            dead.state = kgc_node::snapshot::ContainerState::Exited;
            dead
        }));
        if let (Some(ip), Some((_, range))) = (e.held, node.range.as_mut()) {
            range.release(ip);
        }
    }
}

/// The Normal events kgc's kubelet records for what its GC removed. Upstream's image and
/// container GC only log removals (`pkg/kubelet/images/image_gc_manager.go` `freeSpace`,
/// `pkg/kubelet/kuberuntime/kuberuntime_gc.go`) and record Warnings when they fail; kgc also
/// says what went, once per pass, so that `kubectl describe node` shows it.
const IMAGES_COLLECTED: &str = "ImageGarbageCollected";
const CONTAINERS_COLLECTED: &str = "ContainerGarbageCollected";
/// How many names a removal event lists before "and N more".
const NAMED: usize = 5;

/// The event for one GC pass that removed `names`, each a `what` (and freed `freed` bytes).
fn removed_note<'a>(
    reason: &'static str,
    what: &str,
    names: impl ExactSizeIterator<Item = &'a str>,
    freed: Option<u64>,
) -> Note {
    let n = names.len();
    let mut listed: Vec<&str> = names.take(NAMED).collect();
    let more = format!("and {} more", n.saturating_sub(NAMED));
    if n > NAMED {
        listed.push(&more);
    }
    let freed = freed.map_or(String::new(), |b| format!(", {b} bytes freed"));
    Note {
        warning: false,
        reason,
        message: format!(
            "Removed {n} {what}{}{freed}: {}",
            if n == 1 { "" } else { "s" },
            listed.join(", ")
        ),
        field: None,
    }
}

/// An event to record.
struct Note {
    warning: bool,
    reason: &'static str,
    message: String,
    field: Option<String>,
}

/// One sync's outcome under the table's lock, acted on without it.
enum Outcome {
    /// Nothing to run: a pod that finished before the kubelet saw it.
    Nothing,
    /// The sandbox could not be created (no address): reported, tried again later.
    NoSandbox(Note),
    /// A volume cannot be mounted: the pod waits in `ContainerCreating`, told why.
    NoMounts(Vec<Note>),
    Run(Box<Step>),
}

struct Step {
    rt: PodRuntime,
    restart: RestartPolicy,
    placement: Placement,
    written: Option<(u64, PodStatus)>,
    next: Option<Timestamp>,
    events: Vec<Note>,
    pulled: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn resource_version(meta: &ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

struct Kubelet<C> {
    ctx: Context<C>,
    config: Config,
    pods: Cache<Bound>,
    nodes: Cache<SimNode>,
    mountable: Mountable,
    table: Arc<Mutex<Table>>,
    queue: WorkQueue<Work>,
    metrics: Metrics,
    recorder: Recorder,
}

/// Runs the simulated kubelets until dropped, counting into `metrics` (registered once per
/// process: [`Metrics::register`]).
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config, metrics: Metrics) {
    let pods_resource = ctx.informers.resource("", "pods").await;
    let nodes_resource = ctx.informers.resource("", "nodes").await;
    let nodes = ctx.informers.cache::<SimNode>(nodes_resource);
    let pods = ctx.informers.cache::<Bound>(pods_resource);
    let mountable = Mountable {
        secrets: ctx
            .informers
            .cache::<Exists>(ctx.informers.resource("", "secrets").await),
        config_maps: ctx
            .informers
            .cache::<Exists>(ctx.informers.resource("", "configmaps").await),
        claims: ctx
            .informers
            .cache::<Exists>(ctx.informers.resource("", "persistentvolumeclaims").await),
    };
    let mut declared = Controller::named(&ctx, NAME);
    for cache in [
        &mountable.secrets,
        &mountable.config_maps,
        &mountable.claims,
    ] {
        declared = declared.watches(cache, |key: &Key, _: Option<&Exists>| {
            Some(Work::Mounts(key.0.clone()))
        });
    }
    let table = Arc::new(Mutex::new(Table::default()));
    // Weak: a stopped run's table goes with it, and counts nothing.
    let t = Arc::downgrade(&table);
    metrics.count_running(move || {
        t.upgrade().map_or(0, |t| {
            let n = lock(&t).pods.values().filter(|e| !e.rt.terminal).count();
            i64::try_from(n).unwrap_or(i64::MAX)
        })
    });
    let declared = declared.watches(&pods, |key: &Key, _: Option<&Bound>| {
        Some(Work::Pod(key.clone()))
    });
    // What each node looked like: only a change of its simulation concerns its pods (a node
    // reports its status every 10 s). Its own lock: handlers run under the cache's.
    let seen: Arc<Mutex<HashMap<String, SimNode>>> = Arc::default();
    let (q, periods) = (
        declared.queue().clone(),
        (config.container_gc_period, config.image_gc_period),
    );
    let declared = declared.watches(&nodes, move |key: &Key, node: Option<&SimNode>| {
        let name = &key.1;
        let before = match node {
            Some(n) => lock(&seen).insert(name.clone(), n.clone()),
            None => lock(&seen).remove(name),
        };
        if before.is_none() && node.is_some() {
            q.add_after(Work::Containers(name.clone()), periods.0);
            q.add_after(Work::Images(name.clone()), periods.1);
        }
        (before.as_ref() != node).then(|| Work::Node(name.clone()))
    });
    let kubelet = Arc::new(Kubelet {
        recorder: Recorder::new(ctx.client.clone(), COMPONENT, ctx.clock),
        ctx,
        config,
        pods,
        nodes,
        mountable,
        table,
        queue: declared.queue().clone(),
        metrics,
    });
    declared
        .run_with(
            WORKERS,
            kubelet,
            |k, w: Work| async move { k.sync(w).await },
        )
        .await;
}

impl<C: Cluster> Kubelet<C> {
    /// Now, to the second: API times are whole seconds, and a status must compare equal to
    /// itself once written.
    fn now(&self) -> Timestamp {
        let t = self.ctx.clock.now();
        Timestamp::from_second(t.as_second()).unwrap_or(t)
    }

    fn node(&self, name: &str) -> Option<SimNode> {
        self.nodes.get(&(String::new(), name.to_owned()))
    }

    async fn sync(&self, w: Work) -> Result<Option<Duration>, Error> {
        match w {
            Work::Pod(key) => self.sync_pod(&key).await,
            Work::Node(name) => {
                let keys: Vec<Key> = self.pods.read(|m| {
                    m.iter()
                        .filter(|(_, p)| node_of(&p.0) == Some(name.as_str()))
                        .map(|(k, _)| k.clone())
                        .collect()
                });
                for k in keys {
                    self.queue.add(Work::Pod(k));
                }
                Ok(None)
            }
            Work::Mounts(ns) => {
                let waiting: Vec<Key> = {
                    let t = lock(&self.table);
                    self.pods.read(|m| {
                        m.keys()
                            .filter(|k| k.0 == ns && !t.pods.contains_key(*k))
                            .cloned()
                            .collect()
                    })
                };
                for k in waiting {
                    self.queue.add(Work::Pod(k));
                }
                Ok(None)
            }
            Work::Containers(name) => self.collect_containers(&name).await,
            Work::Images(name) => self.collect_images(&name).await,
            Work::Publish(name) => self.publish_images(&name).await.map(|()| None),
        }
    }

    async fn sync_pod(&self, key: &Key) -> Result<Option<Duration>, Error> {
        let now = self.now();
        let pod = self.pods.get(key).map(|b| b.0);
        let placed = pod.as_ref().and_then(|p| {
            let name = node_of(p)?.to_owned();
            let node = self.node(&name)?;
            Some((name, node))
        });
        let (Some(pod), Some((node_name, node))) = (pod, placed) else {
            // Deleted, or not on a simulated node (any more).
            lock(&self.table).forget(key);
            return Ok(None);
        };
        if node.stopped {
            // Its kubelet is down: nothing moves until the node starts again.
            return Ok(None);
        }
        let step = match self.step(key, &pod, &node_name, &node, now) {
            Outcome::Nothing => return Ok(None),
            Outcome::NoSandbox(note) => {
                self.pod_event(&pod, &node_name, &note);
                return Ok(Some(SANDBOX_RETRY));
            }
            Outcome::NoMounts(_) if pod.metadata.deletion_timestamp.is_some() => {
                // Nothing was started: nothing to stop.
                self.finish_deletion(key, &pod).await?;
                return Ok(None);
            }
            Outcome::NoMounts(notes) => {
                for note in &notes {
                    self.pod_event(&pod, &node_name, note);
                }
                let placement = Placement {
                    host_ip: node.host_ip.clone(),
                    pod_ip: None,
                };
                let qos = crate::qos::class(pod.spec.as_ref().expect("a bound pod has a spec"));
                let status = status::creating(&pod, &placement, qos, now);
                if pod.status.as_ref() != Some(&status) {
                    self.write_status(key, &pod, status).await?;
                }
                return Ok(Some(MOUNT_RETRY));
            }
            Outcome::Run(step) => step,
        };
        for e in &step.events {
            self.pod_event(&pod, &node_name, e);
        }
        if step.pulled {
            self.queue
                .add_after(Work::Publish(node_name.clone()), PUBLISH_DELAY);
        }
        let wait = |next: Option<Timestamp>| {
            next.map(|t| Duration::try_from(now.duration_until(t)).unwrap_or(Duration::ZERO))
        };
        let qos = crate::qos::class(pod.spec.as_ref().expect("a bound pod has a spec"));
        let status = status::generate(&pod, &step.rt, step.restart, &step.placement, qos, now);
        let unchanged = match &step.written {
            // Our last write is not in the cache yet: its watch event syncs the pod again.
            Some((rv, _)) if resource_version(&pod.metadata) < *rv => {
                return Ok(wait(step.next));
            }
            Some((_, written)) => *written == status,
            None => pod.status.as_ref() == Some(&status),
        };
        let terminal = matches!(status.phase.as_deref(), Some("Succeeded" | "Failed"));
        if !unchanged && !self.write_status(key, &pod, status).await? {
            return Ok(wait(step.next));
        }
        if terminal && step.rt.terminal && pod.metadata.deletion_timestamp.is_some() {
            self.finish_deletion(key, &pod).await?;
            return Ok(None);
        }
        Ok(wait(step.next))
    }

    /// Starts, advances and (on deletion) stops the pod's runtime, under the table's lock.
    fn step(
        &self,
        key: &Key,
        pod: &Pod,
        node_name: &str,
        node: &SimNode,
        now: Timestamp,
    ) -> Outcome {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let Some(spec) = pod.spec.as_ref() else {
            return Outcome::Nothing;
        };
        let mut t = lock(&self.table);
        if t.pods
            .get(key)
            .is_some_and(|e| e.rt.uid != uid || e.node != node_name)
        {
            t.forget(key);
        }
        let mut events = Vec::new();
        let mut pulled = false;
        if !t.pods.contains_key(key) {
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            if matches!(phase, Some("Succeeded" | "Failed")) {
                return Outcome::Nothing;
            }
            let missing = volumes::missing(spec, &key.0, |n| self.mountable.exists(&key.0, n));
            if !missing.is_empty() {
                return Outcome::NoMounts(
                    missing
                        .into_iter()
                        .map(|m| Note {
                            warning: true,
                            reason: "FailedMount",
                            message: m.message,
                            field: None,
                        })
                        .collect(),
                );
            }
            let d = annotations::read(pod.metadata.annotations.as_ref());
            events.extend(d.problems.iter().map(|p| Note {
                warning: true,
                reason: "InvalidAnnotation",
                message: p.clone(),
                field: None,
            }));
            let nrt = t.nodes.entry(node_name.to_owned()).or_default();
            let held = if spec.host_network == Some(true) {
                None
            } else {
                // A pod that has an address (the kubelet restarted) keeps it.
                let had = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.pod_ip.as_deref()?.parse().ok());
                match allocate(nrt, node, had) {
                    Ok(ip) => Some(ip),
                    Err(message) => {
                        return Outcome::NoSandbox(Note {
                            warning: true,
                            reason: "FailedCreatePodSandBox",
                            message: format!(
                                "Failed to create pod sandbox: node {node_name}: {message}"
                            ),
                            field: None,
                        });
                    }
                }
            };
            let size = d.image_size.unwrap_or(self.config.default_image_size);
            let specs: Vec<Spec> = spec
                .init_containers
                .iter()
                .flatten()
                .map(|c| (c, true))
                .chain(spec.containers.iter().map(|c| (c, false)))
                .map(|(c, init)| Spec {
                    name: c.name.clone(),
                    image: resolve(c.image.as_deref().unwrap_or_default()),
                    init,
                    sidecar: init && c.restart_policy.as_deref() == Some("Always"),
                })
                .collect();
            for s in &specs {
                pulled |= nrt.pull(&s.image, size, now);
            }
            nrt.pods.insert(key.clone());
            let job = pod
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "Job" && o.api_version == "batch/v1");
            let behaviour = Behaviour {
                run_for: d
                    .run_for
                    .or(job.then_some(self.config.runtime.job_pod_duration)),
                exit_code: d.exit_code.unwrap_or(0),
                restart: RestartPolicy::parse(spec.restart_policy.as_deref()),
                stop_after: d.stop_after.unwrap_or_default(),
            };
            let address = match held {
                Some(ip) => Some(ip.to_string()),
                None => node.host_ip.clone(),
            };
            t.pods.insert(
                key.clone(),
                Entry {
                    node: node_name.to_owned(),
                    rt: PodRuntime::start(&uid, &specs, now),
                    behaviour,
                    held,
                    address,
                    written: None,
                },
            );
        }
        let Table { pods, nodes } = &mut *t;
        let Some(entry) = pods.get_mut(key) else {
            return Outcome::Nothing;
        };
        if let Some(ts) = &pod.metadata.deletion_timestamp
            && entry.rt.stop.is_none()
            && !entry.rt.terminal
        {
            // The kubelet sends SIGTERM now and kills what still runs when the grace period,
            // which the deletionTimestamp ends, is over (`killPodWithSyncResult`, a Killing
            // event each); the containers stop on SIGTERM after `kgc.io/stop-after`.
            entry.rt.stop = Some(Stop::after_sigterm(
                now.min(ts.0),
                entry.behaviour.stop_after,
                ts.0,
            ));
            for c in entry.rt.containers.iter().filter(|c| !c.init || c.sidecar) {
                if matches!(c.state, State::Running { .. }) {
                    events.push(Note {
                        warning: false,
                        reason: "Killing",
                        message: format!("Stopping container {}", c.name),
                        field: Some(format!("spec.containers{{{}}}", c.name)),
                    });
                }
            }
        }
        let (dead, next) = entry
            .rt
            .advance(&entry.behaviour, &self.config.runtime, now);
        let nrt = nodes.entry(node_name.to_owned()).or_default();
        nrt.dead.extend(dead);
        if entry.rt.terminal
            && let Some(ip) = entry.held.take()
            && let Some((_, range)) = nrt.range.as_mut()
        {
            range.release(ip);
        }
        Outcome::Run(Box::new(Step {
            rt: entry.rt.clone(),
            restart: entry.behaviour.restart,
            placement: Placement {
                host_ip: node.host_ip.clone(),
                pod_ip: entry.address.clone(),
            },
            written: entry.written.clone(),
            next,
            events,
            pulled,
        }))
    }

    /// Writes `status` through `pods/status` from the cached copy (its resourceVersion the
    /// precondition). `false`: not written (a newer copy is on its way, or the pod is gone).
    async fn write_status(&self, key: &Key, pod: &Pod, status: PodStatus) -> Result<bool, Error> {
        let mut body = pod.clone();
        body.status = Some(status.clone());
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        match api.replace_status(&key.1, &params, &body).await {
            Ok(written) => {
                self.metrics.status_write("ok");
                let rv = resource_version(&written.metadata);
                let mut t = lock(&self.table);
                if let Some(e) = t.pods.get_mut(key)
                    && Some(&e.rt.uid) == pod.metadata.uid.as_ref()
                {
                    e.written = Some((rv, status));
                }
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.is_conflict() => {
                self.metrics.status_write("conflict");
                Ok(false)
            }
            Err(kube::Error::Api(s)) if s.is_not_found() => {
                lock(&self.table).forget(key);
                Ok(false)
            }
            Err(e) => {
                self.metrics.status_write("error");
                Err(e.into())
            }
        }
    }

    /// The final DELETE of a graceful deletion, once the API shows the pod terminal: grace 0,
    /// and the pod's uid as precondition, so that a new pod of the same name is never deleted
    /// (`status_manager.go` `syncPod` → `canBeDeleted`).
    async fn finish_deletion(&self, key: &Key, pod: &Pod) -> Result<(), Error> {
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&key.1, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_not_found() || s.is_conflict() => {}
            Err(e) => return Err(e.into()),
        }
        lock(&self.table).forget(key);
        Ok(())
    }

    fn pod_event(&self, pod: &Pod, node: &str, e: &Note) {
        let m = &pod.metadata;
        let involved = ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Pod".to_owned()),
            name: m.name.clone(),
            namespace: m.namespace.clone(),
            uid: m.uid.clone(),
            field_path: e.field.clone(),
            ..ObjectReference::default()
        };
        self.record(involved, node, e);
    }

    fn node_event(&self, node: &str, e: &Note) {
        let involved = ObjectReference {
            kind: Some("Node".to_owned()),
            name: Some(node.to_owned()),
            // The kubelet's nodeRef carries the node's name as its uid.
            uid: Some(node.to_owned()),
            ..ObjectReference::default()
        };
        self.record(involved, node, e);
    }

    /// Records an event as the kubelet's recorder does (source `kubelet` on the node).
    fn record(&self, involved: ObjectReference, node: &str, e: &Note) {
        let recorder = self.recorder.on_host(node);
        match e.warning {
            true => recorder.warning(involved, e.reason, e.message.clone()),
            false => recorder.normal(involved, e.reason, e.message.clone()),
        }
    }

    /// Now, when the node's kubelet runs (its GC passes need it up).
    fn gc_ready(&self, name: &str) -> Option<Timestamp> {
        let node = self.node(name)?;
        (!node.stopped).then(|| self.now())
    }

    /// Container GC of one node; `None` stops the period (the node is no longer simulated).
    async fn collect_containers(&self, name: &str) -> Result<Option<Duration>, Error> {
        let period = Some(self.config.container_gc_period);
        let Some(now) = self.gc_ready(name) else {
            return Ok(self.node(name).map(|_| self.config.container_gc_period));
        };
        let outcome = {
            let mut t = lock(&self.table);
            let Table { pods, nodes } = &mut *t;
            let Some(nrt) = nodes.get_mut(name) else {
                return Ok(period);
            };
            let keys: Vec<Key> = nrt.pods.iter().cloned().collect();
            let live = keys.iter().filter_map(|k| pods.get(k)).map(|e| &e.rt);
            nrt.collect_containers(live, &self.config.containers, now)
        };
        match outcome {
            Ok(removed) => {
                if !removed.is_empty() {
                    tracing::debug!(
                        controller = NAME,
                        node = name,
                        removed = removed.len(),
                        "dead containers removed"
                    );
                }
                self.metrics.containers_removed.inc_by(removed.len() as u64);
                if !removed.is_empty() {
                    self.node_event(
                        name,
                        &removed_note(
                            CONTAINERS_COLLECTED,
                            "dead containers",
                            removed.iter().map(String::as_str),
                            None,
                        ),
                    );
                }
            }
            Err(e) => {
                let e = Note {
                    warning: true,
                    reason: "ContainerGCFailed",
                    message: e.to_string(),
                    field: None,
                };
                self.node_event(name, &e);
            }
        }
        Ok(period)
    }

    /// Image GC of one node, with the kubelet's events for what it could not do.
    async fn collect_images(&self, name: &str) -> Result<Option<Duration>, Error> {
        let period = Some(self.config.image_gc_period);
        let Some(now) = self.gc_ready(name) else {
            return Ok(self.node(name).map(|_| self.config.image_gc_period));
        };
        let outcome = {
            let mut t = lock(&self.table);
            let Table { pods, nodes } = &mut *t;
            let Some(nrt) = nodes.get_mut(name) else {
                return Ok(period);
            };
            let keys: Vec<Key> = nrt.pods.iter().cloned().collect();
            let live = keys.iter().filter_map(|k| pods.get(k)).map(|e| &e.rt);
            nrt.collect_images(live, &self.config.images, self.config.image_fs_size, now)
        };
        let pass = match outcome {
            Ok(pass) => pass,
            Err(e) => {
                let e = Note {
                    warning: true,
                    reason: "ImageGCFailed",
                    message: e.to_string(),
                    field: None,
                };
                self.node_event(name, &e);
                return Ok(period);
            }
        };
        for r in &pass.removed {
            let reason = match r.reason {
                ImageReason::Age => "age",
                ImageReason::Space => "space",
            };
            self.metrics.image_removed(reason);
            self.metrics.image_bytes_freed.inc_by(r.size.unwrap_or(0));
            tracing::info!(controller = NAME, node = name, image = %r.repo_tags.first().unwrap_or(&r.id), bytes = r.size.unwrap_or(0), reason, "image removed");
        }
        if !pass.removed.is_empty() {
            let freed = pass.removed.iter().map(|r| r.size.unwrap_or(0)).sum();
            let names = pass
                .removed
                .iter()
                .map(|r| r.repo_tags.first().unwrap_or(&r.id).as_str());
            self.node_event(
                name,
                &removed_note(IMAGES_COLLECTED, "image", names, Some(freed)),
            );
        }
        if let Some(error) = pass.error {
            // `FreeDiskSpaceFailed` (upstream's `freeSpace` shortfall).
            let e = Note {
                warning: true,
                reason: "FreeDiskSpaceFailed",
                message: error,
                field: None,
            };
            self.node_event(name, &e);
        }
        if !pass.removed.is_empty() {
            self.publish_images(name).await?;
        }
        Ok(period)
    }

    /// Patches the node's `status.images` (that field only) when it changed.
    async fn publish_images(&self, name: &str) -> Result<(), Error> {
        let images = {
            let t = lock(&self.table);
            match t.nodes.get(name) {
                Some(n) => n.status_images(MAX_STATUS_IMAGES),
                None => return Ok(()),
            }
        };
        let patch = Node {
            status: Some(NodeStatus {
                images: Some(images),
                ..NodeStatus::default()
            }),
            ..Node::default()
        };
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let api: Api<Node> = Api::all(self.ctx.client.clone());
        match api.patch_status(name, &params, &Patch::Merge(&patch)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()?
        .node_name
        .as_deref()
        .filter(|n| !n.is_empty())
}

/// A pod address from the node's range (`had`, if it is in the range and free), the range
/// (re)read from `spec.podCIDR` when it changed.
fn allocate(
    nrt: &mut NodeRuntime,
    node: &SimNode,
    had: Option<Ipv4Addr>,
) -> Result<Ipv4Addr, String> {
    let cidr = node
        .pod_cidr
        .as_deref()
        .ok_or("the node has no spec.podCIDR to give pods addresses from")?;
    if nrt.range.as_ref().is_none_or(|(c, _)| c != cidr) {
        let range = Range::parse(cidr).map_err(|e| e.to_string())?;
        nrt.range = Some((cidr.to_owned(), range));
    }
    let (_, range) = nrt.range.as_mut().expect("set above");
    if let Some(ip) = had.filter(|ip| range.reserve(*ip)) {
        return Ok(ip);
    }
    range
        .allocate()
        .ok_or_else(|| format!("no IP addresses available in range {cidr}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_simulated_nodes_are_kept_with_their_range_and_address() {
        let node = |annotations: Value| {
            json!({"metadata": {"name": "n", "annotations": annotations},
                   "spec": {"podCIDR": "10.244.1.0/24"},
                   "status": {"addresses": [{"type": "Hostname", "address": "n"},
                                            {"type": "InternalIP", "address": "172.18.0.2"}]}})
        };
        assert_eq!(SimNode::view(&node(json!({}))), None);
        assert_eq!(SimNode::view(&node(json!({SIMULATED: "yes"}))), None);
        let running = SimNode::view(&node(json!({SIMULATED: "true"}))).unwrap();
        assert_eq!(
            running,
            SimNode {
                stopped: false,
                pod_cidr: Some("10.244.1.0/24".into()),
                host_ip: Some("172.18.0.2".into()),
            }
        );
        let stopped = SimNode::view(&node(json!({SIMULATED: "true", STOPPED: "true"}))).unwrap();
        assert!(stopped.stopped);
    }

    #[test]
    fn only_bound_pods_are_cached() {
        let pod = |node: &str| {
            json!({"metadata": {"name": "p", "namespace": "d"},
                   "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}})
        };
        assert!(Bound::view(&pod("")).is_none());
        let bound = Bound::view(&pod("n")).unwrap();
        assert_eq!(node_of(&bound.0), Some("n"));
    }

    #[test]
    fn addresses_come_from_the_range_and_are_kept() {
        let mut nrt = NodeRuntime::default();
        let node = SimNode {
            stopped: false,
            pod_cidr: Some("10.244.1.0/24".into()),
            host_ip: None,
        };
        let kept = "10.244.1.77".parse().unwrap();
        assert_eq!(allocate(&mut nrt, &node, Some(kept)), Ok(kept));
        assert_eq!(
            allocate(&mut nrt, &node, None).unwrap().to_string(),
            "10.244.1.2"
        );
        let none = SimNode {
            pod_cidr: None,
            ..node
        };
        assert!(
            allocate(&mut nrt, &none, None)
                .unwrap_err()
                .contains("spec.podCIDR")
        );
    }
}
