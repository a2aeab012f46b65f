//! The simulated kubelets' metrics. Upstream's names where the kubelet has the metric
//! (`pkg/kubelet/metrics/metrics.go`: `kubelet_image_garbage_collected_total{reason}`,
//! `kubelet_running_pods`), summed over the simulated nodes; `kgc_kubelet_*` for the rest.

use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use kgc_runtime::metrics::{GaugeFn, Registry};

type Labels = [(&'static str, &'static str); 1];

/// What counts the running pods: set by each run of the kubelets (`kgc serve` starts fresh
/// ones each leadership term), read when scraped.
type Running = Arc<Mutex<Option<Box<dyn Fn() -> i64 + Send + Sync>>>>;

/// The kubelets' metrics, registered once per process and handed to each run.
#[derive(Clone, Default)]
pub struct Metrics {
    images: Family<Labels, Counter>,
    pub(crate) image_bytes_freed: Counter,
    pub(crate) containers_removed: Counter,
    writes: Family<Labels, Counter>,
    running: Running,
}

impl Metrics {
    pub fn register(registry: &Registry) -> Self {
        let m = Metrics::default();
        let running = Arc::clone(&m.running);
        registry.register(
            "kubelet_running_pods",
            "Pods the simulated kubelets run (sandboxes not yet gone).",
            GaugeFn::new(move || {
                running
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .as_ref()
                    .map_or(0, |count| count())
            }),
        );
        registry.register(
            "kubelet_image_garbage_collected",
            "Images removed by the simulated kubelets' image GC, by reason (age, space).",
            m.images.clone(),
        );
        registry.register(
            "kgc_kubelet_image_bytes_freed",
            "Bytes the simulated kubelets' image GC freed, by the images' sizes.",
            m.image_bytes_freed.clone(),
        );
        registry.register(
            "kgc_kubelet_dead_containers_removed",
            "Dead containers the simulated kubelets' container GC removed.",
            m.containers_removed.clone(),
        );
        registry.register(
            "kgc_kubelet_pod_status_writes",
            "Pod status writes of the simulated kubelets, by result (ok, conflict, error).",
            m.writes.clone(),
        );
        m
    }

    /// How the current run counts its running pods.
    pub(crate) fn count_running(&self, count: impl Fn() -> i64 + Send + Sync + 'static) {
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(count));
    }

    pub(crate) fn image_removed(&self, reason: &'static str) {
        self.images.get_or_create(&[("reason", reason)]).inc();
    }

    pub(crate) fn status_write(&self, result: &'static str) {
        self.writes.get_or_create(&[("result", result)]).inc();
    }
}
