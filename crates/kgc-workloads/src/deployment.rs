//! The Deployment controller (`kubernetes/kubernetes pkg/controller/deployment`): one
//! ReplicaSet per pod template, named with the template's hash, rolled out by the strategy
//! (RollingUpdate within maxSurge/maxUnavailable, or Recreate), its revision recorded in
//! annotations, and — the garbage collection this controller does itself — old ReplicaSets
//! with no replicas beyond `revisionHistoryLimit` deleted, oldest revision first
//! (`sync.go`, `cleanupDeployment`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{
    Deployment as Typed, DeploymentCondition, DeploymentStatus, ReplicaSet as TypedRs,
    ReplicaSetSpec,
};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kgc_client::Cluster;
use kgc_controllers::Context;
use kgc_controllers::events::{Recorder, reference};
use kgc_meta::selector::LabelSelector;
use kgc_runtime::informer::{Cache, Key, describe};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::{Value, json};

use crate::controller_ref::{Child, Claim, Owner, claim};
use crate::replicaset::ReplicaSet;
use crate::selector::matcher;
use crate::{Error, Result};

/// The name `--controllers` knows it by (kube-controller-manager's).
pub const NAME: &str = "deployment";
/// The revision of a ReplicaSet, and of its Deployment (upstream `RevisionAnnotation`).
pub const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// The label that tells the ReplicaSets of one Deployment apart (upstream
/// `DefaultDeploymentUniqueLabelKey`).
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// `--concurrent-deployment-syncs`.
const WORKERS: usize = 5;
const COMPONENT: &str = "deployment-controller";

/// A cached Deployment (typed; there are few of them).
pub type Deployment = kgc_runtime::informer::Typed<Typed>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct DKey(Key);

impl fmt::Display for DKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&describe(&self.0))
    }
}

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

fn percent(s: &str, total: i32, round_up: bool) -> i32 {
    let p: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
    let v = p * i64::from(total);
    let r = if round_up { (v + 99) / 100 } else { v / 100 };
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

/// Runs the controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let d_resource = ctx.informers.resource("apps", "deployments").await;
    let rs_resource = ctx.informers.resource("apps", "replicasets").await;
    let queue = ctx.queue::<DKey>(NAME);
    let controller = Arc::new(Controller {
        deployments: ctx.informers.cache::<Deployment>(d_resource),
        sets: ctx.informers.cache::<ReplicaSet>(rs_resource),
        recorder: Recorder::new(ctx.client.clone(), COMPONENT, ctx.clock),
        ctx,
    });
    let q = queue.clone();
    controller
        .deployments
        .on_change(Arc::new(move |key: &Key, _: Option<&Deployment>| {
            q.add(DKey(key.clone()));
        }));
    let (q, c) = (queue.clone(), Arc::downgrade(&controller));
    controller
        .sets
        .on_change(Arc::new(move |key: &Key, rs: Option<&ReplicaSet>| {
            if let (Some(rs), Some(c)) = (rs, c.upgrade()) {
                c.replica_set_changed(key, rs, &q);
            }
        }));
    let q = queue.clone();
    controller
        .sets
        .on_delete(Arc::new(move |key: &Key, rs: &ReplicaSet| {
            if let Some(owner) = deployment_of(rs) {
                q.add(DKey((key.0.clone(), owner)));
            }
        }));
    controller.deployments.synced().await;
    controller.sets.synced().await;
    tracing::info!(controller = NAME, "started");
    let sync = move |key: DKey| {
        let c = Arc::clone(&controller);
        async move { c.sync(&key.0).await }
    };
    kgc_controllers::work(NAME, queue, WORKERS, sync).await;
}

/// The Deployment a ReplicaSet's controller reference names.
fn deployment_of(rs: &ReplicaSet) -> Option<String> {
    rs.0.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true) && r.kind == "Deployment")
        .map(|r| r.name.clone())
}

