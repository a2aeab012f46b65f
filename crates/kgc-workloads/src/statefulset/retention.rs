//! `persistentVolumeClaimRetentionPolicy` (`kubernetes/kubernetes pkg/controller/statefulset/
//! stateful_set_utils.go`, `isClaimOwnerUpToDate`, `updateClaimOwnerRefForSetAndPod`; feature
//! StatefulSetAutoDeletePVC): the controller deletes no claim itself. It gives a claim a
//! controller reference to the StatefulSet (`whenDeleted: Delete`) or, once its pod is scaled
//! away, to the pod (`whenScaled: Delete`), and the owner-reference garbage collector deletes
//! the claim when that owner goes. `Retain` means no such reference, and one left from an
//! earlier policy is removed.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

const DELETE: &str = "Delete";

/// The set's policy; unset (or unknown) values are `Retain` (upstream
/// `getPersistentVolumeClaimRetentionPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub delete_when_deleted: bool,
    pub delete_when_scaled: bool,
}

impl Policy {
    pub fn of(set: &StatefulSet) -> Self {
        let p = set.spec.persistent_volume_claim_retention_policy.as_ref();
        Self {
            delete_when_deleted: p.and_then(|p| p.when_deleted.as_deref()) == Some(DELETE),
            delete_when_scaled: p.and_then(|p| p.when_scaled.as_deref()) == Some(DELETE),
        }
    }

    fn retain(self) -> bool {
        !self.delete_when_deleted && !self.delete_when_scaled
    }
}

/// An owner a claim may reference: the set or one of its pods.
#[derive(Debug, Clone, Copy)]
pub struct Party<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    /// Empty for a pod not created yet.
    pub uid: &'a str,
}

impl Party<'_> {
    /// Upstream `matchesRef`: the same apiVersion, kind and name, whatever the uid.
    fn matches(&self, r: &OwnerReference) -> bool {
        r.api_version == self.api_version && r.kind == self.kind && r.name == self.name
    }

    /// Upstream `hasStaleOwnerRef`: the first reference naming it carries another uid.
    fn stale_in(&self, refs: &[OwnerReference]) -> bool {
        refs.iter()
            .find(|r| self.matches(r))
            .is_some_and(|r| r.uid != self.uid)
    }

    /// Upstream `hasOwnerRef`: a reference with its uid.
    fn owns(&self, refs: &[OwnerReference]) -> bool {
        !self.uid.is_empty() && refs.iter().any(|r| r.uid == self.uid)
    }

    /// Upstream `metav1.NewControllerRef`.
    fn controller_ref(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.to_owned(),
            kind: self.kind.to_owned(),
            name: self.name.to_owned(),
            uid: self.uid.to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }
}

/// The claim's situation: whose it may be, and whether its pod is scaled away.
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    pub policy: Policy,
    pub set: Party<'a>,
    pub pod: Party<'a>,
    /// The pod's ordinal is outside the set's range (upstream `!podInOrdinalRange`).
    pub scaled_down: bool,
}

