//! The Deployment controller (`kubernetes/kubernetes pkg/controller/deployment`): one
//! ReplicaSet per pod template, named with the template's hash, rolled out by the strategy
//! (RollingUpdate within maxSurge/maxUnavailable, or Recreate), its revision recorded in
//! annotations, and — the garbage collection this controller does itself — old ReplicaSets
//! with no replicas beyond `revisionHistoryLimit` deleted, oldest revision first
//! (`sync.go`, `cleanupDeployment`). A resize mid-rollout is shared in proportion
//! ([`proportion`]); the Progressing condition times out after `progressDeadlineSeconds`
//! ([`progress`]). `kubectl rollout undo` is client-side: it writes an old ReplicaSet's template
//! and annotations into the Deployment, whose ReplicaSet then becomes the new one again, its
//! earlier revisions kept in `deployment.kubernetes.io/revision-history`.

mod progress;
mod proportion;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{
    Deployment as Typed, DeploymentStatus, ReplicaSet as TypedRs, ReplicaSetSpec,
};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kgc_client::Cluster;
use kgc_meta::selector::LabelSelector;
use kgc_runtime::events::{Recorder, reference};
use kgc_runtime::informer::{Cache, Key, describe};
use kgc_runtime::{Context, ObjectKey};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::{Value, json};

use crate::controller_ref::{Child, Owner, claim_all, controller_named, still_owner};
use crate::replicaset::ReplicaSet;
use crate::selector::matcher;
use crate::{Error, Result};

/// The name `--controllers` knows it by (kube-controller-manager's).
pub const NAME: &str = "deployment";
/// The revision of a ReplicaSet, and of its Deployment (upstream `RevisionAnnotation`).
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// The earlier revisions of a ReplicaSet rolled back to (upstream `RevisionHistoryAnnotation`).
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// Upstream `MaxRevHistoryLengthInChars`.
const MAX_REVISION_HISTORY_CHARS: usize = 2000;
/// The Deployment's annotations not copied to its ReplicaSets (upstream `annotationsToSkip`):
/// every other one (`kubernetes.io/change-cause` among them) is, which is how
/// `kubectl rollout history` shows a revision's change cause.
const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];
/// The label that tells the ReplicaSets of one Deployment apart (upstream
/// `DefaultDeploymentUniqueLabelKey`).
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// `--concurrent-deployment-syncs`.
const WORKERS: usize = 5;
const COMPONENT: &str = "deployment-controller";

/// A cached Deployment (typed; there are few of them).
pub type Deployment = kgc_runtime::informer::Typed<Typed>;

/// Upstream `controller.ComputeHash`: FNV-32a of the template and the collision count, written
/// with `rand.SafeEncodeString`'s alphabet. Upstream hashes the Go struct's printed form; kgc
/// hashes the template's JSON, so names differ from a real cluster's but are as stable.
pub fn template_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let data = serde_json::to_string(template).unwrap_or_default();
    let probe = collision_count.map(i32::to_le_bytes);
    crate::history::safe_hash(&[data.as_bytes(), probe.as_ref().map_or(&[], |p| &p[..])])
}

/// The template without the hash label, as ReplicaSets are compared with their Deployment
/// (upstream `EqualIgnoreHash`).
fn without_hash(t: &PodTemplateSpec) -> Value {
    let mut v = serde_json::to_value(t).unwrap_or_default();
    if let Some(labels) = v["metadata"]["labels"].as_object_mut() {
        labels.remove(POD_TEMPLATE_HASH);
        if labels.is_empty() {
            v["metadata"].as_object_mut().map(|m| m.remove("labels"));
        }
    }
    v
}

fn revision(rs: &TypedRs) -> i64 {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION))
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn replicas(rs: &TypedRs) -> i32 {
    rs.spec.replicas.unwrap_or(0)
}

fn available(rs: &TypedRs) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
}

/// An int-or-percent of `total`, rounded up or down (upstream
/// `intstr.GetScaledValueFromIntOrPercent`).
pub(crate) fn scaled(v: Option<&IntOrString>, default: &str, total: i32, round_up: bool) -> i32 {
    match v {
        Some(IntOrString::Int(i)) => *i,
        Some(IntOrString::String(s)) => percent(s, total, round_up),
        None => percent(default, total, round_up),
    }
}

