//! A node's heartbeat Lease as the kubelet writes it (kubernetes
//! `staging/src/k8s.io/component-helpers/apimachinery/lease/controller.go` `newLease`, and
//! `pkg/kubelet/util/nodelease.go` `SetNodeOwnerFunc` for the owner).

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};

use crate::NODE_LEASE_NAMESPACE;

/// `nodeLeaseDurationSeconds` (kubelet default).
pub const DURATION_SECONDS: i32 = 40;

/// The lease `base` renewed at `now` (a new one when there is none), owned by its Node once the
/// node's uid is known. The owner reference is the kubelet's: `v1` `Node`, name and uid, neither
/// `controller` nor `blockOwnerDeletion`, set only while the lease has no owner.
pub fn renewed(base: Option<&Lease>, node: &str, node_uid: Option<&str>, now: Timestamp) -> Lease {
    let mut lease = base.cloned().unwrap_or_else(|| Lease {
        metadata: ObjectMeta {
            name: Some(node.to_owned()),
            namespace: Some(NODE_LEASE_NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(node.to_owned()),
            lease_duration_seconds: Some(DURATION_SECONDS),
            ..LeaseSpec::default()
        }),
    });
    lease.spec.get_or_insert_with(LeaseSpec::default).renew_time = Some(MicroTime(now));
    let unowned = lease
        .metadata
        .owner_references
        .as_ref()
        .is_none_or(Vec::is_empty);
    if let Some(uid) = node_uid.filter(|_| unowned) {
        lease.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: node.to_owned(),
            uid: uid.to_owned(),
            ..OwnerReference::default()
        }]);
    }
    lease
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_lease_is_held_by_its_node_and_owned_by_it() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let l = renewed(None, "n1", Some("u1"), now);
        let spec = l.spec.as_ref().unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("n1"));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert_eq!(spec.renew_time, Some(MicroTime(now)));
        assert_eq!(l.metadata.namespace.as_deref(), Some("kube-node-lease"));
        let owner = &l.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.api_version.as_str(), owner.kind.as_str()),
            ("v1", "Node")
        );
        assert_eq!((owner.name.as_str(), owner.uid.as_str()), ("n1", "u1"));
        assert_eq!((owner.controller, owner.block_owner_deletion), (None, None));
        // A renewal keeps the owner it has, and only moves renewTime.
        let later = Timestamp::from_second(1_700_000_010).unwrap();
        let r = renewed(Some(&l), "n1", Some("other"), later);
        assert_eq!(r.metadata.owner_references, l.metadata.owner_references);
        assert_eq!(r.spec.unwrap().renew_time, Some(MicroTime(later)));
        // Without the node's uid the lease goes unowned, and gets its owner on a renewal.
        let unowned = renewed(None, "n1", None, now);
        assert!(unowned.metadata.owner_references.is_none());
        assert!(
            renewed(Some(&unowned), "n1", Some("u1"), later)
                .metadata
                .owner_references
                .is_some()
        );
    }
}
