//! Counters of the lifecycle collectors (`kgc_lifecycle_*`), by collector and reason.

use kgc_runtime::metrics::Registry;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

type CollectorReason = [(&'static str, &'static str); 2];
type CollectorOnly = [(&'static str, &'static str); 1];

/// Per collector and reason: objects deleted, deletions that failed, objects skipped because
/// they could not be judged (malformed), and passes run. A default value counts without being
/// exposed.
#[derive(Default)]
pub struct Metrics {
    deleted: Family<CollectorReason, Counter>,
    errors: Family<CollectorReason, Counter>,
    skipped: Family<CollectorReason, Counter>,
    passes: Family<CollectorOnly, Counter>,
}

fn labels(collector: &'static str, reason: &'static str) -> CollectorReason {
    [("collector", collector), ("reason", reason)]
}

impl Metrics {
    /// The counters, registered in `registry`.
    pub fn new(registry: &Registry) -> Self {
        let m = Self::default();
        registry.register(
            "kgc_lifecycle_deleted",
            "Objects a lifecycle collector deleted, by collector and reason.",
            m.deleted.clone(),
        );
        registry.register(
            "kgc_lifecycle_errors",
            "Lifecycle collector actions that failed (retried later), by collector and reason.",
            m.errors.clone(),
        );
        registry.register(
            "kgc_lifecycle_skipped",
            "Objects a lifecycle collector could not judge (malformed) and left alone.",
            m.skipped.clone(),
        );
        registry.register(
            "kgc_lifecycle_passes",
            "Passes a periodic lifecycle collector ran.",
            m.passes.clone(),
        );
        m
    }

    pub fn deleted(&self, collector: &'static str, reason: &'static str) {
        self.deleted.get_or_create(&labels(collector, reason)).inc();
    }

    pub fn error(&self, collector: &'static str, reason: &'static str) {
        self.errors.get_or_create(&labels(collector, reason)).inc();
    }

    pub fn skipped(&self, collector: &'static str, reason: &'static str) {
        self.skipped.get_or_create(&labels(collector, reason)).inc();
    }

    pub fn pass(&self, collector: &'static str) {
        self.passes.get_or_create(&[("collector", collector)]).inc();
    }

    /// The value of one counter (tests and benchmarks).
    pub fn deleted_count(&self, collector: &'static str, reason: &'static str) -> u64 {
        self.deleted
            .get(&labels(collector, reason))
            .map_or(0, |c| c.get())
    }
}

#[cfg(test)]
mod tests {
    use kgc_runtime::metrics::Format;

    use super::*;

    #[test]
    fn renders_counters_by_collector_and_reason() {
        let registry = Registry::default();
        let m = Metrics::new(&registry);
        m.deleted("podgc", "terminated");
        m.deleted("podgc", "terminated");
        m.error("ttl", "delete");
        m.pass("podgc");
        let text = registry.encode(Format::Prometheus);
        assert!(text.contains(
            "kgc_lifecycle_deleted_total{collector=\"podgc\",reason=\"terminated\"} 2\n"
        ));
        assert!(
            text.contains("kgc_lifecycle_errors_total{collector=\"ttl\",reason=\"delete\"} 1\n")
        );
        assert!(text.contains("kgc_lifecycle_passes_total{collector=\"podgc\"} 1\n"));
        assert!(text.contains("# TYPE kgc_lifecycle_skipped_total counter\n"));
        assert_eq!(m.deleted_count("podgc", "terminated"), 2);
    }
}
