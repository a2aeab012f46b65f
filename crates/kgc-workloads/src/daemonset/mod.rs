//! The DaemonSet controller (`kubernetes/kubernetes pkg/controller/daemon/
//! daemon_controller.go`, `update.go`): one pod on every node the template may run on,
//! pinned there by node affinity on `metadata.name` for the scheduler to bind
//! ([`placement`]); a failed pod deleted and made again, with back-off per node; the template's
//! history kept in ControllerRevisions ([`crate::history`]), pods of older ones replaced by
//! RollingUpdate (or left for the user to delete: OnDelete) ([`update`]), and revisions no pod
//! runs deleted beyond `revisionHistoryLimit`.
//!
//! New nodes get their pod as the node cache reports them; the pods of a deleted node are the
//! pod GC's (upstream leaves them to it too), except ones never bound, deleted here.

pub mod placement;
pub mod update;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{ControllerRevision as TypedCr, DaemonSet as Typed};
use k8s_openapi::api::core::v1::{Pod as TypedPod, PodTemplateSpec};
use kgc_client::Cluster;
use kgc_meta::selector::LabelSelector;
use kgc_runtime::events::{Recorder, reference};
use kgc_runtime::informer::{Cache, Key, describe};
use kgc_runtime::{Context, ObjectKey};
use kgc_scheduler::node::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use self::placement::{REVISION_HASH, daemon_template, judge, node_work, pin_to_node};
use self::update::{OnNode, fenceposts, rolling_update, rolls, status};
use crate::Result;
use crate::controller_ref::{Owner, claim_all, controller_of, still_owner};
use crate::expectations::Expectations;
use crate::history::{self, ControllerRevision, HASH_LABEL};
use crate::pod_control::PodControl;
use crate::pods::Pod;
use crate::replicaset::pod_from_template;
use crate::selector::matcher;

/// The name `--controllers` knows it by (kube-controller-manager's).
pub const NAME: &str = "daemonset";
/// The most pods one sync creates or deletes (upstream `BurstReplicas` of this controller).
pub const BURST_REPLICAS: usize = 250;
/// `--concurrent-daemonset-syncs`.
const WORKERS: usize = 2;
const COMPONENT: &str = "daemonset-controller";
const FIELD_MANAGER: &str = "kgc-daemonset-controller";
/// The annotation the API server keeps a DaemonSet's template generation in (upstream
/// `deprecated.daemonset.template.generation`); without it kgc takes the generation.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";
/// Back-off of a node whose daemon pod keeps failing (upstream `failedPodsBackoff`).
const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(15 * 60);

/// A cached DaemonSet (typed; there are few of them).
pub type DaemonSet = kgc_runtime::informer::Typed<Typed>;

/// The DaemonSet a controller reference names, if it is a DaemonSet's.
fn daemon_set_of(kind: &str, api_version: &str, name: &str) -> Option<String> {
    (kind == "DaemonSet" && api_version.starts_with("apps/")).then(|| name.to_owned())
}

fn owner_of(pod: &Pod) -> Option<Key> {
    let c = pod.controller.as_ref()?;
    daemon_set_of(&c.kind, &c.api_version, &c.name).map(|name| (pod.namespace.clone(), name))
}

fn template_generation(ds: &Typed) -> i64 {
    ds.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(TEMPLATE_GENERATION))
        .and_then(|g| g.parse().ok())
        .or(ds.metadata.generation)
        .unwrap_or(0)
}

/// Per DaemonSet and node: when its failed pod was last deleted, and the delay before the next
/// may be (upstream `failedPodsBackoff`, a `flowcontrol.Backoff`), so a pod that keeps failing
/// is not replaced in a storm.
#[derive(Default)]
struct Backoff(Mutex<HashMap<(Key, String), (Instant, Duration)>>);

impl Backoff {
    /// How long the node's failed pod must wait yet; `None`: it may be deleted now, which
    /// starts the node's back-off or doubles it.
    fn wait(&self, key: &Key, node: &str, now: Instant) -> Option<Duration> {
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let next = match m.get(&(key.clone(), node.to_owned())) {
            Some(&(at, delay)) => {
                let elapsed = now.saturating_duration_since(at);
                if elapsed < delay {
                    return Some(delay - elapsed);
                }
                // Quiet for long: start over (upstream `hasExpired`).
                if elapsed > 2 * BACKOFF_MAX {
                    BACKOFF_INITIAL
                } else {
                    (delay * 2).min(BACKOFF_MAX)
                }
            }
            None => BACKOFF_INITIAL,
        };
        m.insert((key.clone(), node.to_owned()), (now, next));
        None
    }

