//! The status a kubelet posts for its Node (kubernetes `pkg/kubelet/nodestatus/setters.go`:
//! `NodeAddress`, `MachineInfo`, `VersionInfo`, `DaemonEndpoints`, `GoRuntime`, and the
//! MemoryPressure, DiskPressure, PIDPressure and Ready conditions, Ready last), and when it
//! posts it (`pkg/kubelet/kubelet_node_status.go` `updateNodeStatus`: on change, else once per
//! `nodeStatusReportFrequency`).

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeStatus,
    NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::capacity::Capacity;
use crate::registration::{go_arch, internal_ip};

/// The kubelet's port (`--port`), which `daemonEndpoints` advertises.
const KUBELET_PORT: i32 = 10250;

/// The four conditions a kubelet owns, in the order it writes them: type, then the healthy
/// status, reason and message.
const CONDITIONS: [(&str, &str, &str, &str); 4] = [
    (
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    (
        "DiskPressure",
        "False",
        "KubeletHasNoDiskPressure",
        "kubelet has no disk pressure",
    ),
    (
        "PIDPressure",
        "False",
        "KubeletHasSufficientPID",
        "kubelet has sufficient PID available",
    ),
    (
        "Ready",
        "True",
        "KubeletReady",
        "kubelet is posting ready status",
    ),
];

/// The status a running simulated node posts now: capacity and allocatable from
/// `--node-capacity` (nothing reserved), its addresses, `nodeInfo`, the kubelet endpoint and
/// healthy conditions. Conditions of other types stay (before Ready, which stays last); a
/// condition keeps its `lastTransitionTime` while its status does not change.
pub fn desired(node: &Node, capacity: &Capacity, index: u32, now: Timestamp) -> NodeStatus {
    let name = node.metadata.name.clone().unwrap_or_default();
    let uid = node.metadata.uid.clone().unwrap_or_default();
    let current = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let mut conditions: Vec<NodeCondition> = current
        .iter()
        .filter(|c| !CONDITIONS.iter().any(|(t, ..)| *t == c.type_))
        .cloned()
        .collect();
    for (type_, status, reason, message) in CONDITIONS {
        let transition = current
            .iter()
            .find(|c| c.type_ == type_ && c.status == status)
            .and_then(|c| c.last_transition_time.clone())
            .unwrap_or(Time(now));
        conditions.push(NodeCondition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            last_heartbeat_time: Some(Time(now)),
            last_transition_time: Some(transition),
        });
    }
    let quantities: BTreeMap<String, Quantity> = capacity
        .iter()
        .map(|(k, v)| (k.clone(), Quantity(v.clone())))
        .collect();
    let version = env!("CARGO_PKG_VERSION");
    NodeStatus {
        addresses: Some(vec![
            NodeAddress {
                type_: "InternalIP".into(),
                address: internal_ip(index),
            },
            NodeAddress {
                type_: "Hostname".into(),
                address: name,
            },
        ]),
        allocatable: Some(quantities.clone()),
        capacity: Some(quantities),
        conditions: Some(conditions),
        daemon_endpoints: Some(NodeDaemonEndpoints {
            kubelet_endpoint: Some(DaemonEndpoint { port: KUBELET_PORT }),
        }),
        node_info: Some(NodeSystemInfo {
            architecture: go_arch().into(),
            boot_id: uid.clone(),
            container_runtime_version: format!("kgc://{version}"),
            kernel_version: String::new(),
            kube_proxy_version: String::new(),
            kubelet_version: format!("kgc-v{version}"),
            machine_id: uid.replace('-', ""),
            operating_system: "linux".into(),
            os_image: "kgc simulated node".into(),
            system_uuid: uid,
            ..NodeSystemInfo::default()
        }),
        ..NodeStatus::default()
    }
}

