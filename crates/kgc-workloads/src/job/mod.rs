//! The Job controller (`kubernetes/kubernetes pkg/controller/job/job_controller.go`): runs a
//! Job's pods to `completions` successes, `parallelism` at a time (one index each for an
//! Indexed Job), replaces failed pods after an exponential back-off until `backoffLimit`
//! failures, stops at `activeDeadlineSeconds`, deletes the active pods of a suspended Job, and
//! reports `SuccessCriteriaMet`/`FailureTarget`, then `Complete`/`Failed`.
//!
//! Every pod is created with the `batch.kubernetes.io/job-tracking` finalizer; a finished pod
//! is first recorded in `status.uncountedTerminatedPods`, then loses its finalizer, then moves
//! into `succeeded`/`failed` (upstream `trackJobStatusAndRemoveFinalizers`): a pod is counted
//! exactly once even if the controller stops between two steps, and PodGC or the TTL collector
//! may delete it afterwards. Pods whose Job is gone or finished lose the finalizer too
//! (upstream `syncOrphanPod`).
//!
//! Status is written with the Job's resourceVersion, as upstream's `UpdateStatus`: counters are
//! read-modify-write, so a write from a cache that has not seen the last one must fail.

mod backoff;
mod indexed;
mod pod;
pub(crate) mod status;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::batch::v1::{Job as Typed, JobCondition, JobSpec, JobStatus};
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, Pod as TypedPod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kgc_client::Cluster;
use kgc_meta::selector::LabelSelector;
use kgc_runtime::Context;
use kgc_runtime::events::{Recorder, reference};
use kgc_runtime::informer::{Cache, Key, describe};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;

pub use self::backoff::{BASE as DEFAULT_POD_FAILURE_BACKOFF, MAX as MAX_POD_FAILURE_BACKOFF};
pub use self::pod::{COMPLETION_INDEX, JobPod, TRACKING_FINALIZER};
use self::status::Uncounted;
use crate::controller_ref::{Owner, claim_all, still_owner};
use crate::expectations::{Expectations, Writes};
use crate::pod_control::PodControl;
use crate::pods::to_delete;
use crate::replicaset::pod_from_template;
use crate::selector::matcher;
use crate::{Error, Result};

/// The name `--controllers` knows it by (kube-controller-manager's).
pub const NAME: &str = "job";
/// The most pods one sync creates or deletes (upstream `MaxPodCreateDeletePerSync`).
const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;
/// The most pods one sync adds to `uncountedTerminatedPods` (upstream `MaxUncountedPods`).
const MAX_UNCOUNTED_PODS: usize = 500;
/// `--concurrent-job-syncs`.
const WORKERS: usize = 5;
/// The component events are recorded under.
const COMPONENT: &str = "job-controller";
const FIELD_MANAGER: &str = "kgc-job-controller";
/// After a status write lost to a newer one, look again once the cache has caught up.
const CONFLICT_RETRY: Duration = Duration::from_millis(100);

/// A cached Job (typed; there are few of them).
pub type Job = kgc_runtime::informer::Typed<Typed>;

/// What the work queue holds: a Job to sync, or a pod whose Job no longer counts it and whose
/// tracking finalizer must go (upstream's separate `orphanQueue`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Work {
    Job(Key),
    OrphanPod(Key),
}

impl fmt::Display for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Work::Job(k) => f.write_str(&describe(k)),
            Work::OrphanPod(k) => write!(f, "pod {}", describe(k)),
        }
    }
}

/// The Job a pod's controller reference names, if it is a batch/v1 Job's.
fn job_of(pod: &JobPod) -> Option<Key> {
    pod.pod
        .controller
        .as_ref()
        .filter(|c| c.kind == "Job" && c.api_version == "batch/v1")
        .map(|c| (pod.pod.namespace.clone(), c.name.clone()))
}

/// What the pod handlers remember between events.
#[derive(Default)]
struct Seen {
    /// Pod → the Job its controller reference names (`None`: not a Job's).
    owner_of: HashMap<Key, Option<Key>>,
    /// Pods whose deletion has been counted when their deletionTimestamp appeared.
    deleting: HashSet<Key>,
    /// Per Job, the uids of pods whose finalizer removal has been sent but not yet seen
    /// (upstream `uidTrackingExpectations`): not to be counted twice meanwhile.
    removing: HashMap<Key, HashSet<String>>,
}

struct Controller<C> {
    ctx: Context<C>,
    jobs: Cache<Job>,
    pods: Cache<JobPod>,
    seen: Mutex<Seen>,
    expectations: Expectations<Key>,
    /// Its own status writes, until the Job cache shows them: `sync_job` counts from the
    /// status.
    writes: Writes<Key>,
    backoff: Mutex<HashMap<Key, backoff::Record>>,
    recorder: Recorder,
}

