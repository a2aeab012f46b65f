//! Departed nodes, the job a cloud controller manager's node lifecycle controller does, for
//! machines kgc cannot ask a cloud about: a Node whose heartbeat (its Lease in
//! `kube-node-lease`, else its creation) is older than `gone_after`, and that an
//! operator-supplied command reports gone (exit status 1), is deleted. Its pods follow through
//! PodGC (orphaned pods) and its lease through the owner-reference collector.
//!
//! Off unless `gone_after` is set; without a command nothing is ever deleted.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kgc_client::Cluster;
use serde_json::Value;

use crate::informer::{Informer, Key};
use crate::{Context, Result, Target, time_field};

const COLLECTOR: &str = "nodes";
/// Where kubelets keep their heartbeat leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// Settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--node-gone-after`: how long without a heartbeat before a node is checked.
    pub gone_after: Option<Duration>,
    /// `--node-exists-command`: a shell command run with the node name as `$1`; exit 0: the
    /// machine exists, 1: it is gone, anything else: unknown (kept).
    pub exists_command: Option<String>,
    /// How often nodes are judged.
    pub period: Duration,
    /// How long the command may run.
    pub command_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            gone_after: None,
            exists_command: None,
            period: Duration::from_secs(10),
            command_timeout: Duration::from_secs(30),
        }
    }
}

/// What the collector keeps of a node or a lease.
#[derive(Debug, Clone, PartialEq)]
pub struct Heartbeat {
    pub uid: String,
    /// A node's creation, a lease's `spec.renewTime`.
    pub at: Option<jiff::Timestamp>,
}

fn node_view(obj: &Value) -> Option<Heartbeat> {
    let at = time_field(
        obj,
        &obj["metadata"]["creationTimestamp"],
        "metadata.creationTimestamp",
    );
    heartbeat(obj, at)
}

fn lease_view(obj: &Value) -> Option<Heartbeat> {
    let at = time_field(obj, &obj["spec"]["renewTime"], "spec.renewTime");
    heartbeat(obj, at)
}

fn heartbeat(obj: &Value, at: Result<Option<jiff::Timestamp>>) -> Option<Heartbeat> {
    match at {
        Ok(at) => Some(Heartbeat {
            uid: obj["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            at,
        }),
        Err(e) => {
            tracing::warn!(collector = COLLECTOR, error = %e, "skipping an object that cannot be judged");
            None
        }
    }
}

/// The nodes whose last heartbeat (lease renewal, else creation) is older than `gone_after`.
/// A node with no time at all is not judged.
pub fn overdue(
    nodes: &HashMap<Key, Heartbeat>,
    leases: &HashMap<Key, Heartbeat>,
    now: jiff::Timestamp,
    gone_after: Duration,
) -> Vec<(String, String)> {
    let limit = jiff::SignedDuration::try_from(gone_after).unwrap_or(jiff::SignedDuration::MAX);
    let mut out: Vec<(String, String)> = nodes
        .iter()
        .filter_map(|((_, name), node)| {
            let lease = leases.get(&(NODE_LEASE_NAMESPACE.to_owned(), name.clone()));
            let last = lease.and_then(|l| l.at).or(node.at)?;
            (now.duration_since(last) > limit).then(|| (name.clone(), node.uid.clone()))
        })
        .collect();
    out.sort();
    out
}

/// What the existence check said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exists {
    Yes,
    Gone,
    Unknown(String),
}

/// Runs `command` with `node` as `$1` (`sh -c`).
pub async fn check(command: &str, node: &str, timeout: Duration) -> Exists {
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{command} \"$1\""))
        .arg("kgc-node-exists")
        .arg(node)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(timeout, child).await {
        Err(_) => Exists::Unknown(format!("no answer within {timeout:?}")),
        Ok(Err(e)) => Exists::Unknown(format!("running it: {e}")),
        Ok(Ok(out)) => match out.status.code() {
            Some(0) => Exists::Yes,
            Some(1) => Exists::Gone,
            _ => Exists::Unknown(format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        },
    }
}

