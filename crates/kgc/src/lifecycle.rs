//! The lifecycle collectors' flags and start-up, shared by `kgc serve` and `kgc controller`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kgc_client::Cluster;
use kgc_lifecycle::Metrics;
use kgc_meta::time::Clock;
use kgc_runtime::Context;

#[derive(clap::Args, Clone, Debug)]
pub struct LifecycleArgs {
    /// PodGC: terminated pods kept; beyond it the oldest are deleted (0 keeps them all).
    #[arg(long, default_value_t = 12_500)]
    terminated_pod_gc_threshold: usize,
    /// PodGC: how often pods are judged.
    #[arg(long, default_value = "20s", value_parser = crate::parse_duration)]
    pod_gc_period: Duration,
    /// PodGC: how long a node must stay missing before its pods are deleted.
    #[arg(long, default_value = "40s", value_parser = crate::parse_duration, hide = true)]
    pod_gc_quarantine: Duration,
    /// TTL-after-finished: concurrent Job deletions (`--concurrent-ttl-after-finished-syncs`).
    #[arg(long, default_value_t = 5)]
    ttl_workers: usize,
    /// Departed nodes: a node whose lease has not been renewed for this long is checked with
    /// --node-exists-command and deleted if gone [default: off].
    #[arg(long, value_parser = crate::parse_duration, requires = "node_exists_command")]
    node_gone_after: Option<Duration>,
    /// Departed nodes: a shell command run with the node name as $1; exit 0 means the machine
    /// exists, 1 means it is gone, anything else is an error (the node is kept).
    #[arg(long)]
    node_exists_command: Option<String>,
    /// Volume reclaim: the directory under which hostPath volumes with reclaim policy Delete
    /// are removed; paths outside it (symbolic links resolved) are refused [default: none].
    #[arg(long)]
    pv_host_path_root: Option<PathBuf>,
    /// EndpointSlice controller: the most endpoints one slice holds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    max_endpoints_per_slice: u16,
    /// How often the resource-quota controller recalculates every ResourceQuota in full, as
    /// kube-controller-manager's flag (changes are handled at once).
    #[arg(long, default_value = "5m", value_parser = crate::parse_duration)]
    resource_quota_sync_period: std::time::Duration,
    /// Testing and simulation hook: run the clock this far ahead (creation and deletion
    /// timestamps the server writes, and every age the collectors judge). Restarting a durable
    /// server with a larger offset makes time pass without waiting.
    #[arg(long, value_parser = crate::parse_duration, hide = true)]
    clock_offset: Option<Duration>,
}

impl LifecycleArgs {
    /// The clock: the system clock plus `--clock-offset`.
    pub fn clock(&self) -> Clock {
        let offset = self
            .clock_offset
            .and_then(|d| jiff::SignedDuration::try_from(d).ok())
            .unwrap_or_default();
        Clock::with_offset(offset)
    }

    fn config(&self, disabled: &[String]) -> kgc_lifecycle::Config {
        let mut c = kgc_lifecycle::Config {
            disabled: disabled.to_vec(),
            ..kgc_lifecycle::Config::default()
        };
        c.podgc.threshold = self.terminated_pod_gc_threshold;
        c.podgc.period = self.pod_gc_period;
        c.podgc.quarantine = self.pod_gc_quarantine;
        c.ttl.workers = self.ttl_workers;
        c.node.gone_after = self.node_gone_after;
        c.node.exists_command = self.node_exists_command.clone();
        c.volume.host_path_root = self.pv_host_path_root.clone();
        c
    }

    /// These arguments with the volumes root `root` unless --pv-host-path-root gives one.
    pub fn with_default_volumes_root(&self, root: PathBuf) -> Self {
        let mut a = self.clone();
        a.pv_host_path_root.get_or_insert(root);
        a
    }

    /// The provisioner's settings: it makes volumes under the root the `pv` collector deletes
    /// them from.
    pub fn volumes(&self) -> kgc_volume::Config {
        kgc_volume::Config {
            root: self.pv_host_path_root.clone(),
        }
    }

    /// The endpoint controllers' settings.
    pub fn endpoints(&self) -> kgc_endpoints::Config {
        kgc_endpoints::Config {
            max_endpoints_per_slice: usize::from(self.max_endpoints_per_slice),
        }
    }

    /// The resource-quota controller's settings.
    pub fn resource_quota(&self) -> kgc_controllers::resourcequota::Config {
        kgc_controllers::resourcequota::Config {
            sync_period: self.resource_quota_sync_period,
        }
    }

    /// Whether any lifecycle collector is enabled.
    pub fn any_enabled(disabled: &[String]) -> bool {
        crate::controllers::of(crate::controllers::Part::Lifecycle)
            .any(|c| !disabled.iter().any(|d| d == c))
    }

    /// Runs the enabled collectors on the term's context until the future is dropped.
    pub async fn run<C: Cluster>(
        self,
        ctx: Context<C>,
        disabled: Vec<String>,
        metrics: Arc<Metrics>,
    ) {
        kgc_lifecycle::run(ctx, self.config(&disabled), metrics).await;
    }
}

/// Store options with the clock `--clock-offset` sets.
pub trait WithClock {
    fn with_clock(self, clock: Clock) -> Self;
}

impl WithClock for kgc_store::Options {
    fn with_clock(self, clock: Clock) -> Self {
        Self { clock, ..self }
    }
}