impl<C: Cluster> Controller<C> {
    /// Upstream `addReplicaSet`/`updateReplicaSet`: the owner looks again; an orphan wakes the
    /// Deployments of its namespace that select it.
    fn replica_set_changed(
        &self,
        key: &Key,
        rs: &ReplicaSet,
        queue: &kgc_runtime::queue::WorkQueue<DKey>,
    ) {
        if let Some(owner) = deployment_of(rs) {
            queue.add(DKey((key.0.clone(), owner)));
            return;
        }
        if rs.controller_uid().is_some() {
            return;
        }
        self.deployments.read(|ds| {
            for (k, d) in ds {
                if k.0 == key.0
                    && matcher(Some(&d.0.spec.selector))
                        .ok()
                        .flatten()
                        .is_some_and(|s| !s.is_empty() && s.matches(rs.labels()))
                {
                    queue.add(DKey(k.clone()));
                }
            }
        });
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
        if owner.deleting {
            return self.sync_status(&d, &sets, None).await.map(|_| None);
        }
        let new = self.new_replica_set(&d, &owner, &mut sets).await?;
        let paused = d.spec.paused == Some(true);
        if !paused {
            let recreate =
                d.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("Recreate");
            if recreate {
                self.recreate(&d, &new, &sets).await?;
            } else {
                self.rolling(&d, &new, &sets).await?;
            }
        }
        let complete = self.sync_status(&d, &sets, Some(&new)).await?;
        if complete || paused {
            self.cleanup(&d, &new, &sets).await?;
        }
        Ok(None)
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
        let api = self.rs_api(&key.0);
        let mut claimed = Vec::new();
        for rs in candidates {
            let name = rs.0.metadata.name.clone().unwrap_or_default();
            let uid = rs.0.metadata.uid.clone().unwrap_or_default();
            let patch = match claim(owner, Some(selector), &rs) {
                Claim::Keep => {
                    claimed.push(rs.0.clone());
                    continue;
                }
                Claim::Ignore => continue,
                Claim::Release => owner.release_patch(&uid),
                Claim::Adopt => owner.adopt_patch(&uid),
            };
            let adopting = patch["metadata"]["ownerReferences"][0]["controller"] == true;
            match api
                .patch(&name, &PatchParams::default(), &Patch::Strategic(patch))
                .await
            {
                Ok(rs) if adopting => claimed.push(rs),
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
        }
        claimed.sort_by_key(|rs| rs.metadata.creation_timestamp.as_ref().map(|t| t.0));
        Ok(claimed)
    }

    /// The ReplicaSet of the current template (upstream `getNewReplicaSet`): found (its
    /// revision raised above the others' when it was an old one: a rollback), or created.
    async fn new_replica_set(
        &self,
        d: &Typed,
        owner: &Owner,
        sets: &mut Vec<TypedRs>,
    ) -> Result<TypedRs> {
        let ns = d.metadata.namespace.clone().unwrap_or_default();
        let wanted = without_hash(&d.spec.template);
        let max_old = sets
            .iter()
            .filter(|rs| without_hash(&rs.spec.template.clone().unwrap_or_default()) != wanted)
            .map(revision)
            .max()
            .unwrap_or(0);
        let (surge, _) = fenceposts(d);
        let want = d.spec.replicas.unwrap_or(1);
        let annotations = |rev: i64| {
            json!({
                REVISION: rev.to_string(),
                DESIRED_REPLICAS: want.to_string(),
                MAX_REPLICAS: (want + surge).to_string(),
            })
        };
        if let Some(i) = sets.iter().position(|rs| {
            rs.spec
                .template
                .as_ref()
                .is_some_and(|t| without_hash(t) == wanted)
        }) {
            let rs = &sets[i];
            if revision(rs) <= max_old {
                let patched = self
                    .rs_api(&ns)
                    .patch(
                        rs.metadata.name.as_deref().unwrap_or_default(),
                        &PatchParams::default(),
                        &Patch::Merge(
                            json!({"metadata": {"annotations": annotations(max_old + 1)}}),
                        ),
                    )
                    .await?;
                sets[i] = patched;
            }
            let rev = revision(&sets[i]);
            self.record_revision(d, rev).await?;
            return Ok(sets[i].clone());
        }
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
                annotations: serde_json::from_value(annotations(rev)).ok(),
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
                self.recorder.normal(
                    reference(d),
                    "ScalingReplicaSet",
                    format!(
                        "Scaled up replica set {} from 0 to {initial}",
                        created.metadata.name.as_deref().unwrap_or_default()
                    ),
                );
                self.record_revision(d, rev).await?;
                sets.push(created.clone());
                Ok(created)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
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
        if from == to {
            return Ok(());
        }
        let (surge, _) = fenceposts(d);
        let want = d.spec.replicas.unwrap_or(1);
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
        let olds: Vec<&TypedRs> = sets
            .iter()
            .filter(|rs| rs.metadata.uid != new.metadata.uid)
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
        if scaled_down || running {
            return Ok(());
        }
        self.scale(d, new, d.spec.replicas.unwrap_or(1)).await
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

    /// Upstream `syncRolloutStatus`: the counts and the Available and Progressing conditions;
    /// whether the rollout is complete.
    async fn sync_status(
        &self,
        d: &Typed,
        sets: &[TypedRs],
        new: Option<&TypedRs>,
    ) -> Result<bool> {
        let want = d.spec.replicas.unwrap_or(1);
        let (_, unavailable) = fenceposts(d);
        let sum = |f: &dyn Fn(&TypedRs) -> i32| sets.iter().map(f).sum::<i32>();
        let total = sum(&|rs| rs.status.as_ref().map_or(0, |s| s.replicas));
        let ready = sum(&|rs| {
            rs.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0)
        });
        let avail = sum(&available);
        let updated = new
            .and_then(|rs| rs.status.as_ref())
            .map_or(0, |s| s.replicas);
        let now = Time(self.ctx.clock.now());
        let mut conditions: Vec<DeploymentCondition> = d
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let mut set = |type_: &str, status: &str, reason: &str, message: String| match conditions
            .iter_mut()
            .find(|c| c.type_.as_deref() == Some(type_))
        {
            Some(c)
                if c.status.as_deref() == Some(status) && c.reason.as_deref() == Some(reason) =>
            {
                c.message = Some(message);
            }
            Some(c) => {
                let transition = if c.status.as_deref() == Some(status) {
                    c.last_transition_time.clone()
                } else {
                    Some(now.clone())
                };
                *c = DeploymentCondition {
                    type_: Some(type_.into()),
                    status: Some(status.into()),
                    reason: Some(reason.into()),
                    message: Some(message),
                    last_update_time: Some(now.clone()),
                    last_transition_time: transition,
                };
            }
            None => conditions.push(DeploymentCondition {
                type_: Some(type_.into()),
                status: Some(status.into()),
                reason: Some(reason.into()),
                message: Some(message),
                last_update_time: Some(now.clone()),
                last_transition_time: Some(now.clone()),
            }),
        };
        if avail >= want - unavailable {
            set(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.".into(),
            );
        } else {
            set(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.".into(),
            );
        }
        let new_name = new
            .and_then(|rs| rs.metadata.name.clone())
            .unwrap_or_default();
        let complete = new.is_some_and(|rs| {
            updated == want && total == want && avail >= want && replicas(rs) == want
        });
        if d.spec.paused == Some(true) {
            set(
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused".into(),
            );
        } else if complete {
            set(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                format!("ReplicaSet \"{new_name}\" has successfully progressed."),
            );
        } else if new.is_some() {
            set(
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                format!("ReplicaSet \"{new_name}\" is progressing."),
            );
        }
        let status = DeploymentStatus {
            observed_generation: d.metadata.generation,
            replicas: Some(total),
            updated_replicas: Some(updated),
            ready_replicas: Some(ready),
            available_replicas: Some(avail),
            unavailable_replicas: Some((want - avail).max(0)),
            conditions: Some(conditions),
            collision_count: d.status.as_ref().and_then(|s| s.collision_count),
            terminating_replicas: d.status.as_ref().and_then(|s| s.terminating_replicas),
        };
        if d.status.as_ref() != Some(&status) {
            let api: Api<Typed> = Api::namespaced(
                self.ctx.client.clone(),
                d.metadata.namespace.as_deref().unwrap_or_default(),
            );
            crate::patch_status(
                &api,
                d.metadata.name.as_deref().unwrap_or_default(),
                &status,
            )
            .await?;
        }
        Ok(complete)
    }
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
