//! Counters of the lifecycle collectors, rendered on `/metrics` (Prometheus text).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// Per collector and reason: objects deleted, deletions that failed, objects skipped because
/// they could not be judged (malformed), and passes run.
#[derive(Default)]
pub struct Metrics {
    counters: Mutex<BTreeMap<(Family, &'static str, &'static str), u64>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Family {
    Deleted,
    Errors,
    Skipped,
    Passes,
}

impl Family {
    fn name(self) -> (&'static str, &'static str) {
        match self {
            Family::Deleted => (
                "kgc_lifecycle_deleted_total",
                "Objects a lifecycle collector deleted, by collector and reason.",
            ),
            Family::Errors => (
                "kgc_lifecycle_errors_total",
                "Lifecycle collector actions that failed (retried later), by collector and reason.",
            ),
            Family::Skipped => (
                "kgc_lifecycle_skipped_total",
                "Objects a lifecycle collector could not judge (malformed) and left alone.",
            ),
            Family::Passes => (
                "kgc_lifecycle_passes_total",
                "Passes a periodic lifecycle collector ran.",
            ),
        }
    }
}

impl Metrics {
    fn bump(&self, f: Family, collector: &'static str, reason: &'static str) {
        *self
            .counters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((f, collector, reason))
            .or_default() += 1;
    }

    pub fn deleted(&self, collector: &'static str, reason: &'static str) {
        self.bump(Family::Deleted, collector, reason);
    }

    pub fn error(&self, collector: &'static str, reason: &'static str) {
        self.bump(Family::Errors, collector, reason);
    }

    pub fn skipped(&self, collector: &'static str, reason: &'static str) {
        self.bump(Family::Skipped, collector, reason);
    }

    pub fn pass(&self, collector: &'static str) {
        self.bump(Family::Passes, collector, "");
    }

    /// The value of one counter (tests and benchmarks).
    pub fn deleted_count(&self, collector: &str, reason: &str) -> u64 {
        self.counters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|((f, c, r), _)| *f == Family::Deleted && *c == collector && *r == reason)
            .map(|(_, v)| *v)
            .sum()
    }

    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        for f in [
            Family::Deleted,
            Family::Errors,
            Family::Skipped,
            Family::Passes,
        ] {
            let (name, help) = f.name();
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for ((_, c, r), v) in counters
                .range((f, "", "")..)
                .take_while(|((g, _, _), _)| *g == f)
            {
                if f == Family::Passes {
                    let _ = writeln!(out, "{name}{{collector=\"{c}\"}} {v}");
                } else {
                    let _ = writeln!(out, "{name}{{collector=\"{c}\",reason=\"{r}\"}} {v}");
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_by_collector_and_reason() {
        let m = Metrics::default();
        m.deleted("podgc", "terminated");
        m.deleted("podgc", "terminated");
        m.error("ttl", "delete");
        m.pass("podgc");
        let text = m.render();
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