    fn forget(&self, key: &Key) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(k, _), _| k != key);
    }
}

struct Controller<C> {
    ctx: Context<C>,
    sets: Cache<DaemonSet>,
    pods: Cache<Pod>,
    nodes: Cache<Node>,
    revisions: Cache<ControllerRevision>,
    expectations: Expectations<Key>,
    /// The DaemonSets' pods seen, and whether their deletion was counted (upstream counts a
    /// deletion once the pod has a deletionTimestamp).
    seen: Mutex<HashMap<Key, bool>>,
    backoff: Backoff,
    recorder: Recorder,
}

/// Runs the controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let ds_resource = ctx.informers.resource("apps", "daemonsets").await;
    let cr_resource = ctx.informers.resource("apps", "controllerrevisions").await;
    let pods_resource = ctx.informers.resource("", "pods").await;
    let nodes_resource = ctx.informers.resource("", "nodes").await;
    let controller = Arc::new(Controller {
        sets: ctx.informers.cache::<DaemonSet>(ds_resource),
        revisions: ctx.informers.cache::<ControllerRevision>(cr_resource),
        pods: ctx.informers.cache::<Pod>(pods_resource),
        nodes: ctx.informers.cache::<Node>(nodes_resource),
        expectations: Expectations::default(),
        seen: Mutex::default(),
        backoff: Backoff::default(),
        recorder: Recorder::new(ctx.client.clone(), COMPONENT, ctx.clock),
        ctx,
    });
    // A DaemonSet gone takes its expectations and back-off with it.
    let c = Arc::downgrade(&controller);
    let set_changed = move |key: &Key, ds: Option<&DaemonSet>| {
        if ds.is_none()
            && let Some(c) = c.upgrade()
        {
            c.expectations.forget(key);
            c.backoff.forget(key);
        }
        Some(ObjectKey(key.clone()))
    };
    let c = Arc::downgrade(&controller);
    let pod_changed = move |key: &Key, pod: Option<&Pod>| match (c.upgrade(), pod) {
        (Some(c), Some(pod)) => c.pod_changed(key, pod),
        _ => Vec::new(),
    };
    // Upstream `deletePod`: one deletion observed unless counted when it began.
    let c = Arc::downgrade(&controller);
    let pod_gone = move |key: &Key, pod: &Pod| {
        let (c, owner) = (c.upgrade()?, owner_of(pod)?);
        if c.seen().remove(key) != Some(true) {
            c.expectations.deletion_observed(&owner);
        }
        Some(ObjectKey(owner))
    };
    // A node added, removed or changed: every DaemonSet judges it again (upstream `addNode`,
    // `updateNode` look only at those whose verdict changes; there are few DaemonSets).
    let c = Arc::downgrade(&controller);
    let node_changed = move |_: &Key, _: Option<&Node>| match c.upgrade() {
        Some(c) => c.selected(|_| true),
        None => Vec::new(),
    };
    let c = &controller;
    kgc_runtime::Controller::named(&c.ctx, NAME)
        .watches(&c.sets, set_changed)
        .watches(&c.pods, pod_changed)
        .watches_deletions(&c.pods, pod_gone)
        .watches(&c.nodes, node_changed)
        .owns(&c.revisions, |r: &ControllerRevision| {
            let c = controller_of(&r.0.metadata)?;
            daemon_set_of(&c.kind, &c.api_version, &c.name)
        })
        .run_with(WORKERS, Arc::clone(c), |c, key: ObjectKey| async move {
            c.sync(&key.0).await
        })
        .await;
}

