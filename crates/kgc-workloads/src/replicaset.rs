//! The ReplicaSet controller (`kubernetes/kubernetes pkg/controller/replicaset/
//! replica_set.go`): keeps `spec.replicas` active pods per ReplicaSet, created from its template
//! with a controller reference to it, claimed with [`controller_ref`](crate::controller_ref),
//! guarded by [`expectations`](crate::expectations), created in slow-start batches and at most
//! `BURST_REPLICAS` per sync, deleted in upstream's order, and reports the status upstream
//! reports.
//!
//! ReplicationControllers run through the same controller as upstream's does
//! (`pkg/controller/replication/replication_controller.go`): see [`Kind`] and
//! [`replicationcontroller`](crate::replicationcontroller).
//!
//! Where upstream lists every pod of the namespace on each sync, the controller keeps an index
//! of the pods each ReplicaSet controls and of the namespace's orphans, kept by the pod cache's
//! handlers: a sync reads its own pods, however many pods the namespace holds.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ReplicaSet as Typed, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{ObjectReference, Pod as TypedPod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kgc_client::Cluster;
use kgc_meta::selector::LabelSelector;
use kgc_runtime::events::{Recorder, reference};
use kgc_runtime::informer::{Cache, Key, describe};
use kgc_runtime::{Context, ObjectKey};
use kube::api::{Api, PostParams};
use kube::core::NamespaceResourceScope;

use crate::controller_ref::{Owner, claim_all, still_owner};
use crate::expectations::Expectations;
use crate::pod_control::PodControl;
use crate::pods::{Pod, to_delete};
use crate::selector::{matcher, matches};
use crate::{Error, Result};

/// The name `--controllers` knows it by (kube-controller-manager's).
pub const NAME: &str = "replicaset";
/// The most pods one sync creates or deletes (upstream `BurstReplicas`).
pub const BURST_REPLICAS: usize = 500;
/// `--concurrent-replicaset-syncs` (and `--concurrent-rc-syncs`).
const WORKERS: usize = 5;

/// A cached ReplicaSet (typed; there are few of them).
pub type ReplicaSet = kgc_runtime::informer::Typed<Typed>;

/// A kind of object this controller keeps pods for. Upstream runs the ReplicaSet controller over
/// ReplicationControllers by converting each to a ReplicaSet on the way in and its status back
/// on the way out (`pkg/controller/replication/conversion.go`); so does kgc: the controller
/// reads every object as [`as_replica_set`](Kind::as_replica_set) shows it, and writes only the
/// pods, the object's status (the same JSON for both kinds) and events naming the object.
pub trait Kind:
    kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + fmt::Debug
    + serde::de::DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The controller's name (kube-controller-manager's).
    const NAME: &'static str;
    /// The component its events are recorded under.
    const COMPONENT: &'static str;
    /// The field manager of the pods it creates.
    const FIELD_MANAGER: &'static str;
    /// The object as the ReplicaSet the controller keeps.
    fn as_replica_set(&self) -> Typed;
}

impl Kind for Typed {
    const NAME: &'static str = NAME;
    const COMPONENT: &'static str = "replicaset-controller";
    const FIELD_MANAGER: &'static str = "kgc-replicaset-controller";
    fn as_replica_set(&self) -> Typed {
        self.clone()
    }
}

/// Which pods each ReplicaSet controls, and the orphans of each namespace.
#[derive(Default)]
struct Index {
    /// Pod → the ReplicaSet (namespace, name) its controller reference names; `None`: orphan.
    owner_of: HashMap<Key, Option<Key>>,
    controlled: HashMap<Key, HashSet<Key>>,
    orphans: HashMap<String, HashSet<Key>>,
    /// Pods whose deletion has been counted: upstream counts a deletion once the pod has a
    /// deletionTimestamp, not when its graceful termination is over.
    deleting: HashSet<Key>,
}

impl Index {
    /// Records `pod`'s owner; whether the pod was not known before.
    fn set(&mut self, pod: &Key, owner: Option<Key>) -> (bool, Option<Option<Key>>) {
        let prev = self.owner_of.insert(pod.clone(), owner.clone());
        if let Some(p) = &prev {
            if *p == owner {
                return (false, prev);
            }
            self.unlink(pod, p);
        }
        match &owner {
            Some(o) => self
                .controlled
                .entry(o.clone())
                .or_default()
                .insert(pod.clone()),
            None => self
                .orphans
                .entry(pod.0.clone())
                .or_default()
                .insert(pod.clone()),
        };
        (prev.is_none(), prev)
    }

