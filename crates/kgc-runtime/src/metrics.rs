//! The process's one metrics registry. Every controller, collector, work queue and the API
//! server register their metrics here; `/metrics` encodes it once.

use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::{Metric, Registry as Inner};

/// A cheap handle on the registry (clones share it).
#[derive(Clone, Default)]
pub struct Registry(Arc<Mutex<Inner>>);

impl Registry {
    /// Registers a metric under `name` (a counter's exposed name gets `_total` appended, as
    /// OpenMetrics requires).
    pub fn register(&self, name: &str, help: &str, metric: impl Metric) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .register(name, help, metric);
    }

    /// The text exposition of every registered metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let registry = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;

    use super::*;

    #[test]
    fn a_counter_is_exposed_with_its_total_suffix() {
        let registry = Registry::default();
        let c = Counter::<u64>::default();
        registry.register("kgc_example", "An example.", c.clone());
        c.inc();
        assert!(registry.encode().contains("kgc_example_total 1\n"));
    }
}
