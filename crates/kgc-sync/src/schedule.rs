//! The loop: a run every interval, sooner after a failure ([`Backoff`]), until told to stop.
//! A run in progress is finished before stopping (a SIGTERM never cuts an apply short); losing
//! the leader lease drops the loop instead, as client-go cancels the leader's context.

use tokio::sync::watch;

use crate::metrics::Metrics;
use crate::record::Outcome;
use crate::{Backoff, Kustomization};

pub async fn run(
    k: &Kustomization,
    client: &kube::Client,
    metrics: Option<&Metrics>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = Backoff::new(k.interval);
    while !*stop.borrow() {
        let run = k.reconcile(client, Some(k.interval)).await;
        if let Some(m) = metrics {
            m.observe(&run);
        }
        let wait = backoff.next(run.outcome == Outcome::Failed);
        if run.outcome == Outcome::Failed {
            tracing::warn!(retry_in = ?wait, "Reconciliation failed: {}", run.record.message.as_deref().unwrap_or(""));
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}
