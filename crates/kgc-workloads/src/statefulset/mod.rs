//! The StatefulSet controller (`kubernetes/kubernetes pkg/controller/statefulset/
//! stateful_set.go`, `stateful_set_control.go`, `stateful_pod_control.go`): pods with stable
//! names `<set>-<ordinal>`, each with its own claims from `volumeClaimTemplates`, created in
//! ordinal order and removed from the highest (`OrderedReady`) or all at once (`Parallel`),
//! rolled to a new template from the highest ordinal down to the partition, the templates
//! recorded as ControllerRevisions with `revisionHistoryLimit` of them kept, and the claims'
//! owner references set as `persistentVolumeClaimRetentionPolicy` says, so that the
//! owner-reference garbage collector deletes them with the set or their scaled-down pod.
//!
//! A sync decides its writes apart from making them ([`control::plan`]); the pods a sync may
//! act on are claimed through [`controller_ref`](crate::controller_ref), and
//! [`expectations`](crate::expectations) per pod keep a sync from acting twice on a cache that
//! has not yet seen its last create or delete (upstream has no such guard and relies on
//! AlreadyExists; kgc avoids the retry and the duplicate events).

mod control;
pub mod identity;
pub mod retention;
mod status;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision as TypedCr, StatefulSet as Typed};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod as TypedPod, PodTemplateSpec};
use kgc_client::Cluster;
use kgc_meta::selector::LabelSelector;
use kgc_runtime::events::{Recorder, reference};
use kgc_runtime::informer::{Cache, Key, describe};
use kgc_runtime::{Context, ObjectKey};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;

use self::control::{Action, Inputs, Revision, Why, plan};
use self::identity::{Member, POD_INDEX, POD_NAME, claims, new_pod, ordinals, parent_and_ordinal};
use crate::controller_ref::{Owner, claim_all, controller_named, still_owner};
use crate::expectations::Expectations;
use crate::history::{self, ControllerRevision};
use crate::selector::matcher;
use crate::slow_start::slow_start_batch;
use crate::{Error, Result};

/// The name `--controllers` knows it by (kube-controller-manager's).
pub const NAME: &str = "statefulset";
/// `--concurrent-statefulset-syncs`.
const WORKERS: usize = 5;
/// The component events are recorded under.
const COMPONENT: &str = "statefulset-controller";
const FIELD_MANAGER: &str = "kgc-statefulset-controller";
/// The most writes a `Parallel` set makes at once (upstream `MaxBatchSize`: its bound is per
/// batch, not per sync, as a set's pods are few and each has its name).
pub const MAX_BATCH_SIZE: usize = 500;
/// Upstream's default `revisionHistoryLimit` (`pkg/apis/apps/v1/defaults.go`).
const REVISION_HISTORY_LIMIT: i32 = 10;

/// A cached StatefulSet (typed; there are few of them).
pub type StatefulSet = kgc_runtime::informer::Typed<Typed>;
type CachedClaim = kgc_runtime::informer::Typed<PersistentVolumeClaim>;

struct Controller<C> {
    ctx: Context<C>,
    sets: Cache<StatefulSet>,
    pods: Cache<Member>,
    claims: Cache<CachedClaim>,
    revisions: Cache<ControllerRevision>,
    /// Keyed by pod: the create or delete of that pod the cache has yet to show.
    expectations: Expectations<Key>,
    recorder: Recorder,
}

/// The set a pod belongs to: its controller's, or for an orphan the one its name names (which
/// may adopt it; upstream `getPodStatefulSets` asks every set whose selector matches, and only
/// the one `isMemberOf` names may claim it).
fn set_of(pod: &Member) -> Key {
    let name = match &pod.pod.controller {
        Some(c) => c.name.clone(),
        None => parent_and_ordinal(&pod.pod.name)
            .map(|(p, _)| p.to_owned())
            .unwrap_or_default(),
    };
    (pod.pod.namespace.clone(), name)
}

/// The sets a claim's owner references point at: the set itself, or the set of the pod.
fn sets_of_claim(key: &Key, claim: &CachedClaim) -> Vec<Key> {
    claim
        .0
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter_map(|r| match r.kind.as_str() {
            "StatefulSet" => Some((key.0.clone(), r.name.clone())),
            "Pod" => parent_and_ordinal(&r.name).map(|(p, _)| (key.0.clone(), p.to_owned())),
            _ => None,
        })
        .collect()
}

