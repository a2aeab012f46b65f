//! The node simulator and the node-lifecycle controller, each run alone against an API server
//! in the test process (`kgc-testcluster`), as upstream tests a kubelet's registration and
//! `pkg/controller/nodelifecycle` against fakes.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kgc_nodesim::{NODE_LEASE_NAMESPACE, SIMULATED, lifecycle, simulator};
use kgc_testcluster::{DEADLINE, TestCluster, eventually};
use serde_json::json;

fn ready(n: &Node) -> Option<(String, String)> {
    let c = n
        .status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")?;
    Some((c.status.clone(), c.reason.clone().unwrap_or_default()))
}

/// Upstream `TestRegisterWithApiServer` (`kubelet_node_status_test.go`) and the lease
/// controller's `TestNewNodeLease`: `--nodes 2` registers two simulated nodes, Ready, each
/// renewing its Lease in `kube-node-lease`.
#[tokio::test]
async fn register_with_api_server() {
    let mut c = TestCluster::start().await;
    let config = simulator::Config {
        nodes: 2,
        ..simulator::Config::default()
    };
    c.run(simulator::run(c.context(), config));
    let nodes = c.all::<Node>();
    let names = ["kgc-node-0", "kgc-node-1"];
    eventually("two Ready simulated nodes", DEADLINE, || async {
        let mut ok = true;
        for name in names {
            ok &= nodes
                .get_opt(name)
                .await
                .unwrap()
                .is_some_and(|n| ready(&n).is_some_and(|r| r.0 == "True"));
        }
        ok
    })
    .await;
    let leases = c.api::<Lease>(NODE_LEASE_NAMESPACE);
    for name in names {
        let node = nodes.get(name).await.unwrap();
        let annotations = node.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations.get(SIMULATED).map(String::as_str), Some("true"));
        eventually("the node's lease", DEADLINE, || async {
            leases.get_opt(name).await.unwrap().is_some()
        })
        .await;
        let lease = leases.get(name).await.unwrap();
        assert_eq!(lease.spec.unwrap().holder_identity.as_deref(), Some(name));
        let owner = &lease.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), &owner.uid),
            ("Node", node.metadata.uid.as_ref().unwrap())
        );
    }
}

/// Upstream `TestMonitorNodeHealthUpdateStatus`: a node whose kubelet posts nothing (no lease,
/// no status) past the grace period is marked Ready=Unknown (`NodeStatusUnknown`) and tainted
/// unreachable.
#[tokio::test]
async fn monitor_node_health_update_status() {
    let mut c = TestCluster::start().await;
    let config = lifecycle::Config {
        monitor_period: Duration::from_millis(50),
        grace_period: Duration::from_millis(300),
        startup_grace_period: Duration::from_millis(300),
        ..lifecycle::Config::default()
    };
    c.run(lifecycle::run(c.context(), config));
    c.ready_node("silent", json!({})).await;
    let nodes = c.all::<Node>();
    eventually("Ready=Unknown", DEADLINE, || async {
        ready(&nodes.get("silent").await.unwrap())
            == Some(("Unknown".into(), "NodeStatusUnknown".into()))
    })
    .await;
    eventually("the unreachable taint", DEADLINE, || async {
        let node = nodes.get("silent").await.unwrap();
        node.spec
            .and_then(|s| s.taints)
            .into_iter()
            .flatten()
            .any(|t| t.key == lifecycle::UNREACHABLE)
    })
    .await;
}