/// Runs the controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let jobs_resource = ctx.informers.resource("batch", "jobs").await;
    let pods_resource = ctx.informers.resource("", "pods").await;
    let controller = Arc::new(Controller {
        jobs: ctx.informers.cache::<Job>(jobs_resource),
        pods: ctx.informers.cache::<JobPod>(pods_resource),
        seen: Mutex::default(),
        expectations: Expectations::default(),
        writes: Writes::default(),
        backoff: Mutex::default(),
        recorder: Recorder::new(ctx.client.clone(), COMPONENT, ctx.clock),
        ctx,
    });
    // Upstream `addJob`/`updateJob`/`deleteJob`, `addPod`/`updatePod`/`deletePod`.
    let c = Arc::downgrade(&controller);
    let job_changed = move |key: &Key, job: Option<&Job>| {
        let mut wake = Vec::new();
        if let Some(c) = c.upgrade() {
            match job {
                Some(j) => {
                    let version = j.0.metadata.resource_version.as_deref();
                    c.writes.observed(key, version.unwrap_or_default());
                }
                None => c.job_gone(key, &mut wake),
            }
        }
        wake.push(Work::Job(key.clone()));
        wake
    };
    let c = Arc::downgrade(&controller);
    let pod_changed = move |key: &Key, pod: Option<&JobPod>| {
        let mut wake = Vec::new();
        if let (Some(c), Some(pod)) = (c.upgrade(), pod) {
            c.pod_changed(key, pod, &mut wake);
        }
        wake
    };
    let c = Arc::downgrade(&controller);
    let pod_gone = move |key: &Key, pod: &JobPod| {
        let mut wake = Vec::new();
        if let Some(c) = c.upgrade() {
            c.pod_gone(key, pod, &mut wake);
        }
        wake
    };
    let c = &controller;
    kgc_runtime::Controller::named(&c.ctx, NAME)
        .watches(&c.jobs, job_changed)
        .watches(&c.pods, pod_changed)
        .watches_deletions(&c.pods, pod_gone)
        .run_with(WORKERS, Arc::clone(c), |c, work: Work| async move {
            match work {
                Work::Job(key) => c.sync(&key).await,
                Work::OrphanPod(key) => c.sync_orphan(&key).await.map(|()| None),
            }
        })
        .await;
}

/// Whether a write lost to a concurrent one (409).
fn conflict(e: &Error) -> bool {
    matches!(e, Error::Kube(kube::Error::Api(s)) if s.code == 409)
}

impl<C: Cluster> Controller<C> {
    fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn backoff(&self) -> MutexGuard<'_, HashMap<Key, backoff::Record>> {
        self.backoff.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the Job `key` still counts its pods: it exists, is the one of `uid` if given,
    /// and has not finished.
    fn counting(&self, key: &Key, uid: Option<&str>) -> bool {
        self.jobs.get(key).is_some_and(|j| {
            uid.is_none_or(|u| j.0.metadata.uid.as_deref() == Some(u)) && !status::is_finished(&j.0)
        })
    }

    /// Upstream `deleteJob`: forget the Job's expectations and release its pods' finalizers.
    fn job_gone(&self, key: &Key, wake: &mut Vec<Work>) {
        self.expectations.forget(key);
        self.writes.forget(key);
        self.seen().removing.remove(key);
        self.backoff().remove(key);
        let tracked: Vec<Key> = self.pods.read(|pods| {
            pods.iter()
                .filter(|(_, p)| p.tracked && job_of(p).as_ref() == Some(key))
                .map(|(k, _)| k.clone())
                .collect()
        });
        for k in tracked {
            wake.push(Work::OrphanPod(k));
        }
    }

    /// Upstream `addPod`/`updatePod`: a new pod fulfils a creation, a deletion timestamp a
    /// deletion, a finalizer gone its removal; the pod's Job looks again, or, for a pod with a
    /// finalizer no Job counts, the finalizer goes. An orphan wakes the Jobs that select it.
    fn pod_changed(&self, key: &Key, pod: &JobPod, wake: &mut Vec<Work>) {
        let owner = job_of(pod);
        let prev = {
            let mut seen = self.seen();
            let prev = seen.owner_of.insert(key.clone(), owner.clone());
            if let Some(o) = &owner {
                if prev.is_none() && !pod.pod.deleting {
                    self.expectations.creation_observed(o);
                }
                if pod.pod.deleting && seen.deleting.insert(key.clone()) {
                    self.expectations.deletion_observed(o);
                }
                if !pod.tracked
                    && let Some(uids) = seen.removing.get_mut(o)
                {
                    uids.remove(pod.uid());
                }
            }
            prev
        };
        if let Some(Some(old)) = prev
            && Some(&old) != owner.as_ref()
        {
            wake.push(Work::Job(old));
        }
        let controller_uid = pod.pod.controller.as_ref().map(|c| c.uid.as_str());
        match owner {
            Some(o) if self.counting(&o, controller_uid) => wake.push(Work::Job(o)),
            _ if pod.pod.controller.is_some() && owner.is_none() => {}
            Some(_) if pod.tracked => wake.push(Work::OrphanPod(key.clone())),
            Some(_) => {}
            None => {
                if pod.tracked {
                    wake.push(Work::OrphanPod(key.clone()));
                }
                if !pod.pod.deleting {
                    self.jobs_selecting(pod, wake);
                }
            }
        }
    }

