//! A StatefulSet pod's identity and storage (`kubernetes/kubernetes pkg/controller/statefulset/
//! stateful_set_utils.go`): the ordinal in its name, its name and labels, the claims its
//! volumes name, and the pod and claims the controller creates for an ordinal.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod as TypedPod, PodTemplateSpec,
    Volume,
};
use kgc_runtime::informer::View;
use serde_json::Value;

use crate::controller_ref::{Child, Owner};
use crate::pods::Pod;
use crate::replicaset::pod_from_template;

/// The label naming the pod (upstream `StatefulSetPodNameLabel`).
pub const POD_NAME: &str = "statefulset.kubernetes.io/pod-name";
/// The label holding the ordinal (upstream `PodIndexLabel`).
pub const POD_INDEX: &str = "apps.kubernetes.io/pod-index";
/// The label naming the pod's ControllerRevision (upstream `StatefulSetRevisionLabel`).
pub const REVISION: &str = "controller-revision-hash";

/// `<parent>-<ordinal>`: the parent and ordinal of a pod's name (upstream
/// `getParentNameAndOrdinal`, the pattern `(.*)-([0-9]+)$`), if it has that form.
pub fn parent_and_ordinal(name: &str) -> Option<(&str, i32)> {
    let (parent, digits) = name.rsplit_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, digits.parse().ok()?))
}

/// What the controller keeps of a pod that may be a StatefulSet's: the workload view and the
/// claims its volumes name (volume name → claim name), for `storageMatches`.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub pod: Pod,
    pub ordinal: i32,
    pub claims: BTreeMap<String, String>,
}

/// Only pods named `<parent>-<ordinal>` that are orphans or a StatefulSet's are kept (the
/// others are no StatefulSet's to claim: upstream filters every pod with `isMemberOf` on each
/// sync); a pod that stops qualifying leaves the cache.
impl View for Member {
    fn view(obj: &Value) -> Option<Self> {
        // Judged on the name first: most pods of a big cluster are not kept, and cost no view.
        let (_, ordinal) = parent_and_ordinal(obj["metadata"]["name"].as_str()?)?;
        let pod = Pod::view(obj)?;
        if pod
            .controller
            .as_ref()
            .is_some_and(|c| c.kind != "StatefulSet" || !c.api_version.starts_with("apps/"))
        {
            return None;
        }
        let claims = obj["spec"]["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| {
                let claim = v["persistentVolumeClaim"]["claimName"].as_str()?;
                Some((v["name"].as_str()?.to_owned(), claim.to_owned()))
            })
            .collect();
        Some(Self {
            pod,
            ordinal,
            claims,
        })
    }
}

impl Child for Member {
    fn labels(&self) -> &BTreeMap<String, String> {
        self.pod.labels()
    }
    fn controller_uid(&self) -> Option<&str> {
        self.pod.controller_uid()
    }
    fn deleting(&self) -> bool {
        self.pod.deleting
    }
}

impl Member {
    /// Upstream `isMemberOf`.
    pub fn is_member_of(&self, set: &str) -> bool {
        parent_and_ordinal(&self.pod.name).is_some_and(|(p, _)| p == set)
    }

    /// Upstream `identityMatches`.
    pub fn identity_matches(&self, set: &StatefulSet) -> bool {
        let name = set.metadata.name.as_deref().unwrap_or_default();
        self.is_member_of(name)
            && self.pod.name == pod_name(name, self.ordinal)
            && Some(self.pod.namespace.as_str()) == set.metadata.namespace.as_deref()
            && self.pod.labels.get(POD_NAME) == Some(&self.pod.name)
    }

    /// Upstream `storageMatches`: every claim template has a volume naming the ordinal's claim.
    pub fn storage_matches(&self, set: &StatefulSet) -> bool {
        templates(set).iter().all(|t| {
            let template = template_name(t);
            self.claims.get(template) == Some(&claim_name(set, template, self.ordinal))
        })
    }

    /// Upstream `isRunningAndReady`.
    pub fn is_running_and_ready(&self) -> bool {
        self.pod.phase == "Running" && self.pod.is_ready()
    }

    /// Upstream `isHealthy`.
    pub fn is_healthy(&self) -> bool {
        self.is_running_and_ready() && !self.pod.deleting
    }

    pub fn revision(&self) -> Option<&str> {
        self.pod.labels.get(REVISION).map(String::as_str)
    }
}

