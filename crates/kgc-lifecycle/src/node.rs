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

use crate::{Metrics, Target, time_field};
use kgc_runtime::Context;
use kgc_runtime::informer::{Key, View};

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

/// What the lifecycle collectors keep of a node: one view for all of them (PodGC and this
/// collector), so the process caches its nodes once.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub uid: String,
    /// `metadata.creationTimestamp`; `None` when absent or unreadable (logged), and then the
    /// node is not judged by its age.
    pub created: Option<jiff::Timestamp>,
    pub ready: bool,
    /// Has a taint with key `node.kubernetes.io/out-of-service` (any value and effect).
    pub out_of_service: bool,
}

impl Node {
    pub fn from_json(obj: &Value) -> Self {
        let ready = obj["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        let out_of_service = obj["spec"]["taints"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["key"] == "node.kubernetes.io/out-of-service");
        let created = time_field(
            obj,
            &obj["metadata"]["creationTimestamp"],
            "metadata.creationTimestamp",
        )
        .unwrap_or_else(|e| {
            tracing::warn!(collector = COLLECTOR, error = %e, "a node whose age cannot be judged");
            None
        });
        Self {
            uid: uid_of(obj),
            created,
            ready,
            out_of_service,
        }
    }
}

impl View for Node {
    fn view(obj: &Value) -> Option<Self> {
        Some(Self::from_json(obj))
    }
}

fn uid_of(obj: &Value) -> String {
    obj["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// What the collector keeps of a node's lease.
#[derive(Debug, Clone, PartialEq)]
pub struct Heartbeat {
    pub uid: String,
    /// `spec.renewTime`.
    pub at: Option<jiff::Timestamp>,
}

impl View for Heartbeat {
    fn view(obj: &Value) -> Option<Self> {
        match time_field(obj, &obj["spec"]["renewTime"], "spec.renewTime") {
            Ok(at) => Some(Self {
                uid: uid_of(obj),
                at,
            }),
            Err(e) => {
                tracing::warn!(collector = COLLECTOR, error = %e, "skipping an object that cannot be judged");
                None
            }
        }
    }
}

/// The nodes whose last heartbeat (lease renewal, else creation) is older than `gone_after`.
/// A node with no time at all is not judged.
pub fn overdue(
    nodes: &HashMap<Key, Node>,
    leases: &HashMap<Key, Heartbeat>,
    now: jiff::Timestamp,
    gone_after: Duration,
) -> Vec<(String, String)> {
    let limit = jiff::SignedDuration::try_from(gone_after).unwrap_or(jiff::SignedDuration::MAX);
    let mut out: Vec<(String, String)> = nodes
        .iter()
        .filter_map(|((_, name), node)| {
            let lease = leases.get(&(NODE_LEASE_NAMESPACE.to_owned(), name.clone()));
            let last = lease.and_then(|l| l.at).or(node.created)?;
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
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config, metrics: Arc<Metrics>) {
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
    let nodes_resource = ctx.informers.resource("", "nodes").await;
    let leases_resource = ctx
        .informers
        .resource("coordination.k8s.io", "leases")
        .await;
    let nodes = ctx.informers.cache::<Node>(Arc::clone(&nodes_resource));
    let leases = ctx.informers.cache::<Heartbeat>(leases_resource);
    nodes.synced().await;
    leases.synced().await;
    tracing::info!(collector = COLLECTOR, ?gone_after, %command, "started");
    let mut tick = crate::every(config.period);
    loop {
        tick.tick().await;
        metrics.pass(COLLECTOR);
        let leases_now = leases.read(|m| m.clone());
        let candidates = nodes.read(|m| overdue(m, &leases_now, ctx.clock.now(), gone_after));
        for (name, uid) in candidates {
            match check(&command, &name, config.command_timeout).await {
                Exists::Yes => {
                    tracing::debug!(collector = COLLECTOR, node = %name, "no heartbeat, but the machine exists")
                }
                Exists::Unknown(why) => {
                    metrics.error(COLLECTOR, "check");
                    tracing::warn!(collector = COLLECTOR, node = %name, error = %why, "the existence check failed; keeping the node");
                }
                Exists::Gone => {
                    let target = Target::cluster(&nodes_resource, &name, &uid);
                    let options = kgc_meta::DeleteOptions::default();
                    let reason = (COLLECTOR, "departed");
                    let _ = crate::delete(&ctx, &metrics, reason, target, options).await;
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
        let node = |created| Node {
            uid: "u".into(),
            created,
            ready: true,
            out_of_service: false,
        };
        let nodes: HashMap<Key, Node> = [
            ("fresh-lease", t("2026-01-01T00:00:00Z")),
            ("stale-lease", t("2026-01-01T00:00:00Z")),
            ("no-lease-old", t("2026-01-01T00:00:00Z")),
            ("no-lease-new", t("2026-01-01T00:59:00Z")),
            ("no-time", None),
        ]
        .into_iter()
        .map(|(n, at)| ((String::new(), n.to_owned()), node(at)))
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
