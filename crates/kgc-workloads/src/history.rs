//! Controller history (`kubernetes/kubernetes pkg/controller/history/controller_history.go`):
//! the ControllerRevisions a StatefulSet or DaemonSet records each of its pod templates in, so
//! a rollout knows which pods run an old template and a rollback finds the old one again.
//!
//! A revision's data is a strategic merge patch restoring the parent's template ([`patch`]); its
//! name is the parent's name and a hash of that data ([`hash`], [`name`]); its number orders
//! the history ([`next_revision`]); and beyond the parent's `revisionHistoryLimit` the oldest
//! revisions no pod runs are deleted ([`to_delete`]).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision as TypedCr;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use serde_json::{Value, json};

use crate::Result;
use crate::controller_ref::Owner;

/// The label a revision carries its hash in (upstream `ControllerRevisionHashLabel`).
pub const HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// A cached ControllerRevision (typed; a parent keeps at most `revisionHistoryLimit` + 1).
pub type ControllerRevision = kgc_runtime::informer::Typed<TypedCr>;

/// FNV-32a over `parts` in order, written as its decimal form in `rand.SafeEncodeString`'s
/// alphabet (no vowels, so no words): the hash every kgc workload name suffix is made of
/// (Deployment's pod-template hash, ControllerRevision names).
pub(crate) fn safe_hash(parts: &[&[u8]]) -> String {
    let mut h: u32 = 2_166_136_261;
    for b in parts.iter().flat_map(|p| p.iter()) {
        h ^= u32::from(*b);
        h = h.wrapping_mul(16_777_619);
    }
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string()
        .bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

/// The data a revision of `template` holds (upstream `getPatch` of both the StatefulSet and the
/// DaemonSet controller): a strategic merge patch replacing the parent's whole template.
pub fn patch(template: &PodTemplateSpec) -> Value {
    let mut t = serde_json::to_value(template).unwrap_or_else(|_| json!({}));
    if let Some(o) = t.as_object_mut() {
        o.insert("$patch".into(), json!("replace"));
    }
    json!({"spec": {"template": t}})
}

/// Upstream `HashControllerRevision`: the hash of a revision's data and, after name collisions,
/// their count (its decimal form, as upstream). Upstream hashes the raw JSON bytes with FNV-32
/// (not 32a); kgc uses the one hash of [`safe_hash`], so names differ from a real cluster's but
/// are as stable.
pub fn hash(patch: &Value, collision_count: Option<i32>) -> String {
    let data = serde_json::to_string(patch).unwrap_or_default();
    let probe = collision_count.map(|c| c.to_string()).unwrap_or_default();
    safe_hash(&[data.as_bytes(), probe.as_bytes()])
}

/// Upstream `ControllerRevisionName`: `parent-hash`, the parent's name cut to 223 bytes so the
/// whole stays within 253.
pub fn name(parent: &str, hash: &str) -> String {
    let mut end = parent.len().min(223);
    while !parent.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}-{hash}", &parent[..end])
}

