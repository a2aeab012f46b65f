//! What one sync of a StatefulSet does, decided apart from doing it (`kubernetes/kubernetes
//! pkg/controller/statefulset/stateful_set_control.go`, `updateStatefulSet`): the replicas in
//! ascending ordinal order (`processReplica`), the claims of condemned pods, the condemned pods
//! in descending order (`processCondemned`), then the rolling update from the highest ordinal.
//! `OrderedReady` (monotonic) stops at the first pod it creates, deletes or waits for;
//! `Parallel` acts on all of them.

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use super::identity::{Member, claim_names, ordinals, pod_name};
use super::retention::{Claim, Party, Policy};

/// Which revision's template a new pod is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    Current,
    Update,
}

/// Why a pod is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Failed or Succeeded: it is made again once gone.
    Finished,
    /// Its ordinal is beyond the replicas.
    ScaleDown,
    /// Not at the update revision.
    Update,
}

/// One write of a sync.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create the ordinal's claims (those missing), then its pod.
    Create {
        ordinal: i32,
        revision: Revision,
    },
    Delete {
        pod: Member,
        why: Why,
    },
    /// Set the pod-name and pod-index labels the pod lacks (upstream `updateIdentity`).
    Identity(Member),
    /// Create the pod's missing claims and bring their owner references in line with the
    /// retention policy.
    Claims(Member),
}

/// What a plan is made from.
pub struct Inputs<'a> {
    pub set: &'a StatefulSet,
    /// The set's pods (claimed, members of it).
    pub pods: &'a [Member],
    pub update_revision: &'a str,
    pub claim: &'a dyn Fn(&str) -> Option<&'a PersistentVolumeClaim>,
    pub now: Timestamp,
}

impl Inputs<'_> {
    fn min_ready(&self) -> i64 {
        i64::from(self.set.spec.min_ready_seconds.unwrap_or(0))
    }

    fn available(&self, m: &Member) -> bool {
        m.is_running_and_ready() && m.pod.is_available(self.min_ready(), self.now)
    }

    fn party_of_set(&self) -> Party<'_> {
        Party {
            api_version: "apps/v1",
            kind: "StatefulSet",
            name: self.set.metadata.name.as_deref().unwrap_or_default(),
            uid: self.set.metadata.uid.as_deref().unwrap_or_default(),
        }
    }

    fn retention<'b>(&'b self, pod: &'b str, uid: &'b str, ordinal: i32) -> Claim<'b> {
        Claim {
            policy: Policy::of(self.set),
            set: self.party_of_set(),
            pod: Party {
                api_version: "v1",
                kind: "Pod",
                name: pod,
                uid,
            },
            scaled_down: !ordinals(self.set).contains(&ordinal),
        }
    }

    /// The ordinal's claims that exist, with their owner references.
    fn existing_claims(&self, ordinal: i32) -> impl Iterator<Item = &PersistentVolumeClaim> {
        claim_names(self.set, ordinal)
            .into_iter()
            .filter_map(|n| (self.claim)(&n))
    }

    /// Upstream `ClaimsMatchRetentionPolicy`.
    pub fn claims_match(&self, m: &Member) -> bool {
        let c = self.retention(&m.pod.name, &m.pod.uid, m.ordinal);
        self.existing_claims(m.ordinal).all(|claim| {
            c.up_to_date(
                claim
                    .metadata
                    .owner_references
                    .as_deref()
                    .unwrap_or_default(),
            )
        })
    }

    fn claims_missing(&self, ordinal: i32) -> bool {
        claim_names(self.set, ordinal)
            .iter()
            .any(|n| (self.claim)(n).is_none())
    }

    /// Upstream `PodClaimIsStale`.
    fn claim_is_stale(&self, ordinal: i32) -> bool {
        let name = pod_name(
            self.set.metadata.name.as_deref().unwrap_or_default(),
            ordinal,
        );
        let c = self.retention(&name, "", ordinal);
        self.existing_claims(ordinal).any(|claim| {
            c.stale_for_new_pod(
                claim
                    .metadata
                    .owner_references
                    .as_deref()
                    .unwrap_or_default(),
            )
        })
    }

    /// Upstream `newVersionedStatefulSetPod`'s choice of revision, its operator precedence
    /// included.
    fn revision_for(&self, ordinal: i32) -> Revision {
        let strategy = self.set.spec.update_strategy.as_ref();
        let rolling = strategy.and_then(|s| s.rolling_update.as_ref());
        let rolling_type = strategy.and_then(|s| s.type_.as_deref()) != Some("OnDelete");
        let current_replicas = self
            .set
            .status
            .as_ref()
            .and_then(|s| s.current_replicas)
            .unwrap_or(0);
        let index = ordinal - ordinals(self.set).start;
        let current = (rolling_type && rolling.is_none() && index < current_replicas)
            || rolling.is_some_and(|r| index < r.partition.unwrap_or(0));
        if current {
            Revision::Current
        } else {
            Revision::Update
        }
    }
}