/// A percentage of `total` (validation admits no other string; anything else counts as 0).
fn percent(s: &str, total: i32, round_up: bool) -> i32 {
    let r = kgc_meta::intstr::scaled_percent(s, i64::from(total), round_up).unwrap_or(0);
    i32::try_from(r).unwrap_or(i32::MAX)
}

/// maxSurge rounded up, maxUnavailable down; both 0 means 1 unavailable (upstream
/// `ResolveFenceposts`).
pub fn fenceposts(d: &Typed) -> (i32, i32) {
    let want = d.spec.replicas.unwrap_or(1);
    let rolling = d
        .spec
        .strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref());
    if d.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("Recreate") {
        return (0, want);
    }
    let surge = scaled(
        rolling.and_then(|r| r.max_surge.as_ref()),
        "25%",
        want,
        true,
    );
    let unavailable = scaled(
        rolling.and_then(|r| r.max_unavailable.as_ref()),
        "25%",
        want,
        false,
    );
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable)
    }
}

struct Controller<C> {
    ctx: Context<C>,
    deployments: Cache<Deployment>,
    sets: Cache<ReplicaSet>,
    recorder: Recorder,
}

/// Runs the controller until dropped: upstream's handlers (`addDeployment`, `addReplicaSet`,
/// `updateReplicaSet`, `deleteReplicaSet`) as one declaration.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let d_resource = ctx.informers.resource("apps", "deployments").await;
    let rs_resource = ctx.informers.resource("apps", "replicasets").await;
    let controller = Arc::new(Controller {
        deployments: ctx.informers.cache::<Deployment>(d_resource),
        sets: ctx.informers.cache::<ReplicaSet>(rs_resource),
        recorder: Recorder::new(ctx.client.clone(), COMPONENT, ctx.clock),
        ctx,
    });
    let c = Arc::downgrade(&controller);
    let orphans = move |key: &Key, rs: Option<&ReplicaSet>| match (rs, c.upgrade()) {
        (Some(rs), Some(c)) => c.selecting(key, rs),
        _ => Vec::new(),
    };
    let c = &controller;
    kgc_runtime::Controller::new(&c.ctx, NAME, &c.deployments)
        .owns(&c.sets, deployment_of)
        .watches(&c.sets, orphans)
        .run_with(WORKERS, Arc::clone(c), |c, key: ObjectKey| async move {
            c.sync(&key.0).await
        })
        .await;
}

/// The Deployment a ReplicaSet's controller reference names.
fn deployment_of(rs: &ReplicaSet) -> Option<String> {
    controller_named(&rs.0.metadata, "Deployment")
}

impl<C: Cluster> Controller<C> {
    /// Upstream `addReplicaSet`/`updateReplicaSet` of an orphan (its owner, if a Deployment,
    /// looks again through [`deployment_of`]): the Deployments of its namespace that select it.
    fn selecting(&self, key: &Key, rs: &ReplicaSet) -> Vec<ObjectKey> {
        if rs.controller_uid().is_some() {
            return Vec::new();
        }
        self.deployments.read(|ds| {
            ds.iter()
                .filter(|(k, d)| {
                    k.0 == key.0
                        && matcher(Some(&d.0.spec.selector))
                            .ok()
                            .flatten()
                            .is_some_and(|s| !s.is_empty() && s.matches(rs.labels()))
                })
                .map(|(k, _)| ObjectKey(k.clone()))
                .collect()
        })
    }

    fn rs_api(&self, ns: &str) -> Api<TypedRs> {
        Api::namespaced(self.ctx.client.clone(), ns)
    }