    /// Wakes every Job of the pod's namespace whose selector matches it.
    fn jobs_selecting(&self, pod: &JobPod, wake: &mut Vec<Work>) {
        self.jobs.read(|jobs| {
            for (k, job) in jobs {
                let selector = job.0.spec.as_ref().and_then(|s| s.selector.as_ref());
                if k.0 == pod.pod.namespace
                    && matcher(selector)
                        .ok()
                        .flatten()
                        .is_some_and(|s| s.matches(&pod.pod.labels))
                {
                    wake.push(Work::Job(k.clone()));
                }
            }
        });
    }

    /// Upstream `deletePod` (final): one deletion observed unless counted already, and the
    /// finalizer is as good as removed.
    fn pod_gone(&self, key: &Key, pod: &JobPod, wake: &mut Vec<Work>) {
        let owner = {
            let mut seen = self.seen();
            let owner = seen.owner_of.remove(key).flatten();
            let counted = seen.deleting.remove(key);
            if let Some(o) = &owner {
                if !counted {
                    self.expectations.deletion_observed(o);
                }
                if let Some(uids) = seen.removing.get_mut(o) {
                    uids.remove(pod.uid());
                }
            }
            owner
        };
        if let Some(o) = owner {
            wake.push(Work::Job(o));
        }
    }

    /// Upstream `syncOrphanPod`: removes the tracking finalizer of a pod no Job counts any
    /// more — its Job gone or finished, or no Job's at all.
    async fn sync_orphan(&self, key: &Key) -> Result<()> {
        let Some(pod) = self.pods.get(key) else {
            return Ok(());
        };
        if !pod.tracked {
            return Ok(());
        }
        if let Some(c) = &pod.pod.controller {
            let Some(job) = job_of(&pod) else {
                return Ok(());
            };
            if self.counting(&job, Some(&c.uid)) {
                return Ok(());
            }
        }
        let api: Api<TypedPod> = Api::namespaced(self.ctx.client.clone(), &key.0);
        remove_finalizer(&api, &pod).await
    }

    /// The pods the Job owns or may adopt, claimed (upstream `getPodsForJob`): those of its
    /// namespace its controller reference names or that are orphans.
    async fn claim(
        &self,
        owner: &Owner,
        selector: Option<&LabelSelector>,
        key: &Key,
    ) -> Result<Vec<JobPod>> {
        let candidates: Vec<JobPod> = self.pods.read(|pods| {
            pods.iter()
                .filter(|(k, p)| {
                    k.0 == key.0 && p.pod.controller.as_ref().is_none_or(|c| c.uid == owner.uid)
                })
                .map(|(_, p)| p.clone())
                .collect()
        });
        let api: Api<TypedPod> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let jobs: Api<Typed> = Api::namespaced(self.ctx.client.clone(), &key.0);
        claim_all(
            &api,
            owner,
            selector,
            candidates,
            |p| (p.pod.name.clone(), p.uid().to_owned()),
            still_owner(&jobs, &key.1, owner),
        )
        .await
    }

    /// Upstream `syncJob`; a conflicting status write is retried shortly.
    async fn sync(&self, key: &Key) -> Result<Option<Duration>> {
        match self.sync_job(key).await {
            Err(e) if conflict(&e) => Ok(Some(CONFLICT_RETRY)),
            other => other,
        }
    }