/// The labels of `patch`'s template (what a revision is labelled with besides its hash).
fn template_labels(patch: &Value) -> BTreeMap<String, String> {
    patch["spec"]["template"]["metadata"]["labels"]
        .as_object()
        .map(|l| {
            l.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// Upstream `NewControllerRevision`: the revision `revision_number` of `owner`'s template as
/// `patch` (see [`patch`]), labelled with the template's labels and its hash, controlled by
/// `owner`.
pub fn revision(
    owner: &Owner,
    namespace: &str,
    patch: &Value,
    revision_number: i64,
    collision_count: Option<i32>,
) -> TypedCr {
    let hash = hash(patch, collision_count);
    let mut labels = template_labels(patch);
    labels.insert(HASH_LABEL.into(), hash.clone());
    TypedCr {
        metadata: ObjectMeta {
            name: Some(name(&owner.name, &hash)),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels),
            owner_references: Some(vec![owner.controller_ref()]),
            ..ObjectMeta::default()
        },
        data: RawExtension(patch.clone()),
        revision: Some(revision_number),
    }
}

/// Whether `r` records the template `patch` (upstream `Match`, by the data alone).
pub fn holds(r: &TypedCr, patch: &Value) -> bool {
    r.data.0 == *patch
}

/// Upstream `SortControllerRevisions`: by revision number, then creation, then name.
fn by_revision(a: &TypedCr, b: &TypedCr) -> Ordering {
    a.revision
        .cmp(&b.revision)
        .then_with(|| {
            let t = |r: &TypedCr| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
            t(a).cmp(&t(b))
        })
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// The number the next revision gets: one more than the highest (upstream `nextRevision`).
pub fn next_revision(revisions: &[TypedCr]) -> i64 {
    revisions
        .iter()
        .filter_map(|r| r.revision)
        .max()
        .unwrap_or(0)
        + 1
}

/// Deletes what [`to_delete`] chooses, each guarded by its uid (a revision gone, or another
/// of the same name, is left alone).
pub async fn truncate(
    api: &Api<TypedCr>,
    revisions: &[TypedCr],
    live: &[&str],
    limit: i32,
) -> Result<()> {
    for r in to_delete(revisions, live, limit) {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: r.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api
            .delete(r.metadata.name.as_deref().unwrap_or_default(), &params)
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The revisions to delete so that at most `limit` remain besides the `live` ones (by name:
/// the current and update revisions, and those pods still run), oldest first (upstream
/// `truncateHistory` of the StatefulSet controller; the DaemonSet's `cleanupHistory` counts
/// the same way once its rollout is over, and kgc keeps one rule for both).
pub fn to_delete<'a>(revisions: &'a [TypedCr], live: &[&str], limit: i32) -> Vec<&'a TypedCr> {
    let mut idle: Vec<&TypedCr> = revisions
        .iter()
        .filter(|r| {
            r.metadata.deletion_timestamp.is_none()
                && !live.contains(&r.metadata.name.as_deref().unwrap_or_default())
        })
        .collect();
    let keep = usize::try_from(limit).unwrap_or(0);
    if idle.len() <= keep {
        return Vec::new();
    }
    idle.sort_by(|a, b| by_revision(a, b));
    let excess = idle.len() - keep;
    idle.truncate(excess);
    idle
}

/// Upstream `CreateControllerRevision`: creates `owner`'s revision of `patch`; a name already
/// taken by the same data is that revision, by other data a collision, counted in
/// `collision_count` (for the parent's `status.collisionCount`) and tried again under the next
/// name.
pub async fn create(
    api: &Api<TypedCr>,
    owner: &Owner,
    patch: &Value,
    revision_number: i64,
    collision_count: &mut i32,
) -> Result<TypedCr> {
    let namespace = api.namespace().unwrap_or_default().to_owned();
    loop {
        let r = revision(
            owner,
            &namespace,
            patch,
            revision_number,
            Some(*collision_count),
        );
        match api.create(&PostParams::default(), &r).await {
            Ok(created) => return Ok(created),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                let existing = api
                    .get(r.metadata.name.as_deref().unwrap_or_default())
                    .await?;
                if holds(&existing, patch) {
                    return Ok(existing);
                }
                *collision_count += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner {
            api_version: "apps/v1".into(),
            kind: "DaemonSet".into(),
            name: "ds".into(),
            uid: "ds-uid".into(),
            deleting: false,
        }
    }

    fn template(image: &str) -> PodTemplateSpec {
        serde_json::from_value(json!({
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": image}]},
        }))
        .unwrap()
    }

    fn rev(name: &str, number: i64) -> TypedCr {
        TypedCr {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            data: RawExtension(Value::Null),
            revision: Some(number),
        }
    }

    #[test]
    fn the_patch_replaces_the_whole_template() {
        let p = patch(&template("nginx"));
        assert_eq!(p["spec"]["template"]["$patch"], "replace");
        assert_eq!(
            p["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx"
        );
        assert_eq!(p.as_object().unwrap().len(), 1);
    }

    #[test]
    fn the_hash_depends_on_the_data_and_the_collision_count_only() {
        let p = patch(&template("nginx"));
        let h = hash(&p, None);
        assert_eq!(h, hash(&p, None));
        assert_ne!(h, hash(&p, Some(1)));
        assert_ne!(h, hash(&patch(&template("httpd")), None));
        assert!(
            h.bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)),
            "{h}"
        );
    }

    #[test]
    fn names_stay_within_253_bytes() {
        assert_eq!(name("ds", "abc"), "ds-abc");
        let long = "x".repeat(300);
        assert_eq!(name(&long, "abc").len(), 223 + 4);
    }

    #[test]
    fn a_revision_is_labelled_named_and_owned() {
        let p = patch(&template("nginx"));
        let r = revision(&owner(), "ns", &p, 3, Some(0));
        let h = hash(&p, Some(0));
        assert_eq!(r.metadata.name.as_deref(), Some(format!("ds-{h}").as_str()));
        assert_eq!(r.metadata.namespace.as_deref(), Some("ns"));
        let labels = r.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["app"], "a");
        assert_eq!(labels[HASH_LABEL], h);
        let refs = r.metadata.owner_references.as_ref().unwrap();
        assert_eq!(refs[0].uid, "ds-uid");
        assert_eq!(refs[0].controller, Some(true));
        assert_eq!(r.revision, Some(3));
        assert!(holds(&r, &p));
        assert!(!holds(&r, &patch(&template("httpd"))));
    }

    #[test]
    fn the_next_revision_follows_the_highest() {
        assert_eq!(next_revision(&[]), 1);
        assert_eq!(next_revision(&[rev("a", 2), rev("b", 7), rev("c", 3)]), 8);
    }

    #[test]
    fn the_oldest_idle_revisions_beyond_the_limit_go() {
        let rs = [rev("r3", 3), rev("r1", 1), rev("r4", 4), rev("r2", 2)];
        let names = |v: Vec<&TypedCr>| -> Vec<String> {
            v.iter().map(|r| r.metadata.name.clone().unwrap()).collect()
        };
        // r4 is current; r1 still runs on a pod: of r2 and r3, one is kept.
        assert_eq!(names(to_delete(&rs, &["r4", "r1"], 1)), ["r2"]);
        assert_eq!(names(to_delete(&rs, &["r4"], 1)), ["r1", "r2"]);
        assert!(to_delete(&rs, &["r4"], 10).is_empty());
        assert_eq!(names(to_delete(&rs, &["r4"], 0)), ["r1", "r2", "r3"]);
        assert_eq!(names(to_delete(&rs, &["r4"], -1)), ["r1", "r2", "r3"]);
    }
}