    /// Upstream `syncDeployment`.
    async fn sync(&self, key: &Key) -> Result<Option<Duration>> {
        let Some(d) = self.deployments.get(key).map(|t| t.0) else {
            return Ok(None);
        };
        let selector = match matcher(Some(&d.spec.selector)) {
            Ok(Some(s)) if !s.is_empty() => s,
            Ok(_) => {
                self.recorder.warning(
                    reference(&d),
                    "SelectingAll",
                    "This deployment is selecting all pods. A non-empty selector is required."
                        .to_owned(),
                );
                return Ok(None);
            }
            Err(e) => {
                tracing::warn!(controller = NAME, deployment = %describe(key), error = %e, "not syncing");
                return Ok(None);
            }
        };
        let owner = Owner {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: key.1.clone(),
            uid: d.metadata.uid.clone().unwrap_or_default(),
            deleting: d.metadata.deletion_timestamp.is_some(),
        };
        let mut sets = self.claim(&owner, &selector, key).await?;
        let observed = d.status.clone().unwrap_or_default();
        let now = self.ctx.clock.now();
        let mut d = d;
        if owner.deleting {
            let new = self.find_new(&mut d, &mut sets).await?;
            let status = progress::calculate(&d, &sets, new.as_ref(), now);
            return self.write_status(&d, &observed, status).await.map(|_| None);
        }
        progress::check_paused(&mut d, now);
        let paused = d.spec.paused == Some(true);
        let found = self.find_new(&mut d, &mut sets).await?;
        // Upstream `sync`: paused, or resized, the ReplicaSets are scaled in proportion and no
        // new one is made.
        if paused || proportion::is_scaling_event(&d, &sets) {
            let new = found
                .as_ref()
                .and_then(|n| sets.iter().position(|rs| rs.metadata.uid == n.metadata.uid));
            for (i, to) in proportion::plan(&d, &sets, new) {
                self.scale(&d, &sets[i], to).await?;
            }
            if paused && let Some(new) = &found {
                self.cleanup(&d, new, &sets).await?;
            }
            let status = progress::calculate(&d, &sets, found.as_ref(), now);
            return self.write_status(&d, &observed, status).await.map(|_| None);
        }
        let recreate =
            d.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("Recreate");
        // Upstream `rolloutRecreate` makes a missing new ReplicaSet only once the old pods are
        // gone (`getAllReplicaSetsAndSyncRevision(…, false)` until then), so that old and new
        // pods never run together.
        if recreate && found.is_none() && !self.scale_down_old(&d, None, &sets).await? {
            let status = progress::rollout(&d, &observed, &sets, None, now);
            let recheck = progress::recheck(&d, &observed, &status, now);
            self.write_status(&d, &observed, status).await?;
            return Ok(recheck);
        }
        let new = match found {
            Some(new) => new,
            None => self.create_new(&mut d, &owner, &mut sets).await?,
        };
        if recreate {
            self.recreate(&d, &new, &sets).await?;
        } else {
            self.rolling(&d, &new, &sets).await?;
        }
        let status = progress::rollout(&d, &observed, &sets, Some(&new), now);
        if progress::complete(&d, &status) {
            self.cleanup(&d, &new, &sets).await?;
        }
        let recheck = progress::recheck(&d, &observed, &status, now);
        self.write_status(&d, &observed, status).await?;
        Ok(recheck)
    }

    /// Claims the ReplicaSets of the namespace (upstream `getReplicaSetsForDeployment`).
    async fn claim(
        &self,
        owner: &Owner,
        selector: &LabelSelector,
        key: &Key,
    ) -> Result<Vec<TypedRs>> {
        let candidates: Vec<ReplicaSet> = self.sets.read(|sets| {
            sets.iter()
                .filter(|(k, _)| k.0 == key.0)
                .map(|(_, rs)| rs.clone())
                .collect()
        });
        let deployments: Api<Typed> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let mut claimed: Vec<TypedRs> = claim_all(
            &self.rs_api(&key.0),
            owner,
            Some(selector),
            candidates,
            |rs| {
                let m = &rs.0.metadata;
                (
                    m.name.clone().unwrap_or_default(),
                    m.uid.clone().unwrap_or_default(),
                )
            },
            still_owner(&deployments, &key.1, owner),
        )
        .await?
        .into_iter()
        .map(|rs| rs.0)
        .collect();
        claimed.sort_by_key(|rs| rs.metadata.creation_timestamp.as_ref().map(|t| t.0));
        Ok(claimed)
    }