impl Claim<'_> {
    /// Upstream `hasUnexpectedController`: under a Delete policy, another controller (or a
    /// stale reference to the set or pod) holds the claim.
    pub fn unexpected_controller(&self, refs: &[OwnerReference]) -> bool {
        if self.policy.retain() {
            return false;
        }
        refs.iter().any(|r| {
            if self.set.matches(r) {
                r.uid != self.set.uid
            } else if self.pod.matches(r) {
                r.uid != self.pod.uid
            } else {
                r.controller == Some(true)
            }
        })
    }

    /// Upstream `hasNonControllerOwner`.
    fn non_controller_owner(&self, refs: &[OwnerReference]) -> bool {
        refs.iter().any(|r| {
            (r.uid == self.set.uid || (!self.pod.uid.is_empty() && r.uid == self.pod.uid))
                && r.controller != Some(true)
        })
    }

    /// Upstream `PodClaimIsStale` for one claim: under `whenScaled: Delete`, a reference to an
    /// earlier pod of the same name blocks creating the pod (the claim is about to be collected).
    pub fn stale_for_new_pod(&self, refs: &[OwnerReference]) -> bool {
        self.policy.delete_when_scaled && self.pod.stale_in(refs)
    }

    /// Upstream `isClaimOwnerUpToDate`: whether `refs` are as the policy wants them. A claim
    /// with a stale reference, or held by another controller without our references, is left
    /// alone (up to date).
    pub fn up_to_date(&self, refs: &[OwnerReference]) -> bool {
        if self.set.stale_in(refs) || self.pod.stale_in(refs) {
            return true;
        }
        let (set, pod) = (self.set.owns(refs), self.pod.owns(refs));
        if self.unexpected_controller(refs) {
            return !(set || pod);
        }
        if self.non_controller_owner(refs) {
            return false;
        }
        let want_set = self.policy.delete_when_deleted
            && !(self.policy.delete_when_scaled && self.scaled_down);
        let want_pod = self.policy.delete_when_scaled && self.scaled_down;
        set == want_set && pod == want_pod
    }

    /// Upstream `updateClaimOwnerRefForSetAndPod`: `refs` with our references scrubbed and the
    /// ones the policy wants added (none when another controller holds the claim).
    pub fn desired(&self, refs: &[OwnerReference]) -> Vec<OwnerReference> {
        let unexpected = self.unexpected_controller(refs);
        let mut out: Vec<OwnerReference> = refs
            .iter()
            .filter(|r| !self.set.matches(r) && !self.pod.matches(r))
            .cloned()
            .collect();
        if unexpected {
            return out;
        }
        let p = self.policy;
        if p.delete_when_scaled && self.scaled_down && !self.pod.uid.is_empty() {
            out.push(self.pod.controller_ref());
        }
        if p.delete_when_deleted && !(p.delete_when_scaled && self.scaled_down) {
            out.push(self.set.controller_ref());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SET: Party<'static> = Party {
        api_version: "apps/v1",
        kind: "StatefulSet",
        name: "web",
        uid: "set-uid",
    };
    const POD: Party<'static> = Party {
        api_version: "v1",
        kind: "Pod",
        name: "web-1",
        uid: "pod-uid",
    };

    fn claim(deleted: bool, scaled: bool, scaled_down: bool) -> Claim<'static> {
        Claim {
            policy: Policy {
                delete_when_deleted: deleted,
                delete_when_scaled: scaled,
            },
            set: SET,
            pod: POD,
            scaled_down,
        }
    }

    fn kinds(refs: &[OwnerReference]) -> Vec<&str> {
        refs.iter().map(|r| r.kind.as_str()).collect()
    }

    /// Upstream `TestUpdateClaimOwnerRefForSetAndPod`'s table: the references each policy wants
    /// for a pod in range and a pod scaled down.
    #[test]
    fn test_update_claim_owner_ref_for_set_and_pod() {
        let cases: [(bool, bool, bool, &[&str]); 8] = [
            (false, false, false, &[]),
            (false, false, true, &[]),
            (true, false, false, &["StatefulSet"]),
            (true, false, true, &["StatefulSet"]),
            (false, true, false, &[]),
            (false, true, true, &["Pod"]),
            (true, true, false, &["StatefulSet"]),
            (true, true, true, &["Pod"]),
        ];
        for (deleted, scaled, down, want) in cases {
            let c = claim(deleted, scaled, down);
            let refs = c.desired(&[]);
            assert_eq!(kinds(&refs), want, "{deleted} {scaled} {down}");
            assert!(refs.iter().all(|r| r.controller == Some(true)));
            assert!(c.up_to_date(&refs), "{deleted} {scaled} {down}");
            assert_eq!(c.up_to_date(&[]), want.is_empty());
        }
    }

    #[test]
    fn retain_removes_references_an_earlier_policy_left() {
        let earlier = claim(true, true, true).desired(&[]);
        let now = claim(false, false, true);
        assert!(!now.up_to_date(&earlier));
        assert!(now.desired(&earlier).is_empty());
    }

    #[test]
    fn other_owners_are_kept_and_other_controllers_win() {
        let other = OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "keep".into(),
            uid: "cm".into(),
            controller: None,
            block_owner_deletion: None,
        };
        let c = claim(true, false, false);
        assert_eq!(
            kinds(&c.desired(std::slice::from_ref(&other))),
            ["ConfigMap", "StatefulSet"]
        );
        let controller = OwnerReference {
            controller: Some(true),
            ..other
        };
        let held = [controller.clone()];
        assert!(c.unexpected_controller(&held));
        assert!(c.up_to_date(&held), "nothing of ours to scrub");
        let both = [controller, SET.controller_ref()];
        assert!(!c.up_to_date(&both));
        assert_eq!(kinds(&c.desired(&both)), ["ConfigMap"]);
    }

    #[test]
    fn stale_references_are_left_alone_and_block_the_pod() {
        let old_pod = Party {
            uid: "old-pod",
            ..POD
        };
        let refs = [old_pod.controller_ref()];
        let c = claim(false, true, false);
        assert!(c.up_to_date(&refs));
        assert!(c.stale_for_new_pod(&refs));
        assert!(!claim(false, false, false).stale_for_new_pod(&refs));
    }

    #[test]
    fn a_non_controller_reference_of_ours_is_made_a_controller() {
        let mut r = SET.controller_ref();
        r.controller = None;
        let c = claim(true, false, false);
        assert!(!c.up_to_date(std::slice::from_ref(&r)));
        assert_eq!(c.desired(&[r])[0].controller, Some(true));
    }
}