/// The writes of one sync, in order (upstream `updateStatefulSet` after the revisions are
/// known). A set being deleted gets none.
pub fn plan(i: &Inputs<'_>) -> Vec<Action> {
    let mut out = Vec::new();
    if i.set.metadata.deletion_timestamp.is_some() {
        return out;
    }
    let monotonic = i.set.spec.pod_management_policy.as_deref() != Some("Parallel");
    let range = ordinals(i.set);
    let replica = |ord: i32| i.pods.iter().find(|m| m.ordinal == ord);
    let mut condemned: Vec<&Member> = i
        .pods
        .iter()
        .filter(|m| !range.contains(&m.ordinal))
        .collect();
    condemned.sort_by_key(|m| std::cmp::Reverse(m.ordinal));

    // The replicas, ascending.
    for ord in range.clone() {
        let Some(m) = replica(ord) else {
            if i.claim_is_stale(ord) {
                // The claim is about to be collected with its old pod; make the pod after.
                if monotonic {
                    return out;
                }
                continue;
            }
            out.push(Action::Create {
                ordinal: ord,
                revision: i.revision_for(ord),
            });
            if monotonic {
                return out;
            }
            continue;
        };
        if m.pod.phase == "Failed" || m.pod.phase == "Succeeded" {
            if !m.pod.deleting {
                out.push(Action::Delete {
                    pod: m.clone(),
                    why: Why::Finished,
                });
            }
            if monotonic {
                return out;
            }
            continue;
        }
        if m.pod.phase == "Pending" && i.claims_missing(ord) {
            out.push(Action::Claims(m.clone()));
        }
        if monotonic && (m.pod.deleting || !i.available(m)) {
            return out;
        }
        if !m.identity_matches(i.set) {
            out.push(Action::Identity(m.clone()));
        }
        if !i.claims_match(m) {
            out.push(Action::Claims(m.clone()));
        }
    }

    // The condemned pods' claims, so a claim is the pod's before the pod goes.
    for m in &condemned {
        if !i.claims_match(m) {
            out.push(Action::Claims((*m).clone()));
        }
    }

    // The condemned pods, descending; in order, one at a time, each waiting for the one before
    // to be gone, the first unhealthy one excepted.
    let first_unhealthy = condemned
        .iter()
        .rev()
        .find(|m| !m.is_healthy())
        .map(|m| m.ordinal);
    for m in &condemned {
        if m.pod.deleting {
            if monotonic {
                return out;
            }
            continue;
        }
        if monotonic && !i.available(m) && Some(m.ordinal) != first_unhealthy {
            return out;
        }
        out.push(Action::Delete {
            pod: (*m).clone(),
            why: Why::ScaleDown,
        });
        if monotonic {
            return out;
        }
    }

    let strategy = i.set.spec.update_strategy.as_ref();
    if strategy.and_then(|s| s.type_.as_deref()) == Some("OnDelete") {
        return out;
    }
    let rolling = strategy.and_then(|s| s.rolling_update.as_ref());
    let partition = range.start + rolling.and_then(|r| r.partition).unwrap_or(0).max(0);
    let outdated = |m: &Member| m.revision() != Some(i.update_revision) && !m.pod.deleting;
    let replicas: Vec<Option<&Member>> = range.clone().map(replica).collect();
    match rolling.and_then(|r| r.max_unavailable.as_ref()) {
        // Upstream `updateStatefulSetAfterInvariantEstablished` (MaxUnavailableStatefulSet).
        Some(max) => {
            let total = i32::try_from(replicas.len()).unwrap_or(i32::MAX);
            let max = crate::deployment::scaled(Some(max), "1", total, false).max(1);
            let unavailable = replicas
                .iter()
                .filter(|m| !m.is_some_and(|m| m.is_healthy()))
                .count();
            let mut budget = usize::try_from(max)
                .unwrap_or(0)
                .saturating_sub(unavailable);
            for m in replicas.iter().rev().flatten() {
                if budget == 0 || m.ordinal < partition {
                    break;
                }
                if outdated(m) {
                    out.push(Action::Delete {
                        pod: (*m).clone(),
                        why: Why::Update,
                    });
                    budget -= 1;
                }
            }
        }
        // The highest ordinal not at the update revision goes; wait for each to be healthy.
        None => {
            for m in replicas.iter().rev() {
                let Some(m) = m else { break };
                if m.ordinal < partition {
                    break;
                }
                if outdated(m) {
                    out.push(Action::Delete {
                        pod: (*m).clone(),
                        why: Why::Update,
                    });
                    break;
                }
                if !m.is_healthy() {
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kgc_runtime::informer::View;
    use serde_json::{Value, json};

    use super::*;

    fn set(extra: Value) -> StatefulSet {
        let mut v = json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "set-uid"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {"metadata": {"labels": {"app": "nginx"}}},
                "volumeClaimTemplates": [{"metadata": {"name": "www"}}],
            }
        });
        for (k, val) in extra.as_object().unwrap() {
            v["spec"][k] = val.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    fn pod(ord: i32, phase: &str, ready: bool, revision: &str) -> Member {
        let mut status = json!({"phase": phase});
        if ready {
            status["conditions"] = json!([{"type": "Ready", "status": "True",
                                           "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
        }
        Member::view(&json!({
            "metadata": {"name": format!("web-{ord}"), "namespace": "ns", "uid": format!("u{ord}"),
                         "labels": {"app": "nginx", "statefulset.kubernetes.io/pod-name": format!("web-{ord}"),
                                    "controller-revision-hash": revision}},
            "spec": {"volumes": [{"name": "www", "persistentVolumeClaim": {"claimName": format!("www-web-{ord}")}}]},
            "status": status,
        }))
        .unwrap()
    }

    fn claims(ords: &[i32]) -> BTreeMap<String, PersistentVolumeClaim> {
        ords.iter()
            .map(|o| {
                let name = format!("www-web-{o}");
                let mut c = PersistentVolumeClaim::default();
                c.metadata.name = Some(name.clone());
                (name, c)
            })
            .collect()
    }

    fn run(
        s: &StatefulSet,
        pods: &[Member],
        claims: &BTreeMap<String, PersistentVolumeClaim>,
    ) -> Vec<Action> {
        let lookup = |n: &str| claims.get(n);
        plan(&Inputs {
            set: s,
            pods,
            update_revision: "new",
            claim: &lookup,
            now: "2026-01-01T00:10:00Z".parse().unwrap(),
        })
    }

    fn summary(actions: &[Action]) -> Vec<String> {
        actions
            .iter()
            .map(|a| match a {
                Action::Create { ordinal, .. } => format!("create {ordinal}"),
                Action::Delete { pod, .. } => format!("delete {}", pod.ordinal),
                Action::Identity(m) => format!("identity {}", m.ordinal),
                Action::Claims(m) => format!("claims {}", m.ordinal),
            })
            .collect()
    }

    #[test]
    fn ordered_ready_creates_one_at_a_time_after_the_previous_is_ready() {
        let s = set(json!({}));
        assert_eq!(summary(&run(&s, &[], &claims(&[]))), ["create 0"]);
        let pending = [pod(0, "Pending", false, "new")];
        assert!(run(&s, &pending, &claims(&[0])).is_empty());
        let ready = [pod(0, "Running", true, "new")];
        assert_eq!(summary(&run(&s, &ready, &claims(&[0]))), ["create 1"]);
    }

    #[test]
    fn parallel_creates_every_missing_ordinal() {
        let s = set(json!({"podManagementPolicy": "Parallel"}));
        let pending = [pod(0, "Pending", false, "new")];
        assert_eq!(
            summary(&run(&s, &pending, &claims(&[0]))),
            ["create 1", "create 2"]
        );
    }

    #[test]
    fn scale_down_goes_from_the_highest_ordinal_one_at_a_time() {
        let s = set(json!({"replicas": 1}));
        let pods: Vec<Member> = (0..3).map(|o| pod(o, "Running", true, "new")).collect();
        assert_eq!(summary(&run(&s, &pods, &claims(&[0, 1, 2]))), ["delete 2"]);
        let mut terminating = pods.clone();
        terminating[2].pod.deleting = true;
        assert!(run(&s, &terminating, &claims(&[0, 1, 2])).is_empty());
        let p = set(json!({"replicas": 1, "podManagementPolicy": "Parallel"}));
        assert_eq!(
            summary(&run(&p, &pods, &claims(&[0, 1, 2]))),
            ["delete 2", "delete 1"]
        );
    }

    #[test]
    fn when_scaled_delete_gives_condemned_claims_to_their_pods_first() {
        let s = set(json!({"replicas": 1,
            "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete", "whenDeleted": "Retain"}}));
        let pods: Vec<Member> = (0..3).map(|o| pod(o, "Running", true, "new")).collect();
        assert_eq!(
            summary(&run(&s, &pods, &claims(&[0, 1, 2]))),
            ["claims 2", "claims 1", "delete 2"]
        );
    }

    #[test]
    fn rolling_update_replaces_the_highest_ordinal_above_the_partition() {
        let s = set(json!({}));
        let mut pods: Vec<Member> = (0..3).map(|o| pod(o, "Running", true, "old")).collect();
        assert_eq!(summary(&run(&s, &pods, &claims(&[0, 1, 2]))), ["delete 2"]);
        pods[2] = pod(2, "Running", false, "new");
        assert!(
            run(&s, &pods, &claims(&[0, 1, 2])).is_empty(),
            "2 is not ready"
        );
        pods[2] = pod(2, "Running", true, "new");
        assert_eq!(summary(&run(&s, &pods, &claims(&[0, 1, 2]))), ["delete 1"]);
        let part = set(
            json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}}),
        );
        assert!(run(&part, &pods, &claims(&[0, 1, 2])).is_empty());
        let on_delete = set(json!({"updateStrategy": {"type": "OnDelete"}}));
        assert!(run(&on_delete, &pods, &claims(&[0, 1, 2])).is_empty());
        let max = set(
            json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}}),
        );
        let old: Vec<Member> = (0..3).map(|o| pod(o, "Running", true, "old")).collect();
        assert_eq!(
            summary(&run(&max, &old, &claims(&[0, 1, 2]))),
            ["delete 2", "delete 1"]
        );
    }

    #[test]
    fn ordinals_start_at_spec_ordinals_start() {
        let s = set(json!({"replicas": 2, "ordinals": {"start": 5}}));
        assert_eq!(summary(&run(&s, &[], &claims(&[]))), ["create 5"]);
        let pods = [
            pod(0, "Running", true, "new"),
            pod(5, "Running", true, "new"),
        ];
        assert_eq!(
            summary(&run(&s, &pods, &claims(&[0, 5]))),
            ["create 6"],
            "web-0 is condemned, but the replicas come first"
        );
        let pods = [
            pod(0, "Running", true, "new"),
            pod(5, "Running", true, "new"),
            pod(6, "Running", true, "new"),
        ];
        assert_eq!(summary(&run(&s, &pods, &claims(&[0, 5, 6]))), ["delete 0"]);
    }

    #[test]
    fn finished_pods_are_deleted_to_be_made_again() {
        let s = set(json!({}));
        let pods = [pod(0, "Failed", false, "new")];
        assert_eq!(summary(&run(&s, &pods, &claims(&[0]))), ["delete 0"]);
    }

    #[test]
    fn a_stale_claim_blocks_the_pod_until_it_is_collected() {
        let s = set(json!({"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"}}));
        let mut c = claims(&[0]);
        c.get_mut("www-web-0").unwrap().metadata.owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: "web-0".into(),
                uid: "old".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            },
        ]);
        assert!(run(&s, &[], &c).is_empty());
    }

    #[test]
    fn the_revision_of_a_new_pod_follows_the_partition() {
        let s = set(
            json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}}),
        );
        let lookup = |_: &str| None;
        let i = Inputs {
            set: &s,
            pods: &[],
            update_revision: "new",
            claim: &lookup,
            now: Timestamp::UNIX_EPOCH,
        };
        assert_eq!(i.revision_for(1), Revision::Current);
        assert_eq!(i.revision_for(2), Revision::Update);
    }
}
