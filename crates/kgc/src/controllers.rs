//! The cluster's own controllers (kgc-controllers) as `kgc serve` runs them.

use kgc_client::Cluster;
use kgc_controllers::{Context, crd_finalizer, namespace, pod_termination};
use tokio::task::JoinHandle;

/// Starts every controller not in `disabled`.
pub fn spawn<C: Cluster>(ctx: Context<C>, disabled: &[String]) -> Vec<JoinHandle<()>> {
    let on = |name: &str| !disabled.iter().any(|d| d == name);
    let mut tasks = Vec::new();
    if on(namespace::NAME) {
        tasks.push(tokio::spawn(namespace::run(ctx.clone())));
    }
    if on(crd_finalizer::NAME) {
        tasks.push(tokio::spawn(crd_finalizer::run(ctx.clone())));
    }
    if on(pod_termination::NAME) {
        tasks.push(tokio::spawn(pod_termination::run(ctx)));
    }
    tasks
}