/// Whether `desired` must be posted over the node's current status: something other than a
/// heartbeat time differs, or the last heartbeat is `report_every` old (the kubelet's
/// `nodeStatusReportFrequency`, 5 minutes).
pub fn needs_post(
    node: &Node,
    desired: &NodeStatus,
    now: Timestamp,
    report_every: Duration,
) -> bool {
    let Some(current) = node.status.as_ref() else {
        return true;
    };
    let essence =
        |cs: Option<&Vec<NodeCondition>>| -> Vec<(String, String, Option<String>, Option<String>)> {
            cs.into_iter()
                .flatten()
                .map(|c| {
                    (
                        c.type_.clone(),
                        c.status.clone(),
                        c.reason.clone(),
                        c.message.clone(),
                    )
                })
                .collect()
        };
    if essence(current.conditions.as_ref()) != essence(desired.conditions.as_ref())
        || current.addresses != desired.addresses
        || current.node_info != desired.node_info
        || current.daemon_endpoints != desired.daemon_endpoints
        || !contains(current.capacity.as_ref(), desired.capacity.as_ref())
        || !contains(current.allocatable.as_ref(), desired.allocatable.as_ref())
    {
        return true;
    }
    let heartbeat = current
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .and_then(|c| c.last_heartbeat_time.as_ref());
    match heartbeat {
        Some(Time(t)) => {
            now.duration_since(*t)
                >= jiff::SignedDuration::try_from(report_every).unwrap_or(jiff::SignedDuration::MAX)
        }
        None => true,
    }
}

/// Every entry of `want` is in `have` with the same value (a merge patch keeps other keys).
fn contains(
    have: Option<&BTreeMap<String, Quantity>>,
    want: Option<&BTreeMap<String, Quantity>>,
) -> bool {
    want.into_iter()
        .flatten()
        .all(|(k, v)| have.and_then(|h| h.get(k)) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node() -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some("n".into()),
                uid: Some("1234-5678".into()),
                ..ObjectMeta::default()
            },
            ..Node::default()
        }
    }

    fn ts(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    #[test]
    fn a_healthy_node_has_the_kubelet_conditions_ready_last() {
        let cap = crate::capacity::parse(crate::capacity::DEFAULT).unwrap();
        let s = desired(&node(), &cap, 2, ts(0));
        let conds = s.conditions.as_ref().unwrap();
        let types: Vec<&str> = conds.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(
            types,
            ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
        );
        assert_eq!(conds[3].reason.as_deref(), Some("KubeletReady"));
        assert_eq!(conds[3].status, "True");
        assert_eq!(s.addresses.as_ref().unwrap()[0].address, "172.16.0.4");
        assert_eq!(s.addresses.as_ref().unwrap()[1].address, "n");
        assert_eq!(s.capacity, s.allocatable);
        assert_eq!(s.capacity.as_ref().unwrap()["pods"].0, "110");
        assert_eq!(s.node_info.as_ref().unwrap().machine_id, "12345678");
    }

    #[test]
    fn posts_on_change_and_once_per_report_period() {
        let cap = crate::capacity::parse(crate::capacity::DEFAULT).unwrap();
        let mut n = node();
        assert!(needs_post(
            &n,
            &desired(&n, &cap, 0, ts(0)),
            ts(0),
            Duration::from_secs(300)
        ));
        n.status = Some(desired(&n, &cap, 0, ts(0)));
        // Only the heartbeat differs: not before the report period.
        assert!(!needs_post(
            &n,
            &desired(&n, &cap, 0, ts(10)),
            ts(10),
            Duration::from_secs(300)
        ));
        assert!(needs_post(
            &n,
            &desired(&n, &cap, 0, ts(300)),
            ts(300),
            Duration::from_secs(300)
        ));
        // The node-lifecycle controller set Ready to Unknown: posted again, with a new
        // transition time; the unchanged conditions keep theirs.
        let conds = n.status.as_mut().unwrap().conditions.as_mut().unwrap();
        conds[3].status = "Unknown".into();
        conds[3].reason = Some("NodeStatusUnknown".into());
        let d = desired(&n, &cap, 0, ts(60));
        assert!(needs_post(&n, &d, ts(60), Duration::from_secs(300)));
        let conds = d.conditions.unwrap();
        assert_eq!(conds[3].last_transition_time, Some(Time(ts(60))));
        assert_eq!(conds[0].last_transition_time, Some(Time(ts(0))));
    }

    #[test]
    fn other_conditions_stay() {
        let cap = crate::capacity::parse(crate::capacity::DEFAULT).unwrap();
        let mut n = node();
        n.status = Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "NetworkUnavailable".into(),
                status: "False".into(),
                ..NodeCondition::default()
            }]),
            ..NodeStatus::default()
        });
        let types: Vec<String> = desired(&n, &cap, 0, ts(0))
            .conditions
            .unwrap()
            .into_iter()
            .map(|c| c.type_)
            .collect();
        assert_eq!(types[0], "NetworkUnavailable");
        assert_eq!(types[4], "Ready");
    }
}
