//! The simulated kubelets' metrics. Upstream's names where the kubelet has the metric
//! (`pkg/kubelet/metrics/metrics.go`: `kubelet_image_garbage_collected_total{reason}`,
//! `kubelet_running_pods`), summed over the simulated nodes; `kgc_kubelet_*` for the rest.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use kgc_runtime::metrics::Registry;

type Labels = [(&'static str, &'static str); 1];

#[derive(Clone, Default)]
pub struct Metrics {
    images: Family<Labels, Counter>,
    pub image_bytes_freed: Counter,
    pub containers_removed: Counter,
    writes: Family<Labels, Counter>,
}

impl Metrics {
    pub fn register(registry: &Registry) -> Self {
        let m = Metrics::default();
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

    pub fn image_removed(&self, reason: &'static str) {
        self.images.get_or_create(&[("reason", reason)]).inc();
    }

    pub fn status_write(&self, result: &'static str) {
        self.writes.get_or_create(&[("result", result)]).inc();
    }
}
