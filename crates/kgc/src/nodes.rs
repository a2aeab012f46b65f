//! `kgc serve`'s simulated nodes and the node-lifecycle controller: their flags (the kubelet's
//! and kube-controller-manager's names) and start-up.

use std::time::Duration;

use kgc_client::Cluster;
use kgc_nodesim::{lifecycle, simulator};
use kgc_runtime::Context;

#[derive(clap::Args, Clone, Debug)]
pub struct NodeArgs {
    /// Simulated nodes to register, named kgc-node-0, kgc-node-1, … (0: none). Any Node
    /// annotated kgc.io/simulated: "true" is simulated too; kgc.io/stopped: "true" stops one.
    #[arg(long, default_value_t = 1)]
    nodes: u32,
    /// Capacity (and allocatable) of every simulated node, as name=quantity pairs.
    #[arg(long, default_value = kgc_nodesim::capacity::DEFAULT)]
    node_capacity: String,
    /// Node lifecycle: how long a node's heartbeat (status or lease) may be silent before its
    /// conditions become Unknown and it is tainted unreachable.
    #[arg(long, default_value = "50s", value_parser = crate::parse_duration)]
    node_monitor_grace_period: Duration,
    /// Node lifecycle: the grace period of a node that never posted Ready.
    #[arg(long, default_value = "60s", value_parser = crate::parse_duration)]
    node_startup_grace_period: Duration,
    /// Node lifecycle: how often node heartbeats are judged.
    #[arg(long, default_value = "5s", value_parser = crate::parse_duration)]
    node_monitor_period: Duration,
}

/// What the flags configure, checked before the server starts.
#[derive(Clone)]
pub struct Nodes {
    simulator: simulator::Config,
    lifecycle: lifecycle::Config,
}

impl NodeArgs {
    /// The configuration; a bad `--node-capacity` is an error naming the flag and the entry.
    pub fn config(&self) -> anyhow::Result<Nodes> {
        let capacity = kgc_nodesim::capacity::parse(&self.node_capacity)
            .map_err(|e| anyhow::anyhow!("--node-capacity: {e}"))?;
        if self.node_monitor_period.is_zero() {
            anyhow::bail!("--node-monitor-period: must be more than 0");
        }
        Ok(Nodes {
            simulator: simulator::Config {
                nodes: self.nodes,
                capacity,
                ..simulator::Config::default()
            },
            lifecycle: lifecycle::Config {
                monitor_period: self.node_monitor_period,
                grace_period: self.node_monitor_grace_period,
                startup_grace_period: self.node_startup_grace_period,
                ..lifecycle::Config::default()
            },
        })
    }
}

/// Runs the simulator and the node-lifecycle controller unless disabled, until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>, nodes: Nodes, disabled: &[String]) {
    let on = |name: &str| !disabled.iter().any(|d| d == name);
    let Nodes {
        simulator: sim_config,
        lifecycle: lifecycle_config,
    } = nodes;
    let (sim_on, lifecycle_on) = (on(simulator::NAME), on(lifecycle::NAME));
    let sim_ctx = ctx.clone();
    let sim = async move {
        if sim_on {
            simulator::run(sim_ctx, sim_config).await;
        }
    };
    let lifecycle = async move {
        if lifecycle_on {
            lifecycle::run(ctx, lifecycle_config).await;
        }
    };
    tokio::join!(sim, lifecycle);
}