    async fn sync_job(&self, key: &Key) -> Result<Option<Duration>> {
        // Before the Job is read, as the expectations before the pods: the cache still shows
        // a status older than our last write, and counting from it would miss the pods that
        // write counted. Its event wakes us; `wait` bounds the wait.
        if let Some(wait) = self.writes.pending(key) {
            return Ok(Some(wait));
        }
        let Some(job) = self.jobs.get(key).map(|j| j.0) else {
            self.expectations.forget(key);
            self.writes.forget(key);
            self.seen().removing.remove(key);
            self.backoff().remove(key);
            return Ok(None);
        };
        if status::is_finished(&job) {
            self.backoff().remove(key);
            return Ok(None);
        }
        let spec = job.spec.clone().unwrap_or_default();
        let selector = match matcher(spec.selector.as_ref()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(controller = NAME, job = %describe(key), error = %e, "not syncing");
                return Ok(None);
            }
        };
        let owner = Owner {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: key.1.clone(),
            uid: job.metadata.uid.clone().unwrap_or_default(),
            deleting: job.metadata.deletion_timestamp.is_some(),
        };
        let now = self.ctx.clock.now();
        // Expectations and finalizer removals before the pods, so a pod arriving in between
        // defers the count: read after, a removal seen meanwhile would be forgotten while
        // the pods read still hold its finalizer, and that pod be counted twice.
        let satisfied = self.expectations.satisfied(key);
        let removing = self.seen().removing.get(key).cloned().unwrap_or_default();
        let pods = self.claim(&owner, selector.as_ref(), key).await?;
        let mut st = job.status.clone().unwrap_or_default();
        let uncounted = Uncounted::of(&st);
        let active_pods: Vec<&JobPod> = pods.iter().filter(|p| p.pod.is_active()).collect();
        let mut s = Sync {
            active: count(active_pods.len()),
            ready: count(active_pods.iter().filter(|p| p.pod.is_ready()).count()),
            terminating: count(pods.iter().filter(|p| p.terminating()).count()),
            finished: None,
        };
        // Newly finished pods: those with the finalizer not yet recorded anywhere.
        let new = |f: &dyn Fn(&JobPod) -> bool| -> Vec<&JobPod> {
            pods.iter()
                .filter(|p| {
                    p.tracked && !uncounted.contains(p.uid()) && !removing.contains(p.uid())
                })
                .filter(|p| {
                    indexed_completions(&spec).is_none_or(|c| p.index.is_some_and(|i| i < c))
                })
                .filter(|p| f(p))
                .collect()
        };
        let (new_succeeded, new_failed) = (new(&JobPod::succeeded), new(&JobPod::failed));
        let mut succeeded =
            st.succeeded.unwrap_or(0) + count(new_succeeded.len() + uncounted.succeeded.len());
        let failed = st.failed.unwrap_or(0) + count(new_failed.len() + uncounted.failed.len());
        let suspended = spec.suspend == Some(true);
        if st.start_time.is_none() && !suspended {
            st.start_time = Some(Time(now));
        }
        let finish_times = |ps: &[&JobPod]| -> Vec<jiff::Timestamp> {
            ps.iter().map(|p| p.finished_at.unwrap_or(now)).collect()
        };
        let record = self
            .backoff()
            .get(key)
            .copied()
            .unwrap_or_default()
            .observe(&finish_times(&new_succeeded), &finish_times(&new_failed));
        let mut requeue = None;
        s.finished = status::true_condition(&st, status::SUCCESS_CRITERIA_MET).cloned();
        if s.finished.is_none() {
            if let Some(target) = status::true_condition(&st, status::FAILURE_TARGET) {
                s.finished = Some(status::new_condition(
                    status::FAILED,
                    "True",
                    target.reason.as_deref().unwrap_or_default(),
                    target.message.as_deref().unwrap_or_default(),
                    now,
                ));
            } else if failed > spec.backoff_limit.unwrap_or(6)
                || past_backoff_limit_on_failure(&spec, &pods)
            {
                s.finished = Some(status::new_condition(
                    status::FAILURE_TARGET,
                    "True",
                    status::BACKOFF_LIMIT_EXCEEDED,
                    "Job has reached the specified backoff limit",
                    now,
                ));
            } else if let Some(left) = deadline_left(&spec, &st, now) {
                if left.is_zero() {
                    s.finished = Some(status::new_condition(
                        status::FAILURE_TARGET,
                        "True",
                        status::DEADLINE_EXCEEDED,
                        "Job was active longer than specified deadline",
                        now,
                    ));
                } else {
                    requeue = Some(left);
                }
            }
        }
        let mut succeeded_indexes = BTreeSet::new();
        if let Some(completions) = indexed_completions(&spec) {
            succeeded_indexes = indexed::parse(
                st.completed_indexes.as_deref().unwrap_or_default(),
                completions,
            );
            succeeded_indexes.extend(
                pods.iter()
                    .filter(|p| p.succeeded() && !removing.contains(p.uid()))
                    .filter_map(|p| p.index.filter(|i| *i < completions)),
            );
            succeeded = count(succeeded_indexes.len());
        }
        let mut suspend_changed = false;
        let mut manage_error = None;
        if s.finished.is_some() {
            // The Job has failed (or its success was recorded): stop what still runs.
            let (deleted, deleted_ready, error) =
                self.delete_pods(&job, key, &active_pods, false).await;
            if deleted != s.active || !satisfied {
                // Not finished yet: pods may remain, or be missing from the cache.
                s.finished = None;
            }
            s.active -= deleted;
            s.terminating += deleted;
            s.ready -= deleted_ready;
            manage_error = error;
        } else {
            let managed = satisfied && job.metadata.deletion_timestamp.is_none();
            if managed {
                let plan = Plan {
                    job: &job,
                    spec: &spec,
                    key,
                    owner: &owner,
                    active: &active_pods,
                    succeeded,
                    succeeded_indexes: &succeeded_indexes,
                    record,
                    now,
                };
                let (error, wait) = self.manage(&plan, &mut s).await;
                manage_error = error;
                requeue = min_duration(requeue, wait);
            }
            let complete = s.active == 0
                && match spec.completions {
                    None => succeeded > 0,
                    Some(c) => succeeded >= c,
                };
            if complete {
                s.finished = Some(status::new_condition(
                    status::SUCCESS_CRITERIA_MET,
                    "True",
                    status::COMPLETIONS_REACHED,
                    "Reached expected number of succeeded pods",
                    now,
                ));
            } else if managed {
                suspend_changed = self.suspension(&job, &mut st, suspended, now);
            }
        }
        let needs_flush = suspend_changed
            || Some(s.active) != st.active
            || Some(s.ready) != st.ready
            || Some(s.terminating) != st.terminating;
        st.active = Some(s.active);
        st.ready = Some(s.ready);
        st.terminating = Some(s.terminating);
        let tracking = Tracking {
            pods: &pods,
            removing: &removing,
            uncounted: &uncounted,
            succeeded_indexes,
            record,
        };
        self.track(key, job, st, tracking, s, needs_flush).await?;
        match manage_error {
            Some(e) => Err(e),
            None => Ok(requeue),
        }
    }

    /// The `Suspended` condition and its events (upstream `syncJob`); resuming restarts the
    /// deadline. Whether the status changed.
    fn suspension(
        &self,
        job: &Typed,
        st: &mut JobStatus,
        suspended: bool,
        now: jiff::Timestamp,
    ) -> bool {
        if suspended {
            let changed = status::ensure(
                st,
                status::SUSPENDED,
                "True",
                "JobSuspended",
                "Job suspended",
                now,
            );
            if changed {
                self.recorder
                    .normal(reference(job), "Suspended", "Job suspended".into());
            }
            return changed;
        }
        let changed = status::ensure(
            st,
            status::SUSPENDED,
            "False",
            "JobResumed",
            "Job resumed",
            now,
        );
        if changed {
            self.recorder
                .normal(reference(job), "Resumed", "Job resumed".into());
            st.start_time = Some(Time(now));
        }
        changed
    }

    /// Upstream `manageJob`: deletes the active pods of a suspended Job, or those beyond what
    /// is wanted, or creates the missing ones once the back-off allows. The write error, if
    /// any, and when to look again.
    async fn manage(&self, plan: &Plan<'_>, s: &mut Sync) -> (Option<Error>, Option<Duration>) {
        let Plan {
            job,
            spec,
            key,
            active,
            ..
        } = *plan;
        let n_active = active.len();
        let victims: Vec<&JobPod> = if spec.suspend == Some(true) {
            active.to_vec()
        } else {
            let want = want_active(spec, s.active, plan.succeeded);
            let mut victims =
                indexed_completions(spec).map_or_else(Vec::new, |c| indexed::surplus(active, c));
            let excess = n_active.saturating_sub(want);
            if victims.len() < excess {
                let rest: Vec<&crate::pods::Pod> = active
                    .iter()
                    .filter(|p| !victims.iter().any(|v| v.uid() == p.uid()))
                    .map(|p| &p.pod)
                    .collect();
                let chosen = to_delete(&rest, &rest, excess - victims.len());
                victims.extend(
                    active
                        .iter()
                        .filter(|p| chosen.iter().any(|c| c.uid == p.uid())),
                );
            }
            if victims.is_empty() {
                let missing = want.saturating_sub(n_active);
                if missing == 0 {
                    return (None, None);
                }
                let wait = plan.record.remaining(plan.now);
                if !wait.is_zero() {
                    return (None, Some(wait));
                }
                return (
                    self.create_pods(plan, missing.min(MAX_POD_CREATE_DELETE_PER_SYNC), s)
                        .await,
                    None,
                );
            }
            victims
        };
        let victims = &victims[..victims.len().min(MAX_POD_CREATE_DELETE_PER_SYNC)];
        self.expectations.expect(key, 0, victims.len());
        let (deleted, deleted_ready, error) = self.delete_pods(job, key, victims, true).await;
        s.active -= deleted;
        s.terminating += deleted;
        s.ready -= deleted_ready;
        (error, None)
    }

    /// Creates `n` pods in slow-start batches (upstream `manageJob`), each with the tracking
    /// finalizer and, for an Indexed Job, its index. Creations not made are no longer expected.
    async fn create_pods(&self, plan: &Plan<'_>, n: usize, s: &mut Sync) -> Option<Error> {
        let Plan {
            job,
            spec,
            key,
            owner,
            ..
        } = *plan;
        let indexes: Vec<Option<i32>> = match indexed_completions(spec) {
            Some(c) => indexed::pending(c, plan.succeeded_indexes, plan.active, n)
                .into_iter()
                .map(Some)
                .collect(),
            None => vec![None; n],
        };
        let n = indexes.len();
        self.expectations.expect(key, n, 0);
        let api: Api<TypedPod> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        let template = spec.template.clone();
        let pods: Vec<TypedPod> = indexes
            .iter()
            .map(|i| job_pod(&template, &key.0, owner, *i))
            .collect();
        let control = PodControl {
            api: &api,
            params: &params,
            expectations: &self.expectations,
            key,
            recorder: &self.recorder,
            involved: &reference(job),
        };
        let (made, error) = control.create(&pods).await;
        s.active += made as i32;
        error.map(Error::from)
    }

    /// Deletes `victims`, each guarded by its uid: how many were deleted and how many of those
    /// were ready. With `untrack` (upstream `deleteJobPods`: a suspended Job or one with too
    /// many pods), each loses its finalizer first and is not counted as failed, and each
    /// deletion is expected; without (upstream `deleteActivePods`: a failed Job), each is
    /// counted as failed once terminating.
    async fn delete_pods(
        &self,
        job: &Typed,
        key: &Key,
        victims: &[&JobPod],
        untrack: bool,
    ) -> (i32, i32, Option<Error>) {
        let api: Api<TypedPod> = Api::namespaced(self.ctx.client.clone(), &key.0);
        let results = join_all(victims.iter().map(|p| {
            let api = api.clone();
            async move {
                if untrack {
                    remove_finalizer(&api, p).await?;
                }
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: Some(p.uid().to_owned()),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                match api.delete(&p.pod.name, &params).await {
                    Ok(_) => Ok(true),
                    // Gone already, or replaced: nothing of ours left to delete.
                    Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(false),
                    Err(e) => Err(Error::from(e)),
                }
            }
        }))
        .await;
        let (mut deleted, mut ready, mut error) = (0, 0, None);
        for (p, r) in victims.iter().zip(results) {
            match r {
                Ok(gone) => {
                    deleted += 1;
                    ready += i32::from(p.pod.is_ready());
                    if gone {
                        self.recorder.normal(
                            reference(job),
                            "SuccessfulDelete",
                            format!("Deleted pod: {}", p.pod.name),
                        );
                    } else if untrack {
                        self.expectations.deletion_observed(key);
                    }
                }
                Err(e) => {
                    if untrack {
                        self.expectations.deletion_observed(key);
                    }
                    self.recorder.warning(
                        reference(job),
                        "FailedDelete",
                        format!("Error deleting: {e}"),
                    );
                    error = Some(e);
                }
            }
        }
        (deleted, ready, error)
    }

    /// Upstream `trackJobStatusAndRemoveFinalizers`: records newly finished pods as uncounted,
    /// removes their finalizers, moves them into the counters, and sets the terminal
    /// condition once nothing is left uncounted or terminating.
    async fn track(
        &self,
        key: &Key,
        mut job: Typed,
        mut st: JobStatus,
        t: Tracking<'_>,
        s: Sync,
        mut needs_flush: bool,
    ) -> Result<()> {
        let spec = job.spec.clone().unwrap_or_default();
        let completions = indexed_completions(&spec);
        let mut with_finalizer: HashSet<String> = t
            .pods
            .iter()
            .filter(|p| p.tracked && !t.removing.contains(p.uid()))
            .map(|p| p.uid().to_owned())
            .collect();
        needs_flush |= status::clean_uncounted(&mut st, &with_finalizer);
        let mut finished = s.finished;
        let failing = finished
            .as_ref()
            .is_some_and(|c| c.type_ != status::SUCCESS_CRITERIA_MET);
        let mut to_untrack: Vec<&JobPod> = Vec::new();
        let mut reached_max = false;
        for p in t.pods {
            if !p.tracked || t.removing.contains(p.uid()) {
                continue;
            }
            let failed = p.failed();
            let removable = job.metadata.deletion_timestamp.is_some()
                || finished.is_some()
                || p.succeeded()
                || failed;
            if !removable {
                continue;
            }
            to_untrack.push(p);
            let valid_index = completions.is_none_or(|c| p.index.is_some_and(|i| i < c));
            if p.succeeded() && !t.uncounted.failed.contains(p.uid()) {
                // An Indexed Job counts succeeded indexes, not pods.
                if completions.is_none() && !t.uncounted.succeeded.contains(p.uid()) {
                    status::add_uncounted(&mut st, p.uid(), true);
                    needs_flush = true;
                }
            } else if (failed || failing) && !t.uncounted.failed.contains(p.uid()) && valid_index {
                status::add_uncounted(&mut st, p.uid(), false);
                needs_flush = true;
            }
            if status::uncounted_len(&st) >= MAX_UNCOUNTED_PODS {
                reached_max = true;
                break;
            }
        }
        if completions.is_some() {
            let completed = indexed::format(&t.succeeded_indexes);
            if st.completed_indexes.as_deref().unwrap_or_default() != completed {
                needs_flush = true;
            }
            st.succeeded = Some(count(t.succeeded_indexes.len()));
            st.completed_indexes = Some(completed);
        }
        // The interim condition is written before any finalizer goes; the terminal one waits.
        if let Some(c) = finished.take() {
            let terminal = if c.type_ == status::SUCCESS_CRITERIA_MET {
                status::COMPLETE
            } else {
                status::FAILED
            };
            if c.type_ != status::FAILED && status::true_condition(&st, &c.type_).is_none() {
                st.conditions.get_or_insert_with(Vec::new).push(c.clone());
                needs_flush = true;
            }
            finished = Some(JobCondition {
                type_: terminal.to_owned(),
                ..c
            });
        }
        if needs_flush {
            job = self.write_status(key, job, st).await?;
            st = job.status.clone().unwrap_or_default();
            self.backoff().insert(key.clone(), t.record);
            needs_flush = false;
        }
        let mut remove_error = None;
        if !to_untrack.is_empty() {
            self.seen()
                .removing
                .entry(key.clone())
                .or_default()
                .extend(to_untrack.iter().map(|p| p.uid().to_owned()));
            let api: Api<TypedPod> = Api::namespaced(self.ctx.client.clone(), &key.0);
            let results = join_all(to_untrack.iter().map(|p| remove_finalizer(&api, p))).await;
            for (p, r) in to_untrack.iter().zip(results) {
                match r {
                    Ok(()) => {
                        with_finalizer.remove(p.uid());
                    }
                    Err(e) => {
                        // No update will come for it: no longer expected.
                        if let Some(uids) = self.seen().removing.get_mut(key) {
                            uids.remove(p.uid());
                        }
                        remove_error = Some(e);
                    }
                }
            }
        }
        needs_flush |= status::clean_uncounted(&mut st, &with_finalizer);
        if let Some(e) = remove_error {
            if needs_flush {
                self.write_status(key, job, st).await?;
            }
            return Err(e);
        }
        let now = self.ctx.clock.now();
        let done = match &finished {
            Some(c) if !reached_max && status::uncounted_len(&st) == 0 && s.terminating == 0 => {
                status::ensure(
                    &mut st,
                    &c.type_,
                    "True",
                    c.reason.as_deref().unwrap_or_default(),
                    c.message.as_deref().unwrap_or_default(),
                    now,
                );
                if c.type_ == status::COMPLETE {
                    st.completion_time = Some(Time(now));
                }
                true
            }
            _ => false,
        };
        if needs_flush || done {
            let job = self.write_status(key, job, st).await?;
            if let (true, Some(c)) = (done, &finished) {
                if c.type_ == status::COMPLETE {
                    self.recorder
                        .normal(reference(&job), "Completed", "Job completed".into());
                } else {
                    self.recorder.warning(
                        reference(&job),
                        c.reason.as_deref().unwrap_or_default(),
                        c.message.clone().unwrap_or_default(),
                    );
                }
            }
        }
        Ok(())
    }

    /// Replaces the Job's status, guarded by its resourceVersion (upstream `UpdateStatus`).
    /// Replaces the Job's status; until the cache shows the result, `sync_job` waits.
    async fn write_status(&self, key: &Key, mut job: Typed, status: JobStatus) -> Result<Typed> {
        let api: Api<Typed> = Api::namespaced(
            self.ctx.client.clone(),
            job.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let name = job.metadata.name.clone().unwrap_or_default();
        job.status = Some(status);
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        self.writes.writing(key);
        let written = api.replace_status(&name, &params, &job).await;
        let version = written
            .as_ref()
            .ok()
            .and_then(|j| j.metadata.resource_version.as_deref());
        let sent = job.metadata.resource_version.as_deref();
        self.writes.written(key, sent, version);
        Ok(written?)
    }
}