    /// The ReplicaSet of the current template, if there is one (upstream `getNewReplicaSet`
    /// for an existing one): its annotations brought up to date (the Deployment's copied, its
    /// revision raised above the others' when it was an old one: a rollback), and the
    /// Deployment's revision set to its.
    async fn find_new(&self, d: &mut Typed, sets: &mut [TypedRs]) -> Result<Option<TypedRs>> {
        let wanted = without_hash(&d.spec.template);
        let max_old = sets
            .iter()
            .filter(|rs| without_hash(&rs.spec.template.clone().unwrap_or_default()) != wanted)
            .map(revision)
            .max()
            .unwrap_or(0);
        let Some(i) = sets.iter().position(|rs| {
            rs.spec
                .template
                .as_ref()
                .is_some_and(|t| without_hash(t) == wanted)
        }) else {
            return Ok(None);
        };
        let rs = &sets[i];
        let annotations = new_annotations(d, rs, max_old + 1);
        let min_ready = d.spec.min_ready_seconds.unwrap_or(0);
        if !annotations.is_empty() || rs.spec.min_ready_seconds.unwrap_or(0) != min_ready {
            let patch = json!({
                "metadata": {"annotations": annotations},
                "spec": {"minReadySeconds": min_ready},
            });
            sets[i] = self
                .rs_api(rs.metadata.namespace.as_deref().unwrap_or_default())
                .patch(
                    rs.metadata.name.as_deref().unwrap_or_default(),
                    &PatchParams::default(),
                    &Patch::Merge(patch),
                )
                .await?;
        }
        let rs = sets[i].clone();
        self.record_revision(d, revision(&rs)).await?;
        let conditions = d.status.as_ref().and_then(|s| s.conditions.as_deref());
        if progress::has_deadline(d)
            && conditions
                .and_then(|c| progress::condition(c, progress::PROGRESSING))
                .is_none()
        {
            let name = rs.metadata.name.clone().unwrap_or_default();
            let c = progress::new_condition(
                progress::PROGRESSING,
                "True",
                progress::FOUND_NEW_RS,
                format!("Found new replica set {name:?}"),
                self.ctx.clock.now(),
            );
            progress::set_condition(progress::conditions_mut(d), c);
        }
        Ok(Some(rs))
    }