/// Runs the controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let sets_resource = ctx.informers.resource("apps", "statefulsets").await;
    let pods_resource = ctx.informers.resource("", "pods").await;
    let claims_resource = ctx.informers.resource("", "persistentvolumeclaims").await;
    let revisions_resource = ctx.informers.resource("apps", "controllerrevisions").await;
    let controller = Arc::new(Controller {
        sets: ctx.informers.cache::<StatefulSet>(sets_resource),
        pods: ctx.informers.cache::<Member>(pods_resource),
        claims: ctx.informers.cache::<CachedClaim>(claims_resource),
        revisions: ctx
            .informers
            .cache::<ControllerRevision>(revisions_resource),
        expectations: Expectations::default(),
        recorder: Recorder::new(ctx.client.clone(), COMPONENT, ctx.clock),
        ctx,
    });
    let c = Arc::downgrade(&controller);
    let pod_changed = move |key: &Key, pod: Option<&Member>| {
        let (c, pod) = (c.upgrade()?, pod?);
        c.observe(key, pod.pod.deleting);
        Some(ObjectKey(set_of(pod)))
    };
    let c = Arc::downgrade(&controller);
    let pod_gone = move |key: &Key, pod: &Member| {
        c.upgrade()?.observe(key, true);
        Some(ObjectKey(set_of(pod)))
    };
    // Claims: their retention references, and a stale claim whose collection unblocks a pod.
    let claim = |key: &Key, claim: &CachedClaim| -> Vec<ObjectKey> {
        sets_of_claim(key, claim)
            .into_iter()
            .map(ObjectKey)
            .collect()
    };
    let claim_changed = move |key: &Key, c: Option<&CachedClaim>| match c {
        Some(c) => claim(key, c),
        None => Vec::new(),
    };
    let c = &controller;
    kgc_runtime::Controller::new(&c.ctx, NAME, &c.sets)
        .watches(&c.pods, pod_changed)
        .watches_deletions(&c.pods, pod_gone)
        .watches(&c.claims, claim_changed)
        .watches_deletions(&c.claims, claim)
        .owns(&c.revisions, |r: &ControllerRevision| {
            controller_named(&r.0.metadata, "StatefulSet")
        })
        .run_with(WORKERS, Arc::clone(c), |c, key: ObjectKey| async move {
            c.sync(&key.0).await
        })
        .await;
}

/// A revision's template (upstream `ApplyRevision`: the data replaces the set's template).
fn template_of(r: &TypedCr) -> Option<PodTemplateSpec> {
    let mut t = r.data.0["spec"]["template"].clone();
    t.as_object_mut()?.remove("$patch");
    serde_json::from_value(t).ok()
}

/// The current and update revisions of a sync.
struct Revisions {
    current: TypedCr,
    update: TypedCr,
    collision_count: i32,
    /// Every revision the set controls.
    all: Vec<TypedCr>,
}

impl<C: Cluster> Controller<C> {
    /// The cache has seen a pod (or its deletion): the expectation for it is met.
    fn observe(&self, pod: &Key, deleting: bool) {
        self.expectations.creation_observed(pod);
        if deleting {
            self.expectations.deletion_observed(pod);
        }
        if self.expectations.satisfied(pod) {
            self.expectations.forget(pod);
        }
    }

    fn pods_api(&self, ns: &str) -> Api<TypedPod> {
        Api::namespaced(self.ctx.client.clone(), ns)
    }

