//! The daemon's metrics (kustomize-controller's `gotk_reconcile_duration_seconds` and
//! `gotk_reconcile_condition`, shaped for one set): which revision is applied, when the last
//! run was and how long it took, and what the runs applied, pruned and failed.

use std::sync::atomic::AtomicU64;

use kgc_runtime::metrics::Registry;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use crate::Run;
use crate::record::Outcome;

type Labels = Vec<(&'static str, String)>;

#[derive(Clone)]
pub struct Metrics {
    /// 1 for the revision last applied, with the source (an info metric).
    revision: Family<Labels, Gauge>,
    last_attempt: Gauge,
    duration: Gauge<f64, AtomicU64>,
    applied: Counter,
    pruned: Counter,
    failures: Counter,
    suspended: Gauge,
}

impl Metrics {
    pub fn new(registry: &Registry) -> Self {
        let m = Metrics {
            revision: Family::default(),
            last_attempt: Gauge::default(),
            duration: Gauge::default(),
            applied: Counter::default(),
            pruned: Counter::default(),
            failures: Counter::default(),
            suspended: Gauge::default(),
        };
        registry.register(
            "kgc_sync_revision_info",
            "The revision last applied completely (value 1), and its source",
            m.revision.clone(),
        );
        registry.register(
            "kgc_sync_last_attempt_timestamp_seconds",
            "When the last run started, in seconds since the Unix epoch",
            m.last_attempt.clone(),
        );
        registry.register(
            "kgc_sync_last_duration_seconds",
            "How long the last run took",
            m.duration.clone(),
        );
        registry.register(
            "kgc_sync_objects_applied",
            "Objects created or changed by the runs",
            m.applied.clone(),
        );
        registry.register(
            "kgc_sync_objects_pruned",
            "Objects deleted by the runs",
            m.pruned.clone(),
        );
        registry.register(
            "kgc_sync_failures",
            "Runs that failed (nothing applied or pruned from an unread source)",
            m.failures.clone(),
        );
        registry.register(
            "kgc_sync_suspended",
            "Whether the sync is suspended",
            m.suspended.clone(),
        );
        m
    }

    /// Counts a finished run.
    pub fn observe(&self, run: &Run) {
        self.suspended
            .set(i64::from(run.outcome == Outcome::Suspended));
        if run.outcome == Outcome::Suspended {
            return;
        }
        self.last_attempt.set(run.started.as_second());
        self.duration.set(run.duration.as_secs_f64());
        let counts = run.record.counts;
        self.applied
            .inc_by((counts.created + counts.configured) as u64);
        self.pruned.inc_by(counts.deleted as u64);
        if run.outcome == Outcome::Failed {
            self.failures.inc();
        }
        if let Some(revision) = &run.record.revision {
            let labels = vec![
                ("revision", revision.clone()),
                ("source", run.record.source.clone()),
            ];
            if self.revision.get(&labels).is_none() {
                self.revision.clear();
                self.revision.get_or_create(&labels).set(1);
            }
        }
    }
}