    /// Creates the ReplicaSet of the current template (upstream `getNewReplicaSet`), named
    /// with its hash, of the next revision, sized within the surge.
    async fn create_new(
        &self,
        d: &mut Typed,
        owner: &Owner,
        sets: &mut Vec<TypedRs>,
    ) -> Result<TypedRs> {
        let ns = d.metadata.namespace.clone().unwrap_or_default();
        let max_old = sets.iter().map(revision).max().unwrap_or(0);
        let (surge, _) = fenceposts(d);
        let want = d.spec.replicas.unwrap_or(1);
        let collision = d.status.as_ref().and_then(|s| s.collision_count);
        let hash = template_hash(&d.spec.template, collision);
        let mut template = d.spec.template.clone();
        let mut meta = template.metadata.clone().unwrap_or_default();
        meta.labels
            .get_or_insert_with(BTreeMap::new)
            .insert(POD_TEMPLATE_HASH.into(), hash.clone());
        template.metadata = Some(meta.clone());
        let mut selector = d.spec.selector.clone();
        selector
            .match_labels
            .get_or_insert_with(BTreeMap::new)
            .insert(POD_TEMPLATE_HASH.into(), hash.clone());
        let active: i32 = sets.iter().map(replicas).sum();
        // Upstream `NewRSNewReplicas`: Recreate starts at full size; RollingUpdate within the
        // surge.
        let initial =
            if d.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("Recreate") {
                want
            } else {
                (want + surge - active).clamp(0, want)
            };
        let rev = max_old + 1;
        let rs = TypedRs {
            metadata: ObjectMeta {
                name: Some(format!("{}-{hash}", owner.name)),
                namespace: Some(ns.clone()),
                labels: meta.labels.clone(),
                annotations: Some(created_annotations(d, rev, want, want + surge)),
                owner_references: Some(vec![owner.controller_ref()]),
                ..ObjectMeta::default()
            },
            spec: ReplicaSetSpec {
                replicas: Some(initial),
                min_ready_seconds: d.spec.min_ready_seconds,
                selector,
                template: Some(template),
            },
            status: None,
        };
        match self.rs_api(&ns).create(&PostParams::default(), &rs).await {
            Ok(created) => {
                let name = created.metadata.name.clone().unwrap_or_default();
                if initial > 0 {
                    self.recorder.normal(
                        reference(&*d),
                        "ScalingReplicaSet",
                        format!("Scaled up replica set {name} from 0 to {initial}"),
                    );
                }
                self.record_revision(d, rev).await?;
                if progress::has_deadline(d) {
                    let c = progress::new_condition(
                        progress::PROGRESSING,
                        "True",
                        progress::NEW_RS_CREATED,
                        format!("Created new replica set {name:?}"),
                        self.ctx.clock.now(),
                    );
                    progress::set_condition(progress::conditions_mut(d), c);
                }
                sets.push(created.clone());
                Ok(created)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                // Ours, of this template, and the cache had not seen it yet: the new one.
                let name = format!("{}-{hash}", owner.name);
                if let Some(rs) = self.rs_api(&ns).get_opt(&name).await?
                    && kgc_runtime::informer::Typed(rs.clone()).controller_uid()
                        == Some(owner.uid.as_str())
                    && rs
                        .spec
                        .template
                        .as_ref()
                        .is_some_and(|t| without_hash(t) == without_hash(&d.spec.template))
                {
                    sets.push(rs.clone());
                    return Ok(rs);
                }
                // A ReplicaSet of that name with another template: count the collision so the
                // next hash differs (upstream `CollisionCount`).
                let count = collision.unwrap_or(0) + 1;
                let api: Api<Typed> = Api::namespaced(self.ctx.client.clone(), &ns);
                api.patch_status(
                    &owner.name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"collisionCount": count}})),
                )
                .await?;
                Err(Error::Invalid(format!(
                    "replica set {}-{hash} already exists with another template; collisionCount is now {count}",
                    owner.name
                )))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Sets the Deployment's revision annotation to its new ReplicaSet's.
    async fn record_revision(&self, d: &Typed, rev: i64) -> Result<()> {
        let current = d
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION));
        if current.map(String::as_str) == Some(rev.to_string().as_str()) {
            return Ok(());
        }
        let api: Api<Typed> = Api::namespaced(
            self.ctx.client.clone(),
            d.metadata.namespace.as_deref().unwrap_or_default(),
        );
        api.patch(
            d.metadata.name.as_deref().unwrap_or_default(),
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {REVISION: rev.to_string()}}})),
        )
        .await?;
        Ok(())
    }

    async fn scale(&self, d: &Typed, rs: &TypedRs, to: i32) -> Result<()> {
        let from = replicas(rs);
        let (surge, _) = fenceposts(d);
        let want = d.spec.replicas.unwrap_or(1);
        let annotated = |k: &str| {
            rs.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(k))
                .cloned()
        };
        // Upstream `scaleReplicaSet`: the replica annotations are kept up to date even when the
        // size stays, or a resize would look like a scaling event forever.
        if from == to
            && annotated(DESIRED_REPLICAS) == Some(want.to_string())
            && annotated(MAX_REPLICAS) == Some((want + surge).to_string())
        {
            return Ok(());
        }
        let name = rs.metadata.name.clone().unwrap_or_default();
        self.rs_api(rs.metadata.namespace.as_deref().unwrap_or_default())
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({
                    "metadata": {"annotations": {DESIRED_REPLICAS: want.to_string(), MAX_REPLICAS: (want + surge).to_string()}},
                    "spec": {"replicas": to},
                })),
            )
            .await?;
        if from == to {
            return Ok(());
        }
        let verb = if to > from { "up" } else { "down" };
        self.recorder.normal(
            reference(d),
            "ScalingReplicaSet",
            format!("Scaled {verb} replica set {name} from {from} to {to}"),
        );
        Ok(())
    }

    /// Upstream `rolloutRolling`: the new ReplicaSet up within maxSurge, the old ones down
    /// while availability stays above `replicas - maxUnavailable`.
    async fn rolling(&self, d: &Typed, new: &TypedRs, sets: &[TypedRs]) -> Result<()> {
        let want = d.spec.replicas.unwrap_or(1);
        let (surge, unavailable) = fenceposts(d);
        let olds: Vec<&TypedRs> = sets
            .iter()
            .filter(|rs| rs.metadata.uid != new.metadata.uid)
            .collect();
        let all: i32 = sets.iter().map(replicas).sum();
        // reconcileNewReplicaSet
        let new_replicas = replicas(new);
        if new_replicas > want {
            self.scale(d, new, want).await?;
        } else if new_replicas < want && all < want + surge {
            let up = (want + surge - all).min(want - new_replicas);
            self.scale(d, new, new_replicas + up).await?;
        }
        // reconcileOldReplicaSets
        let old_total: i32 = olds.iter().map(|rs| replicas(rs)).sum();
        if old_total == 0 {
            return Ok(());
        }
        let min_available = want - unavailable;
        let new_unavailable = replicas(new) - available(new);
        let max_scaled_down = all - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(());
        }
        // cleanupUnhealthyReplicas, then scaleDownOldReplicaSetsForRollingUpdate (oldest first).
        let mut budget = max_scaled_down;
        let mut after: Vec<(&TypedRs, i32)> = Vec::new();
        for rs in &olds {
            let r = replicas(rs);
            let unhealthy = (r - available(rs)).min(budget).max(0);
            budget -= unhealthy;
            after.push((rs, r - unhealthy));
        }
        let available_all: i32 = sets.iter().map(available).sum();
        let mut down = (available_all - min_available).max(0);
        for (_, r) in &mut after {
            let cut = (*r).min(down);
            *r -= cut;
            down -= cut;
        }
        for (rs, r) in after {
            self.scale(d, rs, r).await?;
        }
        Ok(())
    }

    /// Upstream `rolloutRecreate`: every old ReplicaSet to 0, and once their pods are gone the
    /// new one to full size.
    async fn recreate(&self, d: &Typed, new: &TypedRs, sets: &[TypedRs]) -> Result<()> {
        if !self.scale_down_old(d, Some(new), sets).await? {
            return Ok(());
        }
        self.scale(d, new, d.spec.replicas.unwrap_or(1)).await
    }

    /// Upstream `scaleDownOldReplicaSetsForRecreate` and `oldPodsRunning`: every ReplicaSet
    /// but `new` to 0; whether their pods are gone (none was scaled down now, none reports a
    /// pod).
    async fn scale_down_old(
        &self,
        d: &Typed,
        new: Option<&TypedRs>,
        sets: &[TypedRs],
    ) -> Result<bool> {
        let olds: Vec<&TypedRs> = sets
            .iter()
            .filter(|rs| new.is_none_or(|n| rs.metadata.uid != n.metadata.uid))
            .collect();
        let mut scaled_down = false;
        for rs in &olds {
            if replicas(rs) > 0 {
                self.scale(d, rs, 0).await?;
                scaled_down = true;
            }
        }
        let running = olds
            .iter()
            .any(|rs| rs.status.as_ref().is_some_and(|s| s.replicas > 0));
        Ok(!scaled_down && !running)
    }

    /// Upstream `cleanupDeployment`: old ReplicaSets with no replicas, beyond
    /// `revisionHistoryLimit` (default 10), deleted oldest revision first, each guarded by its
    /// uid.
    async fn cleanup(&self, d: &Typed, new: &TypedRs, sets: &[TypedRs]) -> Result<()> {
        let limit = usize::try_from(d.spec.revision_history_limit.unwrap_or(10)).unwrap_or(0);
        let mut idle: Vec<&TypedRs> = sets
            .iter()
            .filter(|rs| {
                rs.metadata.uid != new.metadata.uid
                    && replicas(rs) == 0
                    && rs.status.as_ref().is_none_or(|s| s.replicas == 0)
                    && rs.metadata.deletion_timestamp.is_none()
                    && rs.metadata.generation
                        == rs.status.as_ref().and_then(|s| s.observed_generation)
            })
            .collect();
        if idle.len() <= limit {
            return Ok(());
        }
        idle.sort_by_key(|rs| revision(rs));
        let excess = idle.len() - limit;
        for rs in idle.into_iter().take(excess) {
            let name = rs.metadata.name.clone().unwrap_or_default();
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: rs.metadata.uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match self
                .rs_api(rs.metadata.namespace.as_deref().unwrap_or_default())
                .delete(&name, &params)
                .await
            {
                Ok(_) => {
                    tracing::info!(controller = NAME, replicaset = %name, "deleted an old replica set beyond revisionHistoryLimit")
                }
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Writes the status a sync computed, if it is not the one the cache last saw.
    async fn write_status(
        &self,
        d: &Typed,
        observed: &DeploymentStatus,
        status: DeploymentStatus,
    ) -> Result<()> {
        if *observed == status {
            return Ok(());
        }
        let api: Api<Typed> = Api::namespaced(
            self.ctx.client.clone(),
            d.metadata.namespace.as_deref().unwrap_or_default(),
        );
        crate::patch_status(
            &api,
            d.metadata.name.as_deref().unwrap_or_default(),
            &status,
        )
        .await
    }
}

/// The Deployment's annotations its ReplicaSets copy (upstream
/// `copyDeploymentAnnotationsToReplicaSet`).
fn copied_annotations(d: &Typed) -> impl Iterator<Item = (&String, &String)> {
    d.metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| !NOT_COPIED.contains(&k.as_str()))
}

/// The annotations a new ReplicaSet is created with (upstream `SetNewReplicaSetAnnotations`).
fn created_annotations(d: &Typed, rev: i64, desired: i32, max: i32) -> BTreeMap<String, String> {
    copied_annotations(d)
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain([
            (REVISION.to_owned(), rev.to_string()),
            (DESIRED_REPLICAS.to_owned(), desired.to_string()),
            (MAX_REPLICAS.to_owned(), max.to_string()),
        ])
        .collect()
}

/// The annotations an existing new ReplicaSet lacks (upstream `SetNewReplicaSetAnnotations`
/// for one that exists): the Deployment's copied ones, and `rev` if its revision is lower, the
/// revision it had then appended to its revision history (the oldest dropped beyond
/// `MAX_REVISION_HISTORY_CHARS`).
fn new_annotations(d: &Typed, rs: &TypedRs, rev: i64) -> BTreeMap<String, String> {
    let current = rs.metadata.annotations.clone().unwrap_or_default();
    let mut out: BTreeMap<String, String> = copied_annotations(d)
        .filter(|(k, v)| current.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let old = current.get(REVISION);
    let old_rev: i64 = old.and_then(|r| r.parse().ok()).unwrap_or(0);
    if old_rev < rev {
        out.insert(REVISION.to_owned(), rev.to_string());
        if let Some(old) = old {
            let history = current.get(REVISION_HISTORY).map_or("", String::as_str);
            let mut revisions: Vec<&str> = history.split(',').filter(|r| !r.is_empty()).collect();
            revisions.push(old);
            while revisions.join(",").len() > MAX_REVISION_HISTORY_CHARS && revisions.len() > 1 {
                revisions.remove(0);
            }
            out.insert(REVISION_HISTORY.to_owned(), revisions.join(","));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(replicas: i32, surge: Option<&str>, unavailable: Option<&str>) -> Typed {
        serde_json::from_value(json!({
            "metadata": {"name": "d"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "a"}},
                "template": {"metadata": {"labels": {"app": "a"}}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {
                    "maxSurge": surge, "maxUnavailable": unavailable}},
            }
        }))
        .unwrap()
    }

    #[test]
    fn fenceposts_round_surge_up_and_unavailability_down() {
        assert_eq!(fenceposts(&deployment(10, None, None)), (3, 2));
        assert_eq!(fenceposts(&deployment(3, Some("0%"), Some("0%"))), (0, 1));
        assert_eq!(fenceposts(&deployment(4, Some("50%"), Some("50%"))), (2, 2));
    }

    #[test]
    fn the_hash_depends_on_the_template_and_the_collision_count_only() {
        let d = deployment(1, None, None);
        let h = template_hash(&d.spec.template, None);
        assert_eq!(h, template_hash(&d.spec.template, None));
        assert_ne!(h, template_hash(&d.spec.template, Some(1)));
        assert!(
            h.bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)),
            "{h}"
        );
        let mut labelled = d.spec.template.clone();
        labelled
            .metadata
            .as_mut()
            .unwrap()
            .labels
            .as_mut()
            .unwrap()
            .insert(POD_TEMPLATE_HASH.into(), h.clone());
        assert_eq!(without_hash(&labelled), without_hash(&d.spec.template));
    }
}
