//! The Event each run files on the set's parent, with Flux's reasons and wording
//! (`fluxcd/kustomize-controller internal/controller/kustomization_controller.go`:
//! `ReconciliationSucceeded` "Reconciliation finished in …, next run in …", and
//! `ReconciliationFailed` with the error). Named and timestamped as client-go's recorder files
//! core/v1 Events (`kubernetes/kubernetes staging/src/k8s.io/client-go/tools/record/event.go`).
//! Unlike the cluster controllers (which send in the background), the write is awaited
//! (`Recorder::write`): `kgc sync --once` exits right after it. A failed write is logged, never
//! fatal.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kgc_runtime::events::{NORMAL, Recorder, WARNING};

use crate::record::Record;

/// Flux's reason of a run that applied its revision.
pub const SUCCEEDED: &str = "ReconciliationSucceeded";
/// Flux's reason of a run that failed.
pub const FAILED: &str = "ReconciliationFailed";

/// The component events come from.
pub const COMPONENT: &str = "kgc-sync";

/// A successful run's message: Flux's, with the revision and the counts; the next run is said
/// only when there is one (not after `kgc sync --once`).
pub fn succeeded(record: &Record, took: Duration, next_run: Option<Duration>) -> String {
    let next = next_run
        .map(|n| format!(", next run in {}", human(n)))
        .unwrap_or_default();
    format!(
        "Reconciliation finished in {took:.1?}{next}: {} ({})",
        record
            .attempted_revision
            .as_deref()
            .unwrap_or("unknown revision"),
        record.counts
    )
}

/// A failed run's message: the error, naming the revision once (an error of the revision's
/// manifests names it already; a failed fetch has none).
pub fn failed(record: &Record) -> String {
    let message = record.message.as_deref().unwrap_or("failed");
    match record.attempted_revision.as_deref() {
        Some(revision) if !message.contains(revision) => format!("{revision}: {message}"),
        _ => message.to_owned(),
    }
}

/// `1m`, `90s`, `1h`: an interval as people write it.
fn human(d: Duration) -> String {
    let s = d.as_secs();
    if d.subsec_millis() != 0 || s == 0 {
        format!("{d:?}")
    } else if s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// Files a `Normal` (`warning` false) or `Warning` event about `parent`, through the
/// process's one recorder (its correlator counts repeats, aggregates a run's similar messages
/// and throttles a flood).
pub async fn emit(
    client: &kube::Client,
    parent: ObjectReference,
    warning: bool,
    reason: &str,
    message: String,
) {
    let type_ = if warning { WARNING } else { NORMAL };
    let recorder = Recorder::new(client.clone(), COMPONENT, Default::default());
    if let Err(e) = recorder.write(parent, type_, reason, message).await {
        tracing::warn!(error = %e, "recording the sync's event failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;

    #[test]
    fn intervals_read_as_written() {
        assert_eq!(human(Duration::from_secs(60)), "1m");
        assert_eq!(human(Duration::from_secs(90)), "90s");
        assert_eq!(human(Duration::from_secs(7200)), "2h");
        assert_eq!(human(Duration::from_millis(1500)), "1.5s");
    }

    fn record(revision: Option<&str>, message: &str) -> Record {
        Record {
            attempted_revision: revision.map(str::to_owned),
            outcome: Some(Outcome::Failed),
            message: Some(message.to_owned()),
            ..Record::default()
        }
    }

    #[test]
    fn a_failure_names_its_revision_once() {
        let rev = "main@sha1:0123abcd";
        assert_eq!(
            failed(&record(
                Some(rev),
                &format!("revision {rev}: a.yaml:3: bad")
            )),
            format!("revision {rev}: a.yaml:3: bad")
        );
        assert_eq!(
            failed(&record(Some(rev), "deleting v1/ConfigMap/x: forbidden")),
            format!("{rev}: deleting v1/ConfigMap/x: forbidden")
        );
        assert_eq!(
            failed(&record(None, "fetching /r: not a repository")),
            "fetching /r: not a repository"
        );
    }

    #[test]
    fn a_single_run_says_no_next_run() {
        let mut r = record(Some("main@sha1:0123abcd"), "");
        r.outcome = Some(Outcome::Succeeded);
        let took = Duration::from_millis(1200);
        assert_eq!(
            succeeded(&r, took, Some(Duration::from_secs(60))),
            format!(
                "Reconciliation finished in 1.2s, next run in 1m: main@sha1:0123abcd ({})",
                r.counts
            )
        );
        assert_eq!(
            succeeded(&r, took, None),
            format!(
                "Reconciliation finished in 1.2s: main@sha1:0123abcd ({})",
                r.counts
            )
        );
    }
}
