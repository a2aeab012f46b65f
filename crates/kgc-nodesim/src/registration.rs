//! What a kubelet registers (kubernetes `pkg/kubelet/kubelet_node_status.go` `initialNode`):
//! the Node's labels, and here also the address range each simulated node gets, since no
//! node IPAM controller runs.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::{Node, NodeSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::SIMULATED;

/// The range `--nodes` names its nodes in: `kgc-node-0`, `kgc-node-1`, ….
pub const NAME_PREFIX: &str = "kgc-node-";

/// Pod CIDRs are /24s from 10.244.0.0 (kube-controller-manager's `--cluster-cidr` in kind and
/// kubeadm guides): `10.244.<i>.0/24`, continuing into 10.245.0.0 and up past 256 nodes, to
/// 10.255.255.0/24.
const POD_CIDR_BASE: Ipv4Addr = Ipv4Addr::new(10, 244, 0, 0);
pub const MAX_INDEX: u32 = (12 << 8) - 1;
/// Node addresses: one per index from 172.16.0.2, apart from the pod ranges.
const NODE_IP_BASE: Ipv4Addr = Ipv4Addr::new(172, 16, 0, 2);

/// The pod CIDR of index `i`.
pub fn pod_cidr(i: u32) -> String {
    format!("{}/24", Ipv4Addr::from(u32::from(POD_CIDR_BASE) + (i << 8)))
}

/// The index of a pod CIDR this module hands out, if it is one.
pub fn index_of_cidr(cidr: &str) -> Option<u32> {
    let ip: Ipv4Addr = cidr.strip_suffix("/24")?.parse().ok()?;
    let offset = u32::from(ip).checked_sub(u32::from(POD_CIDR_BASE))?;
    (offset & 0xff == 0 && offset >> 8 <= MAX_INDEX).then_some(offset >> 8)
}

/// The InternalIP of index `i`.
pub fn internal_ip(i: u32) -> String {
    Ipv4Addr::from(u32::from(NODE_IP_BASE) + i).to_string()
}

/// `runtime.GOARCH` of this build, as `kubernetes.io/arch` and `nodeInfo.architecture` say it.
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        "loongarch64" => "loong64",
        other => other,
    }
}

/// The labels the kubelet sets on its Node (`initialNode`; the beta OS and arch labels are
/// still set, as upstream does).
pub fn labels(name: &str) -> BTreeMap<String, String> {
    [
        ("beta.kubernetes.io/arch", go_arch()),
        ("beta.kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", go_arch()),
        ("kubernetes.io/hostname", name),
        ("kubernetes.io/os", "linux"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The Node `--nodes` registers as index `i`.
pub fn node(i: u32) -> Node {
    let name = format!("{NAME_PREFIX}{i}");
    Node {
        metadata: ObjectMeta {
            labels: Some(labels(&name)),
            annotations: Some(BTreeMap::from([(SIMULATED.to_owned(), "true".to_owned())])),
            name: Some(name),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            pod_cidr: Some(pod_cidr(i)),
            pod_cidrs: Some(vec![pod_cidr(i)]),
            ..NodeSpec::default()
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_map_to_ranges_and_back() {
        assert_eq!(pod_cidr(0), "10.244.0.0/24");
        assert_eq!(pod_cidr(7), "10.244.7.0/24");
        assert_eq!(pod_cidr(256), "10.245.0.0/24");
        assert_eq!(pod_cidr(MAX_INDEX), "10.255.255.0/24");
        for i in [0, 7, 255, 256, 999, MAX_INDEX] {
            assert_eq!(index_of_cidr(&pod_cidr(i)), Some(i));
        }
        assert_eq!(index_of_cidr("10.244.1.128/24"), None);
        assert_eq!(index_of_cidr("192.168.0.0/24"), None);
        assert_eq!(index_of_cidr("10.244.1.0/16"), None);
        assert_eq!(internal_ip(0), "172.16.0.2");
        assert_eq!(internal_ip(254), "172.16.1.0");
    }

    #[test]
    fn registered_nodes_carry_the_kubelet_labels() {
        let n = node(3);
        assert_eq!(n.metadata.name.as_deref(), Some("kgc-node-3"));
        let labels = n.metadata.labels.unwrap();
        assert_eq!(labels["kubernetes.io/hostname"], "kgc-node-3");
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(
            labels["kubernetes.io/arch"],
            labels["beta.kubernetes.io/arch"]
        );
        assert!(!labels["kubernetes.io/arch"].contains('_'));
        assert_eq!(n.metadata.annotations.unwrap()[SIMULATED], "true");
        assert_eq!(n.spec.unwrap().pod_cidr.as_deref(), Some("10.244.3.0/24"));
    }
}