    fn unlink(&mut self, pod: &Key, owner: &Option<Key>) {
        let set = match owner {
            Some(o) => self.controlled.get_mut(o),
            None => self.orphans.get_mut(&pod.0),
        };
        if let Some(s) = set {
            s.remove(pod);
        }
    }

    fn remove(&mut self, pod: &Key) -> Option<Option<Key>> {
        let prev = self.owner_of.remove(pod)?;
        self.unlink(pod, &prev);
        Some(prev)
    }
}

/// The object of kind `K` a pod's controller reference names, if any.
fn owner_key<K: Kind>(pod: &Pod) -> Option<Key> {
    pod.controller
        .as_ref()
        .filter(|c| {
            let group = c.api_version.rsplit_once('/').map_or("", |(g, _)| g);
            c.kind == K::kind(&()) && group == K::group(&())
        })
        .map(|c| (pod.namespace.clone(), c.name.clone()))
}

struct Controller<K, C> {
    ctx: Context<C>,
    sets: Cache<kgc_runtime::informer::Typed<K>>,
    pods: Cache<Pod>,
    index: Mutex<Index>,
    expectations: Expectations<Key>,
    recorder: Recorder,
}

/// Runs the controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    run_for::<Typed, C>(ctx).await;
}

/// Runs the controller over the objects of kind `K` until dropped.
pub(crate) async fn run_for<K: Kind, C: Cluster>(ctx: Context<C>) {
    let sets_resource = ctx
        .informers
        .resource(&K::group(&()), &K::plural(&()))
        .await;
    let pods_resource = ctx.informers.resource("", "pods").await;
    let controller = Arc::new(Controller::<K, C> {
        sets: ctx.informers.cache(sets_resource),
        pods: ctx.informers.cache::<Pod>(pods_resource),
        index: Mutex::default(),
        expectations: Expectations::default(),
        recorder: Recorder::new(ctx.client.clone(), K::COMPONENT, ctx.clock),
        ctx,
    });
    // Upstream `addReplicaSet`/`updateReplicaSet`/`deleteReplicaSet`: the set looks again; a
    // deleted one's expectations go with it.
    let c = Arc::downgrade(&controller);
    let set_changed = move |key: &Key, rs: Option<&kgc_runtime::informer::Typed<K>>| {
        if rs.is_none()
            && let Some(c) = c.upgrade()
        {
            c.expectations.forget(key);
        }
        Some(ObjectKey(key.clone()))
    };
    let c = Arc::downgrade(&controller);
    let pod_changed = move |key: &Key, pod: Option<&Pod>| match (c.upgrade(), pod) {
        (Some(c), Some(pod)) => c.pod_changed(key, pod),
        _ => Vec::new(),
    };
    let c = Arc::downgrade(&controller);
    let pod_gone = move |key: &Key, _: &Pod| c.upgrade().and_then(|c| c.pod_gone(key));
    let c = &controller;
    kgc_runtime::Controller::named(&c.ctx, K::NAME)
        .watches(&c.sets, set_changed)
        .watches(&c.pods, pod_changed)
        .watches_deletions(&c.pods, pod_gone)
        .run_with(WORKERS, Arc::clone(c), |c, key: ObjectKey| async move {
            c.sync(&key.0).await
        })
        .await;
}

