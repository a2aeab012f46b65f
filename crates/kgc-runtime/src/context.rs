//! What every controller shares (upstream's `ControllerContext` of kube-controller-manager,
//! `cmd/kube-controller-manager/app/controllermanager.go`): the informers, the client it
//! writes with, the clock, the queues' metrics, the collectors' decision history. The
//! collectors run on it too, so there is one context for every controller of a process.

use std::sync::Arc;

use kgc_client::Cluster;
use kgc_meta::time::Clock;

use crate::decisions::Decisions;
use crate::informer::Informers;
use crate::queue::{QueueMetrics, WorkQueue};

/// What every controller shares: the process's informers, the client it writes with, the
/// clock, the queues' metrics, the collectors' decision history.
#[derive(Clone)]
pub struct Context<C> {
    pub informers: Informers<C>,
    /// Typed writes (k8s-openapi objects) with the whole API's semantics: in `kgc serve` the
    /// API server's loopback client (no socket), in `kgc controller` the kubeconfig's.
    pub client: kube::Client,
    pub clock: Clock,
    pub queues: Option<QueueMetrics>,
    /// The PEM bundle that verifies the API server, which [`root_ca`] publishes (upstream
    /// `--root-ca-file`); `None` when there is none (a plain-HTTP server).
    pub root_ca: Option<Arc<str>>,
    /// Where the collectors record each deletion with its reason (the process's history,
    /// served on `/debug/gc/decisions`).
    pub decisions: Decisions,
}

impl<C: Cluster> Context<C> {
    pub fn cluster(&self) -> &C {
        self.informers.cluster()
    }

    /// A work queue reporting under `name` when the process has a registry.
    pub fn queue<K: std::hash::Hash + Eq + Clone>(&self, name: &str) -> WorkQueue<K> {
        match &self.queues {
            Some(m) => WorkQueue::with_metrics(name, m),
            None => WorkQueue::new(),
        }
    }
}