/// Upstream `getPodName`.
pub fn pod_name(set: &str, ordinal: i32) -> String {
    format!("{set}-{ordinal}")
}

/// Upstream `getStartOrdinal`.
pub fn start_ordinal(set: &StatefulSet) -> i32 {
    set.spec
        .ordinals
        .as_ref()
        .and_then(|o| o.start)
        .unwrap_or(0)
}

/// The ordinals the set keeps pods for: `start ..= start + replicas - 1`
/// (upstream `getStartOrdinal`, `getEndOrdinal`).
pub fn ordinals(set: &StatefulSet) -> std::ops::Range<i32> {
    let start = start_ordinal(set);
    start..start.saturating_add(set.spec.replicas.unwrap_or(1).max(0))
}

fn templates(set: &StatefulSet) -> &[PersistentVolumeClaim] {
    set.spec
        .volume_claim_templates
        .as_deref()
        .unwrap_or_default()
}

fn template_name(t: &PersistentVolumeClaim) -> &str {
    t.metadata.name.as_deref().unwrap_or_default()
}

/// Upstream `getPersistentVolumeClaimName`: `<template>-<set>-<ordinal>`.
pub fn claim_name(set: &StatefulSet, template: &str, ordinal: i32) -> String {
    format!(
        "{template}-{}-{ordinal}",
        set.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The names of the claims an ordinal's pod uses, one per template.
pub fn claim_names(set: &StatefulSet, ordinal: i32) -> Vec<String> {
    templates(set)
        .iter()
        .map(|t| claim_name(set, template_name(t), ordinal))
        .collect()
}

/// Upstream `getPersistentVolumeClaims`: each template with the ordinal's name, in the set's
/// namespace, its labels joined by the selector's `matchLabels`.
pub fn claims(set: &StatefulSet, ordinal: i32) -> Vec<PersistentVolumeClaim> {
    let match_labels = set.spec.selector.match_labels.clone().unwrap_or_default();
    templates(set)
        .iter()
        .map(|t| {
            let mut claim = PersistentVolumeClaim {
                metadata: t.metadata.clone(),
                spec: t.spec.clone(),
                status: None,
            };
            claim.metadata.name = Some(claim_name(set, template_name(t), ordinal));
            claim.metadata.namespace = set.metadata.namespace.clone();
            claim
                .metadata
                .labels
                .get_or_insert_default()
                .extend(match_labels.clone());
            claim
        })
        .collect()
}

/// Upstream `newVersionedStatefulSetPod` (`newStatefulSetPod`, `initIdentity`,
/// `updateStorage`, `setPodRevision`): the pod of `ordinal` from `template`, named, labelled,
/// with hostname and subdomain, its claim volumes in place of the template's of the same name.
pub fn new_pod(
    set: &StatefulSet,
    template: &PodTemplateSpec,
    revision: &str,
    owner: &Owner,
    ordinal: i32,
) -> TypedPod {
    let namespace = set.metadata.namespace.as_deref().unwrap_or_default();
    let mut pod = pod_from_template(template, namespace, owner);
    let name = pod_name(&owner.name, ordinal);
    pod.metadata.generate_name = None;
    pod.metadata.name = Some(name.clone());
    let labels = pod.metadata.labels.get_or_insert_default();
    labels.insert(POD_NAME.into(), name.clone());
    labels.insert(POD_INDEX.into(), ordinal.to_string());
    labels.insert(REVISION.into(), revision.into());
    let spec = pod.spec.get_or_insert_default();
    spec.hostname = Some(name);
    spec.subdomain = set.spec.service_name.clone().filter(|s| !s.is_empty());
    let claimed: Vec<Volume> = templates(set)
        .iter()
        .map(|t| Volume {
            name: template_name(t).to_owned(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim_name(set, template_name(t), ordinal),
                read_only: None,
            }),
            ..Volume::default()
        })
        .collect();
    if !claimed.is_empty() {
        let own = spec.volumes.take().unwrap_or_default();
        let mut volumes = claimed;
        let taken: Vec<String> = volumes.iter().map(|v| v.name.clone()).collect();
        volumes.extend(own.into_iter().filter(|v| !taken.contains(&v.name)));
        spec.volumes = Some(volumes);
    }
    pod
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    pub(crate) fn set(v: Value) -> StatefulSet {
        serde_json::from_value(v).unwrap()
    }

    fn web() -> StatefulSet {
        set(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "set-uid"},
            "spec": {
                "serviceName": "nginx",
                "replicas": 3,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {"metadata": {"labels": {"app": "nginx"}},
                             "spec": {"containers": [{"name": "nginx", "image": "nginx"}],
                                      "volumes": [{"name": "www", "emptyDir": {}},
                                                  {"name": "cfg", "emptyDir": {}}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "www", "labels": {"tier": "data"}},
                                          "spec": {"accessModes": ["ReadWriteOnce"]}}],
            }
        }))
    }

    fn owner() -> Owner {
        Owner {
            api_version: "apps/v1".into(),
            kind: "StatefulSet".into(),
            name: "web".into(),
            uid: "set-uid".into(),
            deleting: false,
        }
    }

    #[test]
    fn names_parse_as_upstreams_pattern() {
        assert_eq!(parent_and_ordinal("web-0"), Some(("web", 0)));
        assert_eq!(parent_and_ordinal("my-web-12"), Some(("my-web", 12)));
        assert_eq!(parent_and_ordinal("web-"), None);
        assert_eq!(parent_and_ordinal("web-x1"), None);
        assert_eq!(parent_and_ordinal("web"), None);
    }

    #[test]
    fn the_pod_of_an_ordinal_has_its_identity_and_claims() {
        let s = web();
        let template = s.spec.template.clone();
        let pod = new_pod(&s, &template, "web-abc", &owner(), 2);
        assert_eq!(pod.metadata.name.as_deref(), Some("web-2"));
        assert_eq!(pod.metadata.generate_name, None);
        let labels = pod.metadata.labels.clone().unwrap();
        assert_eq!(labels[POD_NAME], "web-2");
        assert_eq!(labels[POD_INDEX], "2");
        assert_eq!(labels[REVISION], "web-abc");
        assert_eq!(labels["app"], "nginx");
        let spec = pod.spec.clone().unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("web-2"));
        assert_eq!(spec.subdomain.as_deref(), Some("nginx"));
        let volumes = spec.volumes.unwrap();
        assert_eq!(
            volumes.len(),
            2,
            "the template's www is replaced: {volumes:?}"
        );
        assert_eq!(
            volumes[0]
                .persistent_volume_claim
                .as_ref()
                .unwrap()
                .claim_name,
            "www-web-2"
        );
        assert_eq!(volumes[1].name, "cfg");
        let refs = pod.metadata.owner_references.unwrap();
        assert_eq!(refs[0].kind, "StatefulSet");
        assert_eq!(refs[0].controller, Some(true));

        let mut v = serde_json::to_value(new_pod(&s, &template, "r", &owner(), 1)).unwrap();
        v["metadata"]["uid"] = json!("p");
        let member = Member::view(&v).unwrap();
        assert_eq!(member.ordinal, 1);
        assert!(member.identity_matches(&s));
        assert!(member.storage_matches(&s));
        assert!(!member.is_member_of("we"));
    }

    #[test]
    fn claims_carry_the_template_labels_and_the_selector() {
        let s = web();
        let c = claims(&s, 0);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].metadata.name.as_deref(), Some("www-web-0"));
        assert_eq!(c[0].metadata.namespace.as_deref(), Some("ns"));
        let labels = c[0].metadata.labels.clone().unwrap();
        assert_eq!(labels["tier"], "data");
        assert_eq!(labels["app"], "nginx");
        assert_eq!(claim_names(&s, 4), ["www-web-4"]);
    }

    #[test]
    fn ordinals_start_where_the_spec_says() {
        let mut s = web();
        assert_eq!(ordinals(&s), 0..3);
        s.spec.ordinals = Some(k8s_openapi::api::apps::v1::StatefulSetOrdinals { start: Some(5) });
        assert_eq!(ordinals(&s), 5..8);
    }

    #[test]
    fn pods_of_other_controllers_are_not_kept() {
        let rs_pod = json!({"metadata": {"name": "web-0", "uid": "u", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": "x", "controller": true}]}});
        assert!(Member::view(&rs_pod).is_none());
        assert!(Member::view(&json!({"metadata": {"name": "web-abc", "uid": "u"}})).is_none());
        assert!(Member::view(&json!({"metadata": {"name": "web-3", "uid": "u"}})).is_some());
    }
}