/// What one sync has found so far.
struct Sync {
    active: i32,
    ready: i32,
    terminating: i32,
    /// The condition the Job is to finish with, once its pods are counted.
    finished: Option<JobCondition>,
}

/// What `manage` decides on.
struct Plan<'a> {
    job: &'a Typed,
    spec: &'a JobSpec,
    key: &'a Key,
    owner: &'a Owner,
    active: &'a [&'a JobPod],
    succeeded: i32,
    succeeded_indexes: &'a BTreeSet<i32>,
    record: backoff::Record,
    now: jiff::Timestamp,
}

/// What `track` counts.
struct Tracking<'a> {
    pods: &'a [JobPod],
    removing: &'a HashSet<String>,
    uncounted: &'a Uncounted,
    succeeded_indexes: BTreeSet<i32>,
    record: backoff::Record,
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn min_duration(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `completions` if the Job is Indexed (validation requires them then).
fn indexed_completions(spec: &JobSpec) -> Option<i32> {
    (spec.completion_mode.as_deref() == Some("Indexed")).then(|| spec.completions.unwrap_or(0))
}

/// How many pods should be active (upstream `manageJob`): with completions, no more than
/// remain to succeed; without, `parallelism` until one pod succeeds, then what runs.
fn want_active(spec: &JobSpec, active: i32, succeeded: i32) -> usize {
    let parallelism = spec.parallelism.unwrap_or(1);
    let want = match spec.completions {
        None if succeeded > 0 => active,
        None => parallelism,
        Some(c) => (c - succeeded).min(parallelism),
    };
    usize::try_from(want).unwrap_or(0)
}

/// Upstream `pastBackoffLimitOnFailure`: with `restartPolicy: OnFailure`, the restarts of
/// the running and pending pods count as failures.
fn past_backoff_limit_on_failure(spec: &JobSpec, pods: &[JobPod]) -> bool {
    if spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        != Some("OnFailure")
    {
        return false;
    }
    let restarts: i64 = pods
        .iter()
        .filter(|p| p.pod.phase == "Running" || p.pod.phase == "Pending")
        .map(|p| p.pod.restarts)
        .sum();
    match spec.backoff_limit.unwrap_or(6) {
        0 => restarts > 0,
        limit => restarts >= i64::from(limit),
    }
}

/// How long the Job may still run under `activeDeadlineSeconds` (upstream `pastActiveDeadline`);
/// `None` without a deadline or while suspended.
fn deadline_left(spec: &JobSpec, st: &JobStatus, now: jiff::Timestamp) -> Option<Duration> {
    let deadline = spec.active_deadline_seconds?;
    let start = st.start_time.as_ref()?.0;
    if spec.suspend == Some(true) {
        return None;
    }
    let allowed = Duration::from_secs(u64::try_from(deadline).unwrap_or(0));
    let elapsed = Duration::try_from(now.duration_since(start)).unwrap_or(Duration::ZERO);
    Some(allowed.saturating_sub(elapsed))
}

/// A pod of the Job (upstream `manageJob`): the template's, with the tracking finalizer and,
/// for `index`, the completion index as annotation, label, environment variable and
/// hostname (`<job>-<index>`), named `<job>-<index>-…`.
fn job_pod(
    template: &k8s_openapi::api::core::v1::PodTemplateSpec,
    namespace: &str,
    owner: &Owner,
    index: Option<i32>,
) -> TypedPod {
    let mut pod = pod_from_template(template, namespace, owner);
    let finalizers = pod.metadata.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == TRACKING_FINALIZER) {
        finalizers.push(TRACKING_FINALIZER.to_owned());
    }
    if let Some(i) = index {
        let meta = &mut pod.metadata;
        meta.generate_name = Some(format!("{}-{i}-", owner.name));
        meta.annotations
            .get_or_insert_with(Default::default)
            .insert(COMPLETION_INDEX.to_owned(), i.to_string());
        meta.labels
            .get_or_insert_with(Default::default)
            .insert(COMPLETION_INDEX.to_owned(), i.to_string());
        if let Some(spec) = pod.spec.as_mut() {
            spec.hostname = Some(format!("{}-{i}", owner.name));
            let env = EnvVar {
                name: "JOB_COMPLETION_INDEX".into(),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path: format!("metadata.annotations['{COMPLETION_INDEX}']"),
                        ..ObjectFieldSelector::default()
                    }),
                    ..EnvVarSource::default()
                }),
                ..EnvVar::default()
            };
            for c in spec
                .init_containers
                .iter_mut()
                .flatten()
                .chain(spec.containers.iter_mut())
            {
                let vars = c.env.get_or_insert_with(Vec::new);
                if !vars.iter().any(|v| v.name == env.name) {
                    vars.push(env.clone());
                }
            }
        }
    }
    pod
}

/// Removes the tracking finalizer from `pod` (upstream `removeTrackingFinalizerPatch`), the
/// pod's uid a precondition. A pod already gone has nothing to remove.
async fn remove_finalizer(api: &Api<TypedPod>, pod: &JobPod) -> Result<()> {
    if !pod.tracked {
        return Ok(());
    }
    let patch = json!({"metadata": {
        "$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER],
        "uid": pod.uid(),
    }});
    match api
        .patch(
            &pod.pod.name,
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests;