impl<C: Cluster> Controller<C> {
    fn seen(&self) -> std::sync::MutexGuard<'_, HashMap<Key, bool>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn selected(&self, which: impl Fn(&(&Key, &DaemonSet)) -> bool) -> Vec<ObjectKey> {
        self.sets.read(|sets| {
            sets.iter()
                .filter(|e| which(e))
                .map(|e| ObjectKey(e.0.clone()))
                .collect()
        })
    }

    /// Upstream `addPod`/`updatePod`: a new pod fulfils a creation its DaemonSet expected, a
    /// deletion begun a deletion; an orphan wakes the DaemonSets of its namespace that
    /// select it.
    fn pod_changed(&self, key: &Key, pod: &Pod) -> Vec<ObjectKey> {
        let Some(owner) = owner_of(pod) else {
            if !pod.deleting && pod.controller.is_none() {
                return self.selected(|(k, ds)| {
                    k.0 == pod.namespace
                        && matcher(Some(&ds.0.spec.selector))
                            .ok()
                            .flatten()
                            .is_some_and(|s| s.matches(&pod.labels))
                });
            }
            return Vec::new();
        };
        let prev = self.seen().insert(key.clone(), pod.deleting);
        if prev.is_none() && !pod.deleting {
            self.expectations.creation_observed(&owner);
        }
        if pod.deleting && prev != Some(true) {
            self.expectations.deletion_observed(&owner);
        }
        vec![ObjectKey(owner)]
    }

    /// Upstream `syncDaemonSet`.
    async fn sync(&self, key: &Key) -> Result<Option<Duration>> {
        let Some(ds) = self.sets.get(key).map(|t| t.0) else {
            self.expectations.forget(key);
            return Ok(None);
        };
        let selector = match matcher(Some(&ds.spec.selector)) {
            Ok(Some(s)) => s,
            Ok(None) => return Ok(None),
            Err(e) => {
                tracing::warn!(controller = NAME, daemonset = %describe(key), error = %e, "not syncing");
                return Ok(None);
            }
        };
        let owner = Owner {
            api_version: "apps/v1".into(),
            kind: "DaemonSet".into(),
            name: key.1.clone(),
            uid: ds.metadata.uid.clone().unwrap_or_default(),
            deleting: ds.metadata.deletion_timestamp.is_some(),
        };
        // Being deleted: the garbage collector removes its pods and revisions.
        if owner.deleting {
            return Ok(None);
        }
        let (cur, old, collisions) = self.history(&ds, &owner, &selector, key).await?;
        let hash = cur
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HASH_LABEL))
            .cloned()
            .unwrap_or_default();
        let generation = template_generation(&ds);
        let template = daemon_template(&ds.spec.template, generation, &hash);
        let spec = serde_json::to_value(&template.spec).unwrap_or_default();
        let pods = self.claim_pods(&ds, &owner, &selector, key).await?;
        let nodes: Vec<(String, Node)> = self
            .nodes
            .read(|m| m.iter().map(|(k, n)| (k.1.clone(), n.clone())).collect());
        let mut by_node: HashMap<&str, Vec<&Pod>> = HashMap::new();
        for p in &pods {
            by_node.entry(p.target_node.as_str()).or_default().push(p);
        }
        let on_nodes: Vec<OnNode> = nodes
            .iter()
            .map(|(name, node)| OnNode {
                name,
                verdict: judge(&spec, name, node),
                pods: by_node.get(name.as_str()).cloned().unwrap_or_default(),
            })
            .collect();
        let now = self.ctx.clock.now();
        let mut retry = None;
        if self.expectations.satisfied(key) {
            retry = self
                .manage(&ds, key, &owner, &template, &on_nodes, &pods, &hash)
                .await?;
            if self.expectations.satisfied(key) && rolls(&ds) {
                let step = rolling_update(&ds, &on_nodes, &hash, generation, now);
                self.sync_nodes(&ds, key, &owner, &template, &step.delete, &step.create_on)
                    .await?;
            }
        }
        self.cleanup_history(&ds, &old, &pods).await?;
        let mut s = status(&ds, &on_nodes, &hash, generation, now);
        s.collision_count = collisions;
        if ds.status.as_ref() != Some(&s) {
            let api: Api<Typed> = Api::namespaced(self.ctx.client.clone(), &key.0);
            crate::patch_status(&api, &key.1, &s).await?;
        }
        // Pods ready but not yet available: look again when they will be (upstream).
        let min_ready = ds.spec.min_ready_seconds.unwrap_or(0);
        if min_ready > 0 && s.number_ready != s.number_available.unwrap_or(0) {
            let wait = Duration::from_secs(min_ready.unsigned_abs().into());
            retry = Some(retry.map_or(wait, |r: Duration| r.min(wait)));
        }
        Ok(retry)
    }

    /// Upstream `constructHistory`: the revision of the current template (made, or renumbered
    /// above the others when it is an old one come back), the others, and the collision count.
    async fn history(
        &self,
        ds: &Typed,
        owner: &Owner,
        selector: &LabelSelector,
        key: &Key,
    ) -> Result<(TypedCr, Vec<TypedCr>, Option<i32>)> {
        let api: Api<TypedCr> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let candidates: Vec<ControllerRevision> = self.revisions.read(|m| {
            m.iter()
                .filter(|(k, _)| k.0 == key.0)
                .map(|(_, r)| r.clone())
                .collect()
        });
        let revisions = claim_all(
            &api,
            owner,
            Some(selector),
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
        .await?;
        let patch = history::patch(&ds.spec.template);
        let (mut current, mut old): (Vec<TypedCr>, Vec<TypedCr>) = revisions
            .into_iter()
            .map(|r| r.0)
            .partition(|r| history::holds(r, &patch));
        let next = history::next_revision(&old);
        let mut collisions = ds.status.as_ref().and_then(|s| s.collision_count);
        // Duplicates of the current one (upstream `dedupCurHistories`) are old ones now.
        current.sort_by_key(|r| r.revision);
        let cur = match current.pop() {
            None => {
                let mut count = collisions.unwrap_or(0);
                let made = history::create(&api, owner, &patch, next, &mut count).await?;
                if count != collisions.unwrap_or(0) {
                    collisions = Some(count);
                }
                made
            }
            Some(r) if r.revision.unwrap_or(0) < next => {
                api.patch(
                    r.metadata.name.as_deref().unwrap_or_default(),
                    &PatchParams::default(),
                    &Patch::Merge(json!({"revision": next})),
                )
                .await?
            }
            Some(r) => r,
        };
        old.append(&mut current);
        Ok((cur, old, collisions))
    }

    /// Whether the owner, read afresh, is still the one claiming and not being deleted.
    async fn fresh_owner(&self, owner: &Owner, key: &Key) -> Result<bool> {
        let api: Api<Typed> = Api::namespaced(self.ctx.client.clone(), &key.0);
        still_owner(&api, &key.1, owner).await
    }

    /// Upstream `getDaemonPods`: the pods of the namespace it controls or may adopt.
    async fn claim_pods(
        &self,
        ds: &Typed,
        owner: &Owner,
        selector: &LabelSelector,
        key: &Key,
    ) -> Result<Vec<Pod>> {
        let uid = ds.metadata.uid.as_deref().unwrap_or_default();
        let candidates: Vec<Pod> = self.pods.read(|m| {
            m.iter()
                .filter(|(k, p)| k.0 == key.0 && p.controller.as_ref().is_none_or(|c| c.uid == uid))
                .map(|(_, p)| p.clone())
                .collect()
        });
        let api: Api<TypedPod> = Api::namespaced(self.ctx.client.clone(), &key.0);
        claim_all(
            &api,
            owner,
            Some(selector),
            candidates,
            |p| (p.name.clone(), p.uid.clone()),
            self.fresh_owner(owner, key),
        )
        .await
    }

    /// Upstream `manage`: a pod for each node that needs one, none where none may stay, one
    /// at most per node (two while surging), failed ones replaced after the node's back-off;
    /// the back-off left, if a failed pod waits for it.
    #[allow(clippy::too_many_arguments)]
    async fn manage(
        &self,
        ds: &Typed,
        key: &Key,
        owner: &Owner,
        template: &PodTemplateSpec,
        on_nodes: &[OnNode<'_>],
        pods: &[Pod],
        hash: &str,
    ) -> Result<Option<Duration>> {
        let desired = on_nodes.iter().filter(|n| n.verdict.should_run).count();
        // Upstream `AllowsSurge`: only a RollingUpdate surges.
        let surge = rolls(ds) && fenceposts(ds, i32::try_from(desired).unwrap_or(i32::MAX)).0 > 0;
        let generation = template_generation(ds);
        let (mut create, mut delete, mut retry) = (Vec::new(), Vec::new(), None);
        for n in on_nodes {
            let work = node_work(n.verdict, &n.pods, surge, hash, generation);
            if work.create {
                create.push(n.name.to_owned());
            }
            delete.extend(work.delete);
            for p in work.failed {
                if let Some(wait) = self.backoff.wait(key, n.name, Instant::now()) {
                    retry = Some(retry.map_or(wait, |r: Duration| r.min(wait)));
                    continue;
                }
                self.recorder.warning(
                    reference(ds),
                    "FailedDaemonPod",
                    format!(
                        "Found failed daemon pod {}/{} on node {}, will try to kill it",
                        p.namespace, p.name, n.name
                    ),
                );
                delete.push(p);
            }
        }
        // Never bound, and its node is gone (upstream `getUnscheduledPodsWithoutNode`).
        let names: HashSet<&str> = on_nodes.iter().map(|n| n.name).collect();
        delete.extend(pods.iter().filter(|p| {
            !p.deleting && p.node_name.is_empty() && !names.contains(p.target_node.as_str())
        }));
        self.sync_nodes(ds, key, owner, template, &delete, &create)
            .await?;
        Ok(retry)
    }

    /// Upstream `syncNodes`: deletes `delete` and creates a pod pinned to each node of
    /// `create`, at most `BURST_REPLICAS` of each, creations in slow-start batches so a
    /// template the API refuses fails once; writes not made are no longer expected.
    async fn sync_nodes(
        &self,
        ds: &Typed,
        key: &Key,
        owner: &Owner,
        template: &PodTemplateSpec,
        delete: &[&Pod],
        create: &[String],
    ) -> Result<()> {
        let create = &create[..create.len().min(BURST_REPLICAS)];
        let delete = &delete[..delete.len().min(BURST_REPLICAS)];
        if create.is_empty() && delete.is_empty() {
            return Ok(());
        }
        self.expectations.expect(key, create.len(), delete.len());
        let api: Api<TypedPod> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        let pods: Vec<TypedPod> = create
            .iter()
            .map(|node| {
                let mut t = template.clone();
                pin_to_node(&mut t, node);
                pod_from_template(&t, &key.0, owner)
            })
            .collect();
        let control = PodControl {
            api: &api,
            params: &params,
            expectations: &self.expectations,
            key,
            recorder: &self.recorder,
            involved: &reference(ds),
        };
        let (_, created) = control.create(&pods).await;
        let victims: Vec<(&str, &str)> = delete
            .iter()
            .map(|p| (p.name.as_str(), p.uid.as_str()))
            .collect();
        let deleted = control.delete(&victims).await;
        match deleted.or(created) {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Upstream `cleanupHistory`: old revisions no pod runs, beyond `revisionHistoryLimit`
    /// (default 10), deleted oldest first, each guarded by its uid.
    async fn cleanup_history(&self, ds: &Typed, old: &[TypedCr], pods: &[Pod]) -> Result<()> {
        let parent = ds.metadata.name.as_deref().unwrap_or_default();
        let live: Vec<String> = pods
            .iter()
            .filter_map(|p| p.labels.get(REVISION_HASH))
            .map(|h| history::name(parent, h))
            .collect();
        let live: Vec<&str> = live.iter().map(String::as_str).collect();
        let limit = ds.spec.revision_history_limit.unwrap_or(10);
        let api: Api<TypedCr> = Api::namespaced(
            self.ctx.client.clone(),
            ds.metadata.namespace.as_deref().unwrap_or_default(),
        );
        history::truncate(&api, old, &live, limit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_node_backs_off_doubling() {
        let b = Backoff::default();
        let key = ("ns".to_owned(), "ds".to_owned());
        let t0 = Instant::now();
        assert_eq!(b.wait(&key, "n1", t0), None);
        let s = Duration::from_secs;
        assert_eq!(
            b.wait(&key, "n1", t0 + Duration::from_millis(400)),
            Some(Duration::from_millis(600))
        );
        assert_eq!(b.wait(&key, "n2", t0), None, "per node");
        assert_eq!(b.wait(&key, "n1", t0 + s(1)), None);
        assert_eq!(b.wait(&key, "n1", t0 + s(2)), Some(s(1)));
        assert_eq!(b.wait(&key, "n1", t0 + s(3)), None);
        assert_eq!(b.wait(&key, "n1", t0 + s(4)), Some(s(3)));
        b.forget(&key);
        assert_eq!(b.wait(&key, "n1", t0 + s(4)), None);
    }
}
