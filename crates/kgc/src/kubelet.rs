//! The simulated kubelet's flags (`kgc serve`), named as the kubelet's where it has them.

use std::time::Duration;

use kgc_kubelet::Config;
use kgc_kubelet::runtime::Settings;
use kgc_node::ContainerGcPolicy;
use kgc_node::ImageGcPolicy;

/// A size in bytes, as a Quantity (`10Gi`, `500M`).
fn parse_size(s: &str) -> Result<u64, String> {
    let q = kgc_meta::quantity::Quantity::parse(s.trim())
        .map_err(|e| format!("invalid size {s:?}: {e}"))?;
    q.value()
        .and_then(|v| u64::try_from(v).ok())
        .filter(|v| *v > 0)
        .ok_or_else(|| format!("invalid size {s:?}: must be positive"))
}

#[derive(clap::Args, Clone, Debug)]
pub struct KubeletArgs {
    /// Simulated kubelet: how long a Job's pod runs before it exits (exit code 0, or the pod's
    /// `kgc.io/exit-code`; `kgc.io/run-for` overrides the duration).
    #[arg(long, default_value = "1s", value_parser = crate::parse_duration)]
    job_pod_duration: Duration,
    /// Simulated kubelet: the first crash back-off of a restarting container (the kubelet's
    /// 10 s); later ones double up to --max-container-restart-period.
    #[arg(long, default_value = "10s", value_parser = crate::parse_duration)]
    initial_container_restart_period: Duration,
    /// Simulated kubelet: the longest crash back-off (the kubelet's 5 min).
    #[arg(long, default_value = "5m", value_parser = crate::parse_duration)]
    max_container_restart_period: Duration,
    /// Simulated kubelet: image filesystem usage (percent) at or above which image GC runs.
    #[arg(long, default_value_t = 85)]
    image_gc_high_threshold: i32,
    /// Simulated kubelet: image filesystem usage (percent) image GC frees down to.
    #[arg(long, default_value_t = 80)]
    image_gc_low_threshold: i32,
    /// Simulated kubelet: an image pulled less than this long ago is never removed.
    #[arg(long, default_value = "2m", value_parser = crate::parse_duration)]
    minimum_image_ttl_duration: Duration,
    /// Simulated kubelet: a dead container created less than this long ago is kept.
    #[arg(long, default_value = "0s", value_parser = crate::parse_duration)]
    minimum_container_ttl_duration: Duration,
    /// Simulated kubelet: dead containers kept per container of a pod (negative: no limit).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    maximum_dead_containers_per_container: i64,
    /// Simulated kubelet: dead containers kept per node (negative: no limit).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    maximum_dead_containers: i64,
    /// Simulated kubelet: the capacity of each node's image filesystem (a Quantity).
    #[arg(long, default_value = "10Gi", value_parser = parse_size)]
    node_image_fs_size: u64,
    /// Simulated kubelet: the size of a pulled image when its pod has no `kgc.io/image-size`.
    #[arg(long, default_value = "100Mi", value_parser = parse_size)]
    default_image_size: u64,
    /// Simulated kubelet: how often image GC runs on each node (the kubelet's 5 min).
    #[arg(long, default_value = "5m", value_parser = crate::parse_duration)]
    image_gc_period: Duration,
    /// Simulated kubelet: how often container GC runs on each node (the kubelet's 1 min).
    #[arg(long, default_value = "1m", value_parser = crate::parse_duration)]
    container_gc_period: Duration,
}

impl KubeletArgs {
    /// The kubelet's settings; settings the kubelet would refuse are an error naming them.
    pub fn config(&self) -> anyhow::Result<Config> {
        let config = Config {
            runtime: Settings {
                job_pod_duration: self.job_pod_duration,
                backoff_initial: self.initial_container_restart_period,
                backoff_max: self
                    .max_container_restart_period
                    .max(self.initial_container_restart_period),
            },
            images: ImageGcPolicy {
                high_threshold_percent: self.image_gc_high_threshold,
                low_threshold_percent: self.image_gc_low_threshold,
                min_age: self.minimum_image_ttl_duration,
                max_age: Duration::ZERO,
            },
            containers: ContainerGcPolicy {
                min_age: self.minimum_container_ttl_duration,
                max_per_pod_container: self.maximum_dead_containers_per_container,
                max_containers: self.maximum_dead_containers,
            },
            image_fs_size: self.node_image_fs_size,
            default_image_size: self.default_image_size,
            image_gc_period: self.image_gc_period.max(Duration::from_millis(100)),
            container_gc_period: self.container_gc_period.max(Duration::from_millis(100)),
        };
        config.validate()?;
        Ok(config)
    }
}