impl<K: Kind, C: Cluster> Controller<K, C> {
    fn index(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Upstream `addPod`/`updatePod`: the pod's owner (old and new) looks again; a new pod
    /// fulfils a creation its owner expected; an orphan wakes every ReplicaSet of its
    /// namespace that selects it, which may adopt it.
    fn pod_changed(&self, key: &Key, pod: &Pod) -> Vec<ObjectKey> {
        let mut wake = Vec::new();
        let owner = owner_key::<K>(pod);
        let (new, prev) = self.index().set(key, owner.clone());
        if let Some(Some(old)) = prev
            && Some(&old) != owner.as_ref()
        {
            wake.push(ObjectKey(old));
        }
        match owner {
            Some(o) => {
                if new && !pod.deleting {
                    self.expectations.creation_observed(&o);
                }
                if pod.deleting && self.index().deleting.insert(key.clone()) {
                    self.expectations.deletion_observed(&o);
                }
                wake.push(ObjectKey(o));
            }
            None if pod.deleting => {}
            None => self.sets.read(|sets| {
                for (k, rs) in sets {
                    if k.0 == pod.namespace
                        && matcher(Some(&rs.0.as_replica_set().spec.selector))
                            .ok()
                            .flatten()
                            .is_some_and(|s| s.matches(&pod.labels))
                    {
                        wake.push(ObjectKey(k.clone()));
                    }
                }
            }),
        }
        wake
    }

    /// Upstream `deletePod`: the owner sees one expected deletion fulfilled, unless it was
    /// counted when the pod's graceful deletion began.
    fn pod_gone(&self, key: &Key) -> Option<ObjectKey> {
        let (owner, counted) = {
            let mut index = self.index();
            (index.remove(key), index.deleting.remove(key))
        };
        let owner = owner.flatten()?;
        if !counted {
            self.expectations.deletion_observed(&owner);
        }
        Some(ObjectKey(owner))
    }

    /// The pods a ReplicaSet may claim: those whose controller reference names it, and the
    /// orphans of its namespace.
    fn candidates(&self, key: &Key) -> Vec<Pod> {
        let keys: Vec<Key> = {
            let index = self.index();
            index
                .controlled
                .get(key)
                .into_iter()
                .flatten()
                .chain(index.orphans.get(&key.0).into_iter().flatten())
                .cloned()
                .collect()
        };
        self.pods
            .read(|pods| keys.iter().filter_map(|k| pods.get(k).cloned()).collect())
    }

    /// Upstream `syncReplicaSet`.
    async fn sync(&self, key: &Key) -> Result<Option<Duration>> {
        let Some(object) = self.sets.get(key).map(|t| t.0) else {
            self.expectations.forget(key);
            return Ok(None);
        };
        let rs = object.as_replica_set();
        let spec = &rs.spec;
        let selector = match matcher(Some(&spec.selector)) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(controller = K::NAME, object = %describe(key), error = %e, "not syncing");
                return Ok(None);
            }
        };
        let owner = Owner {
            api_version: K::api_version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            name: key.1.clone(),
            uid: rs.metadata.uid.clone().unwrap_or_default(),
            deleting: rs.metadata.deletion_timestamp.is_some(),
        };
        let satisfied = self.expectations.satisfied(key);
        let claimed = self.claim(&owner, selector.as_ref(), key).await?;
        let active: Vec<&Pod> = claimed.iter().filter(|p| p.is_active()).collect();
        let mut failure = None;
        if satisfied && !owner.deleting {
            failure = self.manage(&rs, &reference(&object), &owner, &active).await;
        }
        let template_labels = spec
            .template
            .as_ref()
            .and_then(|t| t.metadata.as_ref())
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        let status = status(&rs, &active, &template_labels, failure.as_ref(), &self.ctx);
        if rs.status.as_ref() != Some(&status) {
            let api: Api<K> = Api::namespaced(self.ctx.client.clone(), &key.0);
            crate::patch_status(&api, &key.1, &status).await?;
        }
        if let Some(e) = failure {
            return Err(e);
        }
        let replicas = spec.replicas.unwrap_or(1);
        // Pods ready but not yet available: look again when they will be (upstream).
        Ok((spec.min_ready_seconds.unwrap_or(0) > 0
            && status.ready_replicas.unwrap_or(0) == replicas
            && status.available_replicas.unwrap_or(0) != replicas)
            .then(|| {
                Duration::from_secs(spec.min_ready_seconds.unwrap_or(0).unsigned_abs().into())
            }))
    }

    /// Claims the candidates (upstream `claimPods`): the pods kept or adopted.
    async fn claim(
        &self,
        owner: &Owner,
        selector: Option<&LabelSelector>,
        key: &Key,
    ) -> Result<Vec<Pod>> {
        let api: Api<TypedPod> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let owners: Api<K> = Api::namespaced(self.ctx.client.clone(), &key.0);
        claim_all(
            &api,
            owner,
            selector,
            self.candidates(key),
            |p| (p.name.clone(), p.uid.clone()),
            still_owner(&owners, &key.1, owner),
        )
        .await
    }

    /// Upstream `manageReplicas`: creates or deletes pods towards `spec.replicas`; the error
    /// to report, if any write failed.
    async fn manage(
        &self,
        rs: &Typed,
        object: &ObjectReference,
        owner: &Owner,
        active: &[&Pod],
    ) -> Option<Error> {
        let key = (
            rs.metadata.namespace.clone().unwrap_or_default(),
            owner.name.clone(),
        );
        let want = usize::try_from(rs.spec.replicas.unwrap_or(1)).unwrap_or(0);
        if active.len() < want {
            let n = (want - active.len()).min(BURST_REPLICAS);
            self.expectations.expect(&key, n, 0);
            let template = rs.spec.template.clone().unwrap_or_default();
            let pod = pod_from_template(&template, &key.0, owner);
            return self.create_pods(object, &key, pod, n).await;
        }
        if active.len() > want {
            let n = (active.len() - want).min(BURST_REPLICAS);
            let victims = to_delete(active, active, n);
            self.expectations.expect(&key, 0, victims.len());
            return self.delete_pods(object, &key, &victims).await;
        }
        None
    }

    /// Creates `n` pods in slow-start batches (1, 2, 4, …: upstream `slowStartBatch`), so a
    /// template the API refuses fails once, not `n` times. Creations not made are no longer
    /// expected.
    async fn create_pods(
        &self,
        object: &ObjectReference,
        key: &Key,
        pod: TypedPod,
        n: usize,
    ) -> Option<Error> {
        let api: Api<TypedPod> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let params = PostParams {
            field_manager: Some(K::FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        let control = PodControl {
            api: &api,
            params: &params,
            expectations: &self.expectations,
            key,
            recorder: &self.recorder,
            involved: object,
        };
        let (_, error) = control.create(&vec![pod; n]).await;
        error.map(Error::from)
    }

    /// Deletes the chosen pods, each guarded by its uid.
    async fn delete_pods(
        &self,
        object: &ObjectReference,
        key: &Key,
        victims: &[&Pod],
    ) -> Option<Error> {
        let api: Api<TypedPod> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let params = PostParams::default();
        let control = PodControl {
            api: &api,
            params: &params,
            expectations: &self.expectations,
            key,
            recorder: &self.recorder,
            involved: object,
        };
        let victims: Vec<(&str, &str)> = victims
            .iter()
            .map(|p| (p.name.as_str(), p.uid.as_str()))
            .collect();
        control.delete(&victims).await.map(Error::from)
    }
}

/// Upstream `GetPodFromTemplate`: the template's labels, annotations, finalizers and spec, a
/// name generated from the owner's, and the controller reference.
pub fn pod_from_template(template: &PodTemplateSpec, namespace: &str, owner: &Owner) -> TypedPod {
    let meta = template.metadata.clone().unwrap_or_default();
    TypedPod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", owner.name)),
            namespace: Some(namespace.to_owned()),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![owner.controller_ref()]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// Upstream `calculateStatus`.
fn status<C>(
    rs: &Typed,
    active: &[&Pod],
    template_labels: &BTreeMap<String, String>,
    failure: Option<&Error>,
    ctx: &Context<C>,
) -> ReplicaSetStatus {
    let now = ctx.clock.now();
    let min_ready = rs.spec.min_ready_seconds.map_or(0, i64::from);
    let template = LabelSelector::parse(
        &template_labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
    )
    .ok();
    let count = |f: &dyn Fn(&Pod) -> bool| {
        i32::try_from(active.iter().filter(|p| f(p)).count()).unwrap_or(i32::MAX)
    };
    let mut conditions: Vec<ReplicaSetCondition> = rs
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let had_failure = conditions
        .iter()
        .any(|c| c.type_.as_deref() == Some("ReplicaFailure"));
    match failure {
        Some(e) if !had_failure => {
            let reason = if rs.spec.replicas.unwrap_or(1)
                > i32::try_from(active.len()).unwrap_or(i32::MAX)
            {
                "FailedCreate"
            } else {
                "FailedDelete"
            };
            conditions.push(ReplicaSetCondition {
                type_: Some("ReplicaFailure".into()),
                status: Some("True".into()),
                reason: Some(reason.into()),
                message: Some(e.to_string()),
                last_transition_time: Some(Time(now)),
            });
        }
        None if had_failure => conditions.retain(|c| c.type_.as_deref() != Some("ReplicaFailure")),
        _ => {}
    }
    ReplicaSetStatus {
        replicas: count(&|_| true),
        fully_labeled_replicas: Some(count(&|p| matches(template.as_ref(), &p.labels))),
        ready_replicas: Some(count(&|p| p.is_ready())),
        available_replicas: Some(count(&|p| p.is_available(min_ready, now))),
        observed_generation: rs.metadata.generation,
        conditions: (!conditions.is_empty()).then_some(conditions),
        terminating_replicas: rs.status.as_ref().and_then(|s| s.terminating_replicas),
    }
}
