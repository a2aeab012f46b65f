//! The collector's metrics: counters the workers bump, and gauges read from the running
//! collector's queues and graph at scrape time.
//!
//! They are registered once per process and shared by every collector it starts, so counters
//! keep counting across `kgc controller`'s leadership terms, each of which runs a fresh
//! collector.

use std::sync::{Arc, PoisonError, RwLock, Weak};

use kgc_runtime::metrics::{GaugeFn, NoLabels, Registry};
use kgc_runtime::queue::QueueMetrics;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

type Label = [(&'static str, &'static str); 1];

type Slot = RwLock<Option<Weak<dyn Observed>>>;

/// What the gauges read from a running collector.
pub(crate) trait Observed: Send + Sync {
    /// Items waiting in the attemptToDelete and attemptToOrphan queues.
    fn queue_depths(&self) -> [usize; 2];
    fn graph_len(&self) -> usize;
}

/// The collector's metrics (`kgc_gc_*`). A default value counts without being exposed.
#[derive(Clone, Default)]
pub struct Metrics {
    pub(crate) deleted: Counter,
    pub(crate) refs_removed: Counter,
    pub(crate) finalizers_removed: Counter,
    pub(crate) errors: Counter,
    pub(crate) api_get: Counter,
    pub(crate) api_delete: Counter,
    pub(crate) api_patch: Counter,
    pub(crate) graph_events: Counter,
    /// The `workqueue_*` families its queues report to.
    pub(crate) queues: Option<QueueMetrics>,
    /// The collector started last, while it runs.
    running: Arc<Slot>,
}

/// Requests the collector sent, by verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRequests {
    pub get: u64,
    pub delete: u64,
    pub patch: u64,
}

impl Metrics {
    /// The metrics, registered in `registry`.
    pub fn new(registry: &Registry) -> Self {
        let objects = Family::<Label, Counter>::default();
        let requests = Family::<Label, Counter>::default();
        let m = Self {
            deleted: objects.get_or_create_owned(&[("outcome", "deleted")]),
            refs_removed: objects.get_or_create_owned(&[("outcome", "owner_references_removed")]),
            finalizers_removed: objects.get_or_create_owned(&[("outcome", "finalizer_removed")]),
            api_get: requests.get_or_create_owned(&[("verb", "get")]),
            api_delete: requests.get_or_create_owned(&[("verb", "delete")]),
            api_patch: requests.get_or_create_owned(&[("verb", "patch")]),
            queues: Some(registry.queues()),
            ..Self::default()
        };
        registry.register(
            "kgc_gc_objects",
            "Objects the garbage collector acted on, by outcome.",
            objects,
        );
        registry.register(
            "kgc_gc_api_requests",
            "Requests the garbage collector sent, by verb.",
            requests,
        );
        registry.register(
            "kgc_gc_errors",
            "Work items that failed and were retried.",
            m.errors.clone(),
        );
        registry.register(
            "kgc_gc_graph_events",
            "Watch events processed by the graph builder.",
            m.graph_events.clone(),
        );
        let slot = Arc::clone(&m.running);
        registry.register(
            "kgc_gc_queue_depth",
            "Items waiting in each work queue.",
            GaugeFn::family(move || {
                running(&slot).map_or_else(Vec::new, |gc| {
                    let [delete, orphan] = gc.queue_depths().map(saturating_i64);
                    vec![
                        ([("queue", "attempt_to_delete")], delete),
                        ([("queue", "attempt_to_orphan")], orphan),
                    ]
                })
            }),
        );
        let slot = Arc::clone(&m.running);
        registry.register(
            "kgc_gc_graph_nodes",
            "Objects in the dependency graph.",
            GaugeFn::<NoLabels>::family(move || {
                running(&slot)
                    .map(|gc| ([], saturating_i64(gc.graph_len())))
                    .into_iter()
                    .collect()
            }),
        );
        m
    }

    /// Requests sent so far (tests and benchmarks).
    pub fn api_requests(&self) -> ApiRequests {
        ApiRequests {
            get: self.api_get.get(),
            delete: self.api_delete.get(),
            patch: self.api_patch.get(),
        }
    }

    /// Makes `gc` the collector the gauges read (the one started last).
    pub(crate) fn observe(&self, gc: Weak<dyn Observed>) {
        *self.running.write().unwrap_or_else(PoisonError::into_inner) = Some(gc);
    }
}

fn running(slot: &Slot) -> Option<Arc<dyn Observed>> {
    slot.read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(Weak::upgrade)
}

fn saturating_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use kgc_runtime::metrics::Format;

    use super::*;

    struct Fixed;

    impl Observed for Fixed {
        fn queue_depths(&self) -> [usize; 2] {
            [2, 1]
        }

        fn graph_len(&self) -> usize {
            7
        }
    }

    #[test]
    fn gauges_read_the_running_collector_and_vanish_with_it() {
        let registry = Registry::default();
        let m = Metrics::new(&registry);
        m.deleted.inc();
        let text = registry.encode(Format::Prometheus);
        assert!(
            text.contains("kgc_gc_objects_total{outcome=\"deleted\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("kgc_gc_api_requests_total{verb=\"patch\"} 0\n"),
            "{text}"
        );
        assert!(!text.contains("\nkgc_gc_graph_nodes "), "{text}");
        let gc: Arc<dyn Observed> = Arc::new(Fixed);
        m.observe(Arc::downgrade(&gc));
        let text = registry.encode(Format::Prometheus);
        assert!(
            text.contains("kgc_gc_queue_depth{queue=\"attempt_to_delete\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("kgc_gc_queue_depth{queue=\"attempt_to_orphan\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("kgc_gc_graph_nodes 7\n"), "{text}");
        drop(gc);
        let text = registry.encode(Format::Prometheus);
        assert!(!text.contains("\nkgc_gc_graph_nodes "), "{text}");
        assert!(
            text.contains("kgc_gc_objects_total{outcome=\"deleted\"} 1\n"),
            "{text}"
        );
    }
}
