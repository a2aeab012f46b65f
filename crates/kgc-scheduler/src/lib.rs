//! The scheduler `kgc serve` runs (as kube-scheduler with its default profile, reduced to what
//! a cluster of simulated nodes needs): it binds each pending pod — no `spec.nodeName`,
//! `schedulerName` `default-scheduler`, not being deleted — to a node that fits, through the
//! `pods/binding` subresource.
//!
//! - [`node`], [`pod`]: what it reads of Nodes and Pods (shared watch caches of views);
//! - [`cache`]: every node's allocations, with the pods assumed while their binding is in
//!   flight;
//! - [`queue`]: the active queue, the unschedulable pods and their back-off;
//! - [`filter`], [`selector`], [`taints`], [`resources`]: the filters and upstream's messages;
//! - [`score`]: least-allocated and balanced spreading;
//! - [`volume`]: claims, and the `WaitForFirstConsumer` node selection;
//! - [`scheduler`]: the scheduling and binding cycles; [`events`]: its Events.
#![forbid(unsafe_code)]

pub mod cache;
pub mod filter;
pub mod node;
pub mod pod;
pub mod queue;
pub mod resources;
pub mod scheduler;
pub mod score;
pub mod selector;
pub mod taints;
pub mod volume;

use std::sync::Arc;

use kgc_client::Cluster;
use kgc_runtime::informer::Key;
use kgc_runtime::{Context, Next, run_workers};
use tokio::sync::{Notify, Semaphore};

/// The name `--controllers` and `--disable` know it by.
pub const NAME: &str = "scheduler";
/// The field manager of its writes.
pub const FIELD_MANAGER: &str = "kgc-scheduler";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// A claim was not bound within the binding timeout (upstream's wording).
    #[error("binding volumes: timed out waiting for the condition")]
    VolumeBindingTimeout,
}

impl Error {
    fn is_not_found(&self) -> bool {
        matches!(self, Error::Api(kube::Error::Api(s)) if s.code == 404)
    }
}

/// Runs the scheduler until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let i = &ctx.informers;
    let (pods, nodes, claims, volumes, classes) = tokio::join!(
        i.resource("", "pods"),
        i.resource("", "nodes"),
        i.resource("", "persistentvolumeclaims"),
        i.resource("", "persistentvolumes"),
        i.resource("storage.k8s.io", "storageclasses"),
    );
    let queue = queue::SchedulingQueue::new(ctx.queue(NAME));
    let cache = cache::Cache::default();
    let volumes = volume::Volumes {
        claims: i.cache(claims),
        volumes: i.cache(volumes),
        classes: i.cache(classes),
        claim_changed: Arc::new(Notify::new()),
    };
    let pods = i.cache::<pod::Pod>(pods);
    let nodes = i.cache::<node::Node>(nodes);
    {
        let (cache, queue) = (cache.clone(), queue.clone());
        nodes.on_change(Arc::new(move |key: &Key, n: Option<&node::Node>| {
            if cache.set_node(&key.1, n) {
                queue.move_all();
            }
        }));
    }
    {
        let (cache, queue) = (cache.clone(), queue.clone());
        pods.on_change(Arc::new(move |key: &Key, p: Option<&pod::Pod>| {
            let freed = cache.set_pod(key, p);
            match p {
                Some(p) if p.pending() => queue.pending(key, &p.spec),
                _ => queue.forget(key),
            }
            if freed {
                queue.move_all();
            }
        }));
    }
    {
        let (q, changed) = (queue.clone(), Arc::clone(&volumes.claim_changed));
        volumes
            .claims
            .on_change(Arc::new(move |_: &Key, _: Option<&volume::Claim>| {
                changed.notify_waiters();
                q.move_all();
            }));
        let q = queue.clone();
        volumes
            .volumes
            .on_change(Arc::new(move |_: &Key, _: Option<&volume::Volume>| {
                q.move_all()
            }));
        let q = queue.clone();
        volumes
            .classes
            .on_change(Arc::new(move |_: &Key, _: Option<&volume::Class>| {
                q.move_all()
            }));
    }
    tokio::join!(
        pods.synced(),
        nodes.synced(),
        volumes.claims.synced(),
        volumes.volumes.synced(),
        volumes.classes.synced(),
    );
    tracing::info!(controller = NAME, "started");
    let sched = Arc::new(scheduler::Scheduler {
        recorder: kgc_runtime::events::Recorder::new(
            ctx.client.clone(),
            pod::DEFAULT_SCHEDULER,
            ctx.clock,
        ),
        client: ctx.client.clone(),
        clock: ctx.clock,
        cache,
        queue: queue.clone(),
        pods,
        volumes,
        binds: Arc::new(Semaphore::new(scheduler::PARALLEL_BINDS)),
    });
    let flusher = {
        let queue = queue.clone();
        async move {
            let mut tick = tokio::time::interval(queue::FLUSH_PERIOD);
            loop {
                tick.tick().await;
                queue.flush_stale();
            }
        }
    };
    // One scheduling cycle at a time (kube-scheduler's `ScheduleOne` loop), on the runtime's
    // worker loop; a pod's binding runs on, holding one of the slots, while the next is
    // scheduled.
    let schedule = run_workers(queue.active.clone(), 1, move |key: Key| {
        let sched = Arc::clone(&sched);
        async move {
            if let Ok(permit) = Arc::clone(&sched.binds).acquire_owned().await {
                sched.schedule_one(key, permit);
            }
            Next::Done
        }
    });
    tokio::select! {
        () = flusher => {}
        () = schedule => {}
    }
}
