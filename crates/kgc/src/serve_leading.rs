//! `kgc serve`'s controllers, run only while this replica leads, as upstream's control plane
//! runs them: the collectors, the cluster's own controllers, the node lifecycle controller and
//! the simulated nodes and kubelets while it holds Lease `kube-system/kube-controller-manager`,
//! the scheduler while it holds `kube-system/kube-scheduler`
//! (`cmd/kube-controller-manager/app/controllermanager.go`, `cmd/kube-scheduler/app/server.go`:
//! each `leaderelection.RunOrDie` with a `hostname_uuid` identity). Several replicas on one etcd
//! thus run one set of controllers; one replica on SQLite takes both leases at once, as k3s's
//! server does.
//!
//! Each term starts fresh controllers on fresh informers, as `kgc controller` does: a stepped
//! down replica keeps no queue, expectation or cache of the term it lost. Every write of a
//! term goes through its elector's fence, so a replica paused past its lease writes nothing
//! once it runs again.

use std::sync::{Arc, RwLock};

use kgc_client::Fence;
use kgc_gc::{Config as GcConfig, GarbageCollector};
use kgc_inprocess::InProcess;
use kgc_runtime::informer::Informers;
use kgc_runtime::leader_election::{self, LeaderElector, LeaderMetrics, Leading};
use kgc_store::Store;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Upstream's lease names, in kube-system.
pub const NAMESPACE: &str = "kube-system";
pub const CONTROLLER_MANAGER: &str = "kube-controller-manager";
pub const SCHEDULER: &str = "kube-scheduler";

/// The collector of the current term, which `/debug/controllers/garbagecollector/graph` dumps.
pub type GraphSlot = Arc<RwLock<Option<GarbageCollector<InProcess>>>>;

/// What every term's controllers are built from.
#[derive(Clone)]
pub struct Base {
    pub store: Store,
    /// The loopback client every controller writes with.
    pub client: kube::Client,
    pub clock: kgc_meta::time::Clock,
    pub queues: kgc_runtime::queue::QueueMetrics,
    pub root_ca: Option<Arc<str>>,
    /// The collectors' decision history, served on `/debug/gc/decisions`.
    pub decisions: kgc_runtime::decisions::Decisions,
    pub disabled: Vec<String>,
}

impl Base {
    /// A context on fresh informers: one set of watches for the term, whose writes (through
    /// the store and through the loopback client) go only while `fence` is open.
    fn context(&self, fence: &Fence) -> kgc_runtime::Context<InProcess> {
        kgc_runtime::Context {
            informers: Informers::new(InProcess::new(self.store.clone()).fenced(fence.clone())),
            client: fence.client(self.client.clone()),
            clock: self.clock,
            queues: Some(self.queues.clone()),
            root_ca: self.root_ca.clone(),
            decisions: self.decisions.clone(),
        }
    }

    fn on(&self, name: &str) -> bool {
        !self.disabled.iter().any(|d| d == name)
    }
}

/// kube-controller-manager's term: every controller but the scheduler.
pub struct ControllerManager {
    pub base: Base,
    /// The collector's settings and metrics (registered once, kept across terms); `None`
    /// when `gc` is off.
    pub gc: Option<(GcConfig, kgc_gc::Metrics)>,
    pub graph: GraphSlot,
    pub lifecycle: crate::lifecycle::LifecycleArgs,
    pub lifecycle_metrics: Arc<kgc_lifecycle::Metrics>,
    pub nodes: crate::nodes::Nodes,
    pub kubelet: kgc_kubelet::Config,
    pub kubelet_metrics: kgc_kubelet::Metrics,
}

impl Leading for ControllerManager {
    fn start(&mut self, fence: Fence) -> JoinHandle<()> {
        let ctx = self.base.context(&fence);
        let gc = self.gc.as_ref().map(|(config, metrics)| {
            GarbageCollector::with_metrics(ctx.informers.clone(), config.clone(), metrics.clone())
        });
        *self.graph.write().unwrap_or_else(|p| p.into_inner()) = gc.clone();
        let gc = async move {
            if let Some(gc) = gc {
                gc.run().await;
            }
        };
        let disabled = self.base.disabled.clone();
        let lifecycle = crate::lifecycle::LifecycleArgs::any_enabled(&disabled).then(|| {
            self.lifecycle.clone().run(
                ctx.clone(),
                disabled.clone(),
                Arc::clone(&self.lifecycle_metrics),
            )
        });
        let lifecycle = async move {
            if let Some(run) = lifecycle {
                run.await;
            }
        };
        let kubelet = self.base.on(kgc_kubelet::NAME).then(|| {
            kgc_kubelet::run(
                ctx.clone(),
                self.kubelet.clone(),
                self.kubelet_metrics.clone(),
            )
        });
        let kubelet = async move {
            if let Some(run) = kubelet {
                run.await;
            }
        };
        // The scheduler has a lease of its own.
        let mut without_scheduler = disabled.clone();
        without_scheduler.push(kgc_scheduler::NAME.to_owned());
        let (volumes, endpoints, quota) = (
            self.lifecycle.volumes(),
            self.lifecycle.endpoints(),
            self.lifecycle.resource_quota(),
        );
        let nodes = {
            let (ctx, nodes, disabled) = (ctx.clone(), self.nodes.clone(), disabled.clone());
            async move { crate::nodes::run(ctx, nodes, &disabled).await }
        };
        let controllers = async move {
            crate::controllers::run(ctx, &without_scheduler, volumes, endpoints, quota).await
        };
        tokio::spawn(async move {
            tokio::join!(gc, lifecycle, kubelet, controllers, nodes);
        })
    }

    fn stopped(&mut self) {
        *self.graph.write().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// kube-scheduler's term.
pub struct Scheduler(pub Base);

impl Leading for Scheduler {
    fn start(&mut self, fence: Fence) -> JoinHandle<()> {
        tokio::spawn(kgc_scheduler::run(self.0.context(&fence)))
    }
}

/// Runs `leading` while this replica holds `namespace/name` (or always, without
/// `--leader-elect`), until `stop`.
pub fn spawn(
    leading: impl Leading + 'static,
    election: Option<(&crate::election::ElectionArgs, &str)>,
    client: &kube::Client,
    name: &str,
    sole_candidate: bool,
    metrics: LeaderMetrics,
    stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    match election {
        Some((args, identity)) => {
            let elector =
                LeaderElector::new(client.clone(), args.config(NAMESPACE, name, identity))
                    .sole_candidate(sole_candidate);
            tokio::spawn(elector.lead(leading, metrics, stop))
        }
        None => tokio::spawn(leader_election::run_unelected(leading, metrics, stop)),
    }
}