    fn claims_api(&self, ns: &str) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.ctx.client.clone(), ns)
    }

    /// Upstream `sync` and `UpdateStatefulSet`.
    async fn sync(&self, key: &Key) -> Result<Option<Duration>> {
        let Some(set) = self.sets.get(key).map(|t| t.0) else {
            return Ok(None);
        };
        let selector = match matcher(Some(&set.spec.selector)) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(controller = NAME, statefulset = %describe(key), error = %e, "not syncing");
                return Ok(None);
            }
        };
        let owner = Owner {
            api_version: "apps/v1".into(),
            kind: "StatefulSet".into(),
            name: key.1.clone(),
            uid: set.metadata.uid.clone().unwrap_or_default(),
            deleting: set.metadata.deletion_timestamp.is_some(),
        };
        let pods = self.claim(&owner, selector.as_ref(), key).await?;
        let revisions = self.revisions(&set, &owner, selector.as_ref(), key).await?;
        let (current, update) = (
            revisions.current.metadata.name.clone().unwrap_or_default(),
            revisions.update.metadata.name.clone().unwrap_or_default(),
        );
        let now = self.ctx.clock.now();
        let settled = pods
            .iter()
            .map(|m| m.pod.name.clone())
            .chain(ordinals(&set).map(|o| identity::pod_name(&key.1, o)))
            .all(|name| self.expectations.satisfied(&(key.0.clone(), name)));
        let actions = if settled {
            self.claims.read(|cached| {
                let lookup =
                    |name: &str| cached.get(&(key.0.clone(), name.to_owned())).map(|c| &c.0);
                plan(&Inputs {
                    set: &set,
                    pods: &pods,
                    update_revision: &update,
                    claim: &lookup,
                    now,
                })
            })
        } else {
            Vec::new()
        };
        let failure = self.apply(&set, &revisions, actions).await.err();

        let st = status::status(
            &set,
            &pods,
            &current,
            &update,
            revisions.collision_count,
            now,
        );
        if set.status.as_ref() != Some(&st) {
            crate::patch_status(
                &Api::<Typed>::namespaced(self.ctx.client.clone(), &key.0),
                &key.1,
                &st,
            )
            .await?;
        }
        self.truncate_history(&set, &pods, &revisions, key).await?;
        if let Some(e) = failure {
            return Err(e);
        }
        let min_ready = set.spec.min_ready_seconds.unwrap_or(0);
        Ok(
            (min_ready > 0 && st.ready_replicas != st.available_replicas)
                .then(|| Duration::from_secs(min_ready.unsigned_abs().into())),
        )
    }

    /// Upstream `getPodsForStatefulSet`: the members of the set (by name) it controls or
    /// adopts, in ordinal order.
    async fn claim(
        &self,
        owner: &Owner,
        selector: Option<&LabelSelector>,
        key: &Key,
    ) -> Result<Vec<Member>> {
        let candidates: Vec<Member> = self.pods.read(|pods| {
            pods.values()
                .filter(|m| m.pod.namespace == key.0 && m.is_member_of(&key.1))
                .cloned()
                .collect()
        });
        let mut claimed = claim_all(
            &self.pods_api(&key.0),
            owner,
            selector,
            candidates,
            |m| (m.pod.name.clone(), m.pod.uid.clone()),
            self.fresh_owner(owner, key),
        )
        .await?;
        claimed.sort_by_key(|m| m.ordinal);
        Ok(claimed)
    }

    /// Upstream `RecheckDeletionTimestamp` for the set.
    async fn fresh_owner(&self, owner: &Owner, key: &Key) -> Result<bool> {
        let api: Api<Typed> = Api::namespaced(self.ctx.client.clone(), &key.0);
        still_owner(&api, &key.1, owner).await
    }

    /// Upstream `getStatefulSetRevisions`: the update revision is the set's template, recorded
    /// (a new revision), found as the latest, or an older one given the next number (a
    /// rollback); the current one is the status's, or the update revision at first.
    async fn revisions(
        &self,
        set: &Typed,
        owner: &Owner,
        selector: Option<&LabelSelector>,
        key: &Key,
    ) -> Result<Revisions> {
        // Upstream `ListRevisions` and `AdoptOrphanRevisions`.
        let candidates: Vec<ControllerRevision> = self.revisions.read(|rs| {
            rs.iter()
                .filter(|(k, _)| k.0 == key.0)
                .map(|(_, r)| r.clone())
                .collect()
        });
        let api: Api<TypedCr> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let mut all: Vec<TypedCr> = claim_all(
            &api,
            owner,
            selector,
            candidates,
            |r| {
                let m = &r.0.metadata;
                (
                    m.name.clone().unwrap_or_default(),
                    m.uid.clone().unwrap_or_default(),
                )
            },
            self.fresh_owner(owner, key),
        )
        .await?
        .into_iter()
        .map(|r| r.0)
        .collect();
        all.sort_by_key(|r| r.revision);
        let mut collision_count = set
            .status
            .as_ref()
            .and_then(|s| s.collision_count)
            .unwrap_or(0);
        let patch = history::patch(&set.spec.template);
        let next = history::next_revision(&all);
        let update = match all.iter().rposition(|r| history::holds(r, &patch)) {
            Some(i) if i + 1 == all.len() => all[i].clone(),
            Some(i) => {
                let name = all[i].metadata.name.clone().unwrap_or_default();
                let bumped = api
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"revision": next})),
                    )
                    .await?;
                all[i] = bumped.clone();
                bumped
            }
            None => {
                let created =
                    history::create(&api, owner, &patch, next, &mut collision_count).await?;
                all.push(created.clone());
                created
            }
        };
        let wanted = set
            .status
            .as_ref()
            .and_then(|s| s.current_revision.as_deref());
        let current = all
            .iter()
            .find(|r| wanted.is_some() && r.metadata.name.as_deref() == wanted)
            .cloned()
            .unwrap_or_else(|| update.clone());
        Ok(Revisions {
            current,
            update,
            collision_count,
            all,
        })
    }

    /// Upstream `truncateHistory`: revisions beyond `revisionHistoryLimit` that neither the
    /// status nor any pod names are deleted, oldest first.
    async fn truncate_history(
        &self,
        set: &Typed,
        pods: &[Member],
        revisions: &Revisions,
        key: &Key,
    ) -> Result<()> {
        let mut live: Vec<&str> = pods.iter().filter_map(Member::revision).collect();
        live.extend(revisions.current.metadata.name.as_deref());
        live.extend(revisions.update.metadata.name.as_deref());
        let limit = set
            .spec
            .revision_history_limit
            .unwrap_or(REVISION_HISTORY_LIMIT);
        let api: Api<TypedCr> = Api::namespaced(self.ctx.client.clone(), &key.0);
        history::truncate(&api, &revisions.all, &live, limit).await
    }

    /// Makes the plan's writes: one at a time for `OrderedReady`; for `Parallel` each step
    /// (replicas, condemned claims, condemned pods, update) in slow-start batches of at most
    /// [`MAX_BATCH_SIZE`] (upstream `runForAll`, `slowStartBatch`). The first failing batch ends
    /// the sync, which the work queue retries after its back-off.
    async fn apply(&self, set: &Typed, revisions: &Revisions, actions: Vec<Action>) -> Result<()> {
        let parallel = set.spec.pod_management_policy.as_deref() == Some("Parallel");
        let range = ordinals(set);
        let step = |a: &Action| match a {
            Action::Create { .. } | Action::Identity(_) => 0,
            Action::Delete {
                why: Why::Finished, ..
            } => 0,
            Action::Claims(m) if range.contains(&m.ordinal) => 0,
            Action::Claims(_) => 1,
            Action::Delete {
                why: Why::ScaleDown,
                ..
            } => 2,
            Action::Delete {
                why: Why::Update, ..
            } => 3,
        };
        // Monotonic (`OrderedReady`): one at a time; burst (`Parallel`): upstream `runForAll`'s
        // slow start, at most MAX_BATCH_SIZE writes at once.
        let max_batch = if parallel { MAX_BATCH_SIZE } else { 1 };
        let mut rest = actions.as_slice();
        while let Some(first) = rest.first() {
            let n = rest.iter().take_while(|a| step(a) == step(first)).count();
            let (group, after) = rest.split_at(n);
            rest = after;
            let outcome = slow_start_batch(group, max_batch, |a| self.act(set, revisions, a)).await;
            if let Some(e) = outcome.error {
                return Err(e);
            }
        }
        Ok(())
    }

    async fn act(&self, set: &Typed, revisions: &Revisions, action: &Action) -> Result<()> {
        match action {
            Action::Create { ordinal, revision } => {
                let r = match revision {
                    Revision::Current => &revisions.current,
                    Revision::Update => &revisions.update,
                };
                self.create_pod(set, r, *ordinal).await
            }
            Action::Delete { pod, .. } => self.delete_pod(set, pod).await,
            Action::Identity(m) => self.fix_identity(set, m).await,
            Action::Claims(m) => {
                if ordinals(set).contains(&m.ordinal) {
                    self.create_claims(set, &m.pod.name, m.ordinal).await?;
                }
                self.update_claims(set, &m.pod.name, &m.pod.uid, m.ordinal)
                    .await
            }
        }
    }

    /// Upstream `recordPodEvent`.
    fn pod_event(&self, set: &Typed, verb: &str, pod: &str, error: Option<&Error>) {
        let set_name = set.metadata.name.as_deref().unwrap_or_default();
        let mut reason = verb.to_owned();
        reason[..1].make_ascii_uppercase();
        match error {
            None => self.recorder.normal(
                reference(set),
                &format!("Successful{reason}"),
                format!("{verb} Pod {pod} in StatefulSet {set_name} successful"),
            ),
            Some(e) => self.recorder.warning(
                reference(set),
                &format!("Failed{reason}"),
                format!("{verb} Pod {pod} in StatefulSet {set_name} failed error: {e}"),
            ),
        }
    }

    /// Upstream `CreateStatefulPod`: the claims first, then the pod, then the claims' owner
    /// references.
    async fn create_pod(&self, set: &Typed, revision: &TypedCr, ordinal: i32) -> Result<()> {
        let ns = set.metadata.namespace.clone().unwrap_or_default();
        let name = identity::pod_name(set.metadata.name.as_deref().unwrap_or_default(), ordinal);
        if let Err(e) = self.create_claims(set, &name, ordinal).await {
            self.pod_event(set, "create", &name, Some(&e));
            return Err(e);
        }
        let template = template_of(revision).unwrap_or_else(|| set.spec.template.clone());
        let owner = Owner {
            api_version: "apps/v1".into(),
            kind: "StatefulSet".into(),
            name: set.metadata.name.clone().unwrap_or_default(),
            uid: set.metadata.uid.clone().unwrap_or_default(),
            deleting: false,
        };
        let pod = new_pod(
            set,
            &template,
            revision.metadata.name.as_deref().unwrap_or_default(),
            &owner,
            ordinal,
        );
        let pod_key = (ns.clone(), name.clone());
        self.expectations.expect(&pod_key, 1, 0);
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        let created = match self.pods_api(&ns).create(&params, &pod).await {
            Ok(p) => p,
            // Upstream sinks AlreadyExists: the cache will show the pod.
            Err(e) => {
                self.expectations.forget(&pod_key);
                let e = Error::from(e);
                if !matches!(&e, Error::Kube(kube::Error::Api(s)) if s.code == 409) {
                    self.pod_event(set, "create", &name, Some(&e));
                }
                return Err(e);
            }
        };
        let uid = created.metadata.uid.unwrap_or_default();
        if let Err(e) = self.update_claims(set, &name, &uid, ordinal).await {
            self.pod_event(set, "update", &name, Some(&e));
            return Err(e);
        }
        self.pod_event(set, "create", &name, None);
        Ok(())
    }

    /// Upstream `DeleteStatefulPod`, guarded by the pod's uid.
    async fn delete_pod(&self, set: &Typed, m: &Member) -> Result<()> {
        let pod_key = (m.pod.namespace.clone(), m.pod.name.clone());
        self.expectations.expect(&pod_key, 0, 1);
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(m.pod.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self
            .pods_api(&m.pod.namespace)
            .delete(&m.pod.name, &params)
            .await
        {
            Ok(_) => {
                self.pod_event(set, "delete", &m.pod.name, None);
                Ok(())
            }
            // Gone already, or replaced: nothing of ours to delete.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {
                self.expectations.forget(&pod_key);
                Ok(())
            }
            Err(e) => {
                self.expectations.forget(&pod_key);
                let e = e.into();
                self.pod_event(set, "delete", &m.pod.name, Some(&e));
                Err(e)
            }
        }
    }

    /// Upstream `UpdateStatefulPod` for the identity: the pod-name and pod-index labels.
    async fn fix_identity(&self, set: &Typed, m: &Member) -> Result<()> {
        let patch = json!({"metadata": {
            "uid": m.pod.uid,
            "labels": {POD_NAME: m.pod.name, POD_INDEX: m.ordinal.to_string()},
        }});
        let result = self
            .pods_api(&m.pod.namespace)
            .patch(
                &m.pod.name,
                &PatchParams::default(),
                &Patch::Strategic(patch),
            )
            .await;
        let error = result.err().map(Error::from);
        self.pod_event(set, "update", &m.pod.name, error.as_ref());
        error.map_or(Ok(()), Err)
    }

    /// Upstream `createPersistentVolumeClaims`: the ordinal's claims the cache lacks; one being
    /// deleted is an error (the pod waits for it to go).
    async fn create_claims(&self, set: &Typed, pod: &str, ordinal: i32) -> Result<()> {
        let ns = set.metadata.namespace.clone().unwrap_or_default();
        let set_name = set.metadata.name.as_deref().unwrap_or_default();
        let api = self.claims_api(&ns);
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        let mut errors = Vec::new();
        for c in claims(set, ordinal) {
            let name = c.metadata.name.clone().unwrap_or_default();
            match self.claims.get(&(ns.clone(), name.clone())) {
                Some(existing) if existing.0.metadata.deletion_timestamp.is_some() => {
                    errors.push(format!("pvc {name} is being deleted"));
                }
                Some(_) => {}
                None => match api.create(&params, &c).await {
                    Ok(_) => self.recorder.normal(
                        reference(set),
                        "SuccessfulCreate",
                        format!("create Claim {name} Pod {pod} in StatefulSet {set_name} success"),
                    ),
                    // Created by an earlier sync the cache has yet to show.
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(e) => {
                        let e = crate::api_message(&e);
                        self.recorder.warning(
                            reference(set),
                            "FailedCreate",
                            format!("create Claim {name} for Pod {pod} in StatefulSet {set_name} failed error: {e}"),
                        );
                        errors.push(format!("failed to create PVC {name}: {e}"));
                    }
                },
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::Invalid(errors.join(", ")))
        }
    }

    /// Upstream `UpdatePodClaimForRetentionPolicy`: each existing claim of the pod gets the
    /// owner references the policy wants (an update guarded by its resourceVersion).
    async fn update_claims(
        &self,
        set: &Typed,
        pod: &str,
        pod_uid: &str,
        ordinal: i32,
    ) -> Result<()> {
        let ns = set.metadata.namespace.clone().unwrap_or_default();
        let api = self.claims_api(&ns);
        let c = retention::Claim {
            policy: retention::Policy::of(set),
            set: retention::Party {
                api_version: "apps/v1",
                kind: "StatefulSet",
                name: set.metadata.name.as_deref().unwrap_or_default(),
                uid: set.metadata.uid.as_deref().unwrap_or_default(),
            },
            pod: retention::Party {
                api_version: "v1",
                kind: "Pod",
                name: pod,
                uid: pod_uid,
            },
            scaled_down: !ordinals(set).contains(&ordinal),
        };
        for name in identity::claim_names(set, ordinal) {
            let Some(mut claim) = self.claims.get(&(ns.clone(), name.clone())).map(|c| c.0) else {
                continue;
            };
            let refs = claim.metadata.owner_references.clone().unwrap_or_default();
            if c.unexpected_controller(&refs) {
                self.recorder.warning(
                    reference(set),
                    "ConflictingController",
                    format!("PersistentVolumeClaim {name} has a conflicting OwnerReference that acts as a manging controller, the retention policy is ignored for this claim"),
                );
            }
            if c.up_to_date(&refs) {
                continue;
            }
            let desired = c.desired(&refs);
            claim.metadata.owner_references = (!desired.is_empty()).then_some(desired);
            api.replace(&name, &PostParams::default(), &claim)
                .await
                .map_err(|e| {
                    Error::Invalid(format!(
                        "could not update claim {name} for delete policy ownerRefs: {e}"
                    ))
                })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revisions_template_is_its_data_without_the_patch_directive() {
        let template: PodTemplateSpec = serde_json::from_value(json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:2"}]},
        }))
        .unwrap();
        let r = TypedCr {
            data: k8s_openapi::apimachinery::pkg::runtime::RawExtension(history::patch(&template)),
            ..TypedCr::default()
        };
        assert_eq!(template_of(&r), Some(template));
    }

    #[test]
    fn claims_wake_the_set_they_or_their_pod_belong_to() {
        let claim: PersistentVolumeClaim = serde_json::from_value(json!({"metadata": {
        "name": "www-web-1",
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "web-1", "uid": "p"},
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "s"},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "x-1", "uid": "c"},
        ]}}))
        .unwrap();
        let key = ("ns".to_owned(), "www-web-1".to_owned());
        assert_eq!(
            sets_of_claim(&key, &kgc_runtime::informer::Typed(claim)),
            [
                ("ns".to_owned(), "web".to_owned()),
                ("ns".to_owned(), "db".to_owned())
            ]
        );
    }
}