/// Runs the collector until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config) {
    let Some(gone_after) = config.gone_after else {
        return;
    };
    let Some(command) = config.exists_command.clone() else {
        tracing::error!(
            collector = COLLECTOR,
            "--node-gone-after needs --node-exists-command; no node is deleted"
        );
        return;
    };
    let nodes_resource = ctx.resource("", "nodes").await;
    let leases_resource = ctx.resource("coordination.k8s.io", "leases").await;
    let nodes = Informer::start(&ctx.cluster, Arc::clone(&nodes_resource), node_view, None);
    let leases = Informer::start(&ctx.cluster, leases_resource, lease_view, None);
    nodes.synced().await;
    leases.synced().await;
    tracing::info!(collector = COLLECTOR, ?gone_after, %command, "started");
    let mut tick = crate::every(config.period);
    loop {
        tick.tick().await;
        ctx.metrics.pass(COLLECTOR);
        let leases_now = leases.read(|m| m.clone());
        let candidates = nodes.read(|m| overdue(m, &leases_now, ctx.clock.now(), gone_after));
        for (name, uid) in candidates {
            match check(&command, &name, config.command_timeout).await {
                Exists::Yes => {
                    tracing::debug!(collector = COLLECTOR, node = %name, "no heartbeat, but the machine exists")
                }
                Exists::Unknown(why) => {
                    ctx.metrics.error(COLLECTOR, "check");
                    tracing::warn!(collector = COLLECTOR, node = %name, error = %why, "the existence check failed; keeping the node");
                }
                Exists::Gone => {
                    let target = Target::cluster(&nodes_resource, &name, &uid);
                    let _ = ctx
                        .delete(
                            COLLECTOR,
                            "departed",
                            target,
                            kgc_meta::DeleteOptions::default(),
                        )
                        .await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Option<jiff::Timestamp> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn overdue_by_lease_renewal_else_creation() {
        let hb = |at| Heartbeat {
            uid: "u".into(),
            at,
        };
        let nodes: HashMap<Key, Heartbeat> = [
            ("fresh-lease", t("2026-01-01T00:00:00Z")),
            ("stale-lease", t("2026-01-01T00:00:00Z")),
            ("no-lease-old", t("2026-01-01T00:00:00Z")),
            ("no-lease-new", t("2026-01-01T00:59:00Z")),
            ("no-time", None),
        ]
        .into_iter()
        .map(|(n, at)| ((String::new(), n.to_owned()), hb(at)))
        .collect();
        let leases: HashMap<Key, Heartbeat> = [
            ("fresh-lease", t("2026-01-01T00:59:30Z")),
            ("stale-lease", t("2026-01-01T00:10:00Z")),
        ]
        .into_iter()
        .map(|(n, at)| ((NODE_LEASE_NAMESPACE.to_owned(), n.to_owned()), hb(at)))
        .collect();
        let now: jiff::Timestamp = "2026-01-01T01:00:00Z".parse().unwrap();
        let got: Vec<String> = overdue(&nodes, &leases, now, Duration::from_secs(300))
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(got, ["no-lease-old", "stale-lease"]);
    }

    #[tokio::test]
    async fn the_check_reads_exit_statuses() {
        let timeout = Duration::from_secs(10);
        assert_eq!(
            check("test \"$1\" = n1 && exit 0; exit 1; :", "n1", timeout).await,
            Exists::Yes
        );
        assert_eq!(check("exit 1; :", "n1", timeout).await, Exists::Gone);
        assert!(matches!(
            check("exit 7; :", "n1", timeout).await,
            Exists::Unknown(_)
        ));
        assert!(matches!(
            check("sleep 5; :", "n1", Duration::from_millis(50)).await,
            Exists::Unknown(_)
        ));
    }
}
