//! The CronJob controller (`kubernetes/kubernetes pkg/controller/cronjob/
//! cronjob_controllerv2.go` and `utils.go`): at each time of its schedule a CronJob gets a Job,
//! named after the scheduled minute so that one time never gets two, made from its
//! `jobTemplate` with a controller reference to it; `concurrencyPolicy` decides what happens
//! while an earlier Job still runs (Allow, Forbid: skip, Replace: delete it first); a start
//! missed by more than `startingDeadlineSeconds` is skipped; `suspend` stops new starts. The
//! status lists the active Jobs and the last schedule and success times, and — the garbage
//! collection this controller does itself — finished Jobs beyond `successfulJobsHistoryLimit`
//! and `failedJobsHistoryLimit` are deleted, oldest first (`cleanupFinishedJobs`).
//!
//! Nothing polls: each sync requeues the CronJob at its next schedule time (the work queue's
//! `add_after`), and Jobs' changes wake their CronJob. Time is the server's clock
//! (`ctx.clock`), so `kgc serve --clock-offset` moves schedules with every other time.

pub mod schedule;

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use k8s_openapi::api::batch::v1::{CronJob as Typed, CronJobStatus, Job as TypedJob};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kgc_client::Cluster;
use kgc_runtime::events::{Recorder, reference};
use kgc_runtime::informer::{Cache, Key};
use kgc_runtime::{Context, ObjectKey};
use kube::api::{Api, DeleteParams, PostParams, Preconditions, PropagationPolicy};
use serde_json::json;

use crate::controller_ref::{Owner, controller_named, controller_of};
use crate::job::Job;
use crate::job::status::{COMPLETE, FAILED, true_condition};
use crate::{Error, Result};
use schedule::{Missed, Schedule, location};

/// The name `--controllers` knows it by (kube-controller-manager's).
pub const NAME: &str = "cronjob";
/// The scheduled time of a CronJob's Job, RFC 3339 in the CronJob's zone (upstream
/// `batchv1.CronJobScheduledTimestampAnnotation`).
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/// `--concurrent-cron-job-syncs`.
const WORKERS: usize = 5;
const COMPONENT: &str = "cronjob-controller";
const FIELD_MANAGER: &str = "kgc-cronjob-controller";
/// Requeues land this much after the schedule time, against clock skew (upstream
/// `nextScheduleDelta`).
const NEXT_SCHEDULE_DELTA: Duration = Duration::from_millis(100);

/// A cached CronJob (typed; there are few of them).
pub type CronJob = kgc_runtime::informer::Typed<Typed>;

struct Controller<C> {
    ctx: Context<C>,
    cronjobs: Cache<CronJob>,
    jobs: Cache<Job>,
    recorder: Recorder,
}

/// Runs the controller until dropped: upstream's handlers as one declaration. A changed
/// CronJob looks again (upstream `updateCronJob` requeues a changed schedule at its next time;
/// syncing now computes that time too); a Job's change or going has its CronJob look again
/// (upstream `addJob`/`updateJob`/`deleteJob`).
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let cj_resource = ctx.informers.resource("batch", "cronjobs").await;
    let job_resource = ctx.informers.resource("batch", "jobs").await;
    let controller = Arc::new(Controller {
        cronjobs: ctx.informers.cache::<CronJob>(cj_resource),
        jobs: ctx.informers.cache::<Job>(job_resource),
        recorder: Recorder::new(ctx.client.clone(), COMPONENT, ctx.clock),
        ctx,
    });
    let c = &controller;
    kgc_runtime::Controller::named(&c.ctx, NAME)
        .watches(&c.cronjobs, |key: &Key, cj: Option<&CronJob>| {
            cj.map(|_| ObjectKey(key.clone()))
        })
        .owns(&c.jobs, |job: &Job| cronjob_of(&job.0))
        .run_with(WORKERS, Arc::clone(c), |c, key: ObjectKey| async move {
            c.sync(&key.0).await
        })
        .await;
}

/// The CronJob a Job's controller reference names.
fn cronjob_of(job: &TypedJob) -> Option<String> {
    controller_named(&job.metadata, "CronJob")
}

/// Upstream `getFinishedStatus`: `Complete` or `Failed`, when that condition is `True`.
fn finished(job: &TypedJob) -> Option<&'static str> {
    let status = job.status.as_ref()?;
    [COMPLETE, FAILED]
        .into_iter()
        .find(|t| true_condition(status, t).is_some())
}

/// Upstream `getJobName`: the CronJob's name and the scheduled time in minutes since the
/// epoch, so that a time's Job has one name whoever creates it.
fn job_name(cronjob: &str, scheduled: Timestamp) -> String {
    format!("{cronjob}-{}", scheduled.as_second().div_euclid(60))
}

/// Go's `time.RFC3339` of `t` in `tz`: `Z` for a zero offset, else `±hh:mm`.
fn rfc3339_in(t: Timestamp, tz: TimeZone) -> String {
    let z = t.to_zoned(tz);
    if z.offset().seconds() == 0 {
        z.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        z.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}

/// Upstream `getJobFromTemplate2`: the template's labels, annotations and spec, the scheduled
/// time annotation (in `spec.timeZone`, UTC without one) and the controller reference.
fn job_from_template(cj: &Typed, owner: &Owner, scheduled: Timestamp) -> TypedJob {
    let template = &cj.spec.job_template;
    let meta = template.metadata.clone().unwrap_or_default();
    let tz = cj
        .spec
        .time_zone
        .as_deref()
        .and_then(|z| location(z).ok())
        .unwrap_or(TimeZone::UTC);
    let mut annotations = meta.annotations.unwrap_or_default();
    annotations.insert(SCHEDULED_TIMESTAMP.into(), rfc3339_in(scheduled, tz));
    TypedJob {
        metadata: ObjectMeta {
            name: Some(job_name(&owner.name, scheduled)),
            namespace: cj.metadata.namespace.clone(),
            labels: meta.labels,
            annotations: Some(annotations),
            owner_references: Some(vec![owner.controller_ref()]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// Upstream `byJobStartTime`: started Jobs by start time, then those not started; names
/// break ties.
fn by_start_time(a: &TypedJob, b: &TypedJob) -> std::cmp::Ordering {
    let start = |j: &TypedJob| j.status.as_ref().and_then(|s| s.start_time.clone());
    match (start(a), start(b)) {
        (Some(x), Some(y)) if x != y => x.0.cmp(&y.0),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        _ => a.metadata.name.cmp(&b.metadata.name),
    }
}

/// Upstream `cleanupFinishedJobs`/`removeOldestJobs`: the finished Jobs to delete, oldest
/// first, beyond each limit (none when the limit is unset).
fn beyond_history_limits<'a>(cj: &Typed, jobs: &'a [TypedJob]) -> Vec<&'a TypedJob> {
    let mut out = Vec::new();
    for (condition, limit) in [
        (COMPLETE, cj.spec.successful_jobs_history_limit),
        (FAILED, cj.spec.failed_jobs_history_limit),
    ] {
        let Some(limit) = limit else { continue };
        let mut done: Vec<&TypedJob> = jobs
            .iter()
            .filter(|j| finished(j) == Some(condition))
            .collect();
        let excess = done
            .len()
            .saturating_sub(usize::try_from(limit).unwrap_or(0));
        done.sort_by(|a, b| by_start_time(a, b));
        out.extend(done.into_iter().take(excess));
    }
    out
}

fn in_active(status: &CronJobStatus, uid: Option<&str>) -> bool {
    status
        .active
        .iter()
        .flatten()
        .any(|r| r.uid.as_deref() == uid)
}

fn remove_active(status: &mut CronJobStatus, uid: Option<&str>) {
    if let Some(active) = &mut status.active {
        active.retain(|r| r.uid.as_deref() != uid);
    }
}

/// Go's `time.RFC1123Z` in UTC, as upstream's `MissSchedule` event prints the time.
fn rfc1123z(t: Timestamp) -> String {
    t.to_zoned(TimeZone::UTC)
        .strftime("%a, %d %b %Y %H:%M:%S +0000")
        .to_string()
}

impl<C: Cluster> Controller<C> {
    fn cj_api(&self, ns: &str) -> Api<Typed> {
        Api::namespaced(self.ctx.client.clone(), ns)
    }

    fn job_api(&self, ns: &str) -> Api<TypedJob> {
        Api::namespaced(self.ctx.client.clone(), ns)
    }

    /// The Jobs the CronJob controls (upstream `getJobsToBeReconciled`, which also keeps
    /// Jobs whose labels no longer match the template).
    fn jobs_of(&self, cj: &Typed, key: &Key) -> Vec<TypedJob> {
        self.jobs.read(|jobs| {
            jobs.iter()
                .filter(|(k, j)| {
                    k.0 == key.0
                        && controller_of(&j.0.metadata).is_some_and(|r| {
                            r.kind == "CronJob"
                                && r.name == key.1
                                && Some(&r.uid) == cj.metadata.uid.as_ref()
                        })
                })
                .map(|(_, j)| j.0.clone())
                .collect()
        })
    }

    /// Upstream `sync`.
    async fn sync(&self, key: &Key) -> Result<Option<Duration>> {
        let Some(cj) = self.cronjobs.get(key).map(|t| t.0) else {
            return Ok(None);
        };
        let jobs = self.jobs_of(&cj, key);
        let mut status = cj.status.clone().unwrap_or_default();
        let before = status.clone();
        self.cleanup_finished(&cj, &jobs, &mut status).await;
        let outcome = self.sync_cron_job(&cj, key, &jobs, &mut status).await;
        if status != before {
            // Only what this sync changed: the cache may be behind our own last write, and a
            // merge patch of a stale field would take it back (the times only move forward).
            let mut patch = serde_json::Map::new();
            if status.active != before.active {
                let active = status.active.as_ref().filter(|a| !a.is_empty());
                patch.insert("active".into(), json!(active));
            }
            if status.last_schedule_time != before.last_schedule_time {
                patch.insert("lastScheduleTime".into(), json!(status.last_schedule_time));
            }
            if status.last_successful_time != before.last_successful_time {
                patch.insert(
                    "lastSuccessfulTime".into(),
                    json!(status.last_successful_time),
                );
            }
            crate::patch_status(&self.cj_api(&key.0), &key.1, &patch).await?;
        }
        outcome
    }

    /// Deletes the finished Jobs beyond the history limits.
    async fn cleanup_finished(&self, cj: &Typed, jobs: &[TypedJob], status: &mut CronJobStatus) {
        for job in beyond_history_limits(cj, jobs) {
            self.delete_job(cj, job, status).await;
        }
    }

    /// Upstream `deleteJob`: deletes a Job (its pods in the background, as upstream's
    /// `realJobControl`), guarded by its uid, and drops it from the active list; whether it
    /// is gone.
    async fn delete_job(&self, cj: &Typed, job: &TypedJob, status: &mut CronJobStatus) -> bool {
        let name = job.metadata.name.clone().unwrap_or_default();
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Some(Preconditions {
                uid: job.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let ns = job.metadata.namespace.clone().unwrap_or_default();
        match self.job_api(&ns).delete(&name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                self.recorder.warning(
                    reference(cj),
                    "FailedDelete",
                    format!("Deleted job: {}", crate::api_message(&e)),
                );
                return false;
            }
        }
        remove_active(status, job.metadata.uid.as_deref());
        self.recorder.normal(
            reference(cj),
            "SuccessfulDelete",
            format!("Deleted job {name}"),
        );
        true
    }

    /// The first half of upstream `syncCronJob`: finished Jobs leave the active list (a
    /// success moves `lastSuccessfulTime`), unfinished ones missing from it are reported, and
    /// active Jobs gone from the API leave it too.
    async fn reconcile_active(
        &self,
        cj: &Typed,
        key: &Key,
        jobs: &[TypedJob],
        status: &mut CronJobStatus,
    ) -> Result<()> {
        let involved = reference(cj);
        for j in jobs {
            let uid = j.metadata.uid.as_deref();
            let name = j.metadata.name.as_deref().unwrap_or_default();
            let found = in_active(status, uid);
            match finished(j) {
                None if !found => {
                    // Perhaps our own status write the cache has not seen yet: read afresh.
                    let fresh = self.cj_api(&key.0).get_opt(&key.1).await?;
                    if let Some(fresh_status) = fresh.and_then(|f| f.status)
                        && in_active(&fresh_status, uid)
                    {
                        *status = fresh_status;
                        continue;
                    }
                    self.recorder.warning(
                        involved.clone(),
                        "UnexpectedJob",
                        format!("Saw a job that the controller did not create or forgot: {name}"),
                    );
                }
                None => {}
                Some(condition) => {
                    if found {
                        remove_active(status, uid);
                        self.recorder.normal(
                            involved.clone(),
                            "SawCompletedJob",
                            format!("Saw completed job: {name}, condition: {condition}"),
                        );
                    }
                    let completed = j.status.as_ref().and_then(|s| s.completion_time.clone());
                    if condition == COMPLETE
                        && let Some(c) = completed
                        && status
                            .last_successful_time
                            .as_ref()
                            .is_none_or(|l| c.0 > l.0)
                    {
                        status.last_successful_time = Some(c);
                    }
                }
            }
        }
        // Active Jobs gone from the cache: confirmed gone with a read, they leave the list.
        let children: Vec<Option<&str>> = jobs.iter().map(|j| j.metadata.uid.as_deref()).collect();
        let missing: Vec<ObjectReference> = status
            .active
            .iter()
            .flatten()
            .filter(|r| !children.contains(&r.uid.as_deref()))
            .cloned()
            .collect();
        for r in missing {
            let name = r.name.clone().unwrap_or_default();
            if self.job_api(&key.0).get_opt(&name).await?.is_none() {
                self.recorder.normal(
                    involved.clone(),
                    "MissingJob",
                    format!("Active job went missing: {name}"),
                );
                remove_active(status, r.uid.as_deref());
            }
        }
        Ok(())
    }

    /// Upstream `syncCronJob`: reconciles the active list with the Jobs, then starts the Job
    /// of the latest unmet schedule time if the policies allow; when to look again.
    async fn sync_cron_job(
        &self,
        cj: &Typed,
        key: &Key,
        jobs: &[TypedJob],
        status: &mut CronJobStatus,
    ) -> Result<Option<Duration>> {
        self.reconcile_active(cj, key, jobs, status).await?;
        let now = self.ctx.clock.now();
        let involved = reference(cj);
        let idle = None;
        if cj.metadata.deletion_timestamp.is_some() {
            return Ok(idle);
        }
        let tz = match cj.spec.time_zone.as_deref() {
            None => TimeZone::system(),
            Some(name) => match location(name) {
                Ok(tz) => tz,
                Err(e) => {
                    self.recorder.warning(
                        involved,
                        "UnknownTimeZone",
                        format!("invalid timeZone: {name:?}: {e}"),
                    );
                    return Ok(idle);
                }
            },
        };
        if cj.spec.suspend == Some(true) {
            return Ok(idle);
        }
        let spec = &cj.spec.schedule;
        if spec.contains("TZ") {
            self.recorder.warning(
                involved.clone(),
                "UnsupportedSchedule",
                format!("CRON_TZ or TZ used in schedule {spec:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"),
            );
        }
        let sched = match Schedule::parse(spec, tz) {
            Ok(s) => s,
            Err(e) => {
                self.recorder.warning(
                    involved,
                    "UnparseableSchedule",
                    format!("unparseable schedule: {spec:?} : {e}"),
                );
                return Ok(idle);
            }
        };
        let later = |status: &CronJobStatus| next_schedule_delay(cj, status, now, &sched);
        // Upstream `nextScheduleTime`: the latest unmet time within the starting deadline.
        let deadline = cj.spec.starting_deadline_seconds;
        let earliest = earliest_time(cj, status, deadline.map(|d| (d, now)));
        let scheduled = match sched.most_recent(earliest, now) {
            Ok((Some(t), missed)) => {
                if missed == Missed::Many {
                    self.recorder.warning(
                        involved.clone(),
                        "TooManyMissedTimes",
                        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew".to_owned(),
                    );
                }
                t
            }
            Ok((None, _)) => return Ok(later(status)),
            Err(e) => {
                self.recorder.warning(
                    involved,
                    "InvalidSchedule",
                    format!("invalid schedule: {spec} : {e}"),
                );
                return Ok(idle);
            }
        };
        if let Some(d) = deadline
            && scheduled
                .checked_add(jiff::SignedDuration::from_secs(d))
                .is_ok_and(|t| t < now)
        {
            self.recorder.warning(
                involved,
                "MissSchedule",
                format!(
                    "Missed scheduled time to start a job: {}",
                    rfc1123z(scheduled)
                ),
            );
            return Ok(later(status));
        }
        let name = job_name(&key.1, scheduled);
        let processed = status
            .active
            .iter()
            .flatten()
            .any(|r| r.name.as_deref() == Some(name.as_str()))
            || status.last_schedule_time.as_ref().map(|t| t.0) == Some(scheduled);
        if processed {
            return Ok(later(status));
        }
        let policy = cj.spec.concurrency_policy.as_deref().unwrap_or("Allow");
        let has_active = status.active.as_ref().is_some_and(|a| !a.is_empty());
        if policy == "Forbid" && has_active {
            self.recorder.normal(
                involved,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid".to_owned(),
            );
            return Ok(later(status));
        }
        self.start(cj, key, scheduled, status).await?;
        Ok(later(status))
    }

    /// Upstream `syncCronJob`'s start: with Replace the active Jobs deleted first, then the
    /// Job of `scheduled` created (or, made before by this controller but lost from the
    /// status, put back on the active list).
    async fn start(
        &self,
        cj: &Typed,
        key: &Key,
        scheduled: Timestamp,
        status: &mut CronJobStatus,
    ) -> Result<()> {
        let involved = reference(cj);
        let name = job_name(&key.1, scheduled);
        let policy = cj.spec.concurrency_policy.as_deref().unwrap_or("Allow");
        if policy == "Replace" {
            for r in status.active.clone().unwrap_or_default() {
                let job_name = r.name.clone().unwrap_or_default();
                let job = match self.job_api(&key.0).get(&job_name).await {
                    Ok(j) => j,
                    Err(e) => {
                        self.recorder.warning(
                            involved,
                            "FailedGet",
                            format!("Get job: {}", crate::api_message(&e)),
                        );
                        return Err(e.into());
                    }
                };
                if !self.delete_job(cj, &job, status).await {
                    return Err(Error::Invalid(format!(
                        "could not replace job {}/{job_name}",
                        key.0
                    )));
                }
            }
        }
        let owner = Owner {
            api_version: "batch/v1".into(),
            kind: "CronJob".into(),
            name: key.1.clone(),
            uid: cj.metadata.uid.clone().unwrap_or_default(),
            deleting: false,
        };
        let request = job_from_template(cj, &owner, scheduled);
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        let created = match self.job_api(&key.0).create(&params, &request).await {
            Ok(job) => {
                self.recorder
                    .normal(involved, "SuccessfulCreate", format!("Created job {name}"));
                job
            }
            Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
                // Created before, perhaps by us with the status write lost: ours goes back
                // on the active list; another's is left alone.
                let job = self.job_api(&key.0).get(&name).await?;
                let ours = controller_of(&job.metadata)
                    .is_some_and(|r| Some(&r.uid) == cj.metadata.uid.as_ref());
                if !ours || in_active(status, job.metadata.uid.as_deref()) {
                    return Ok(());
                }
                job
            }
            Err(e) => {
                self.recorder.warning(
                    involved,
                    "FailedCreate",
                    format!("Error creating job: {}", crate::api_message(&e)),
                );
                return Err(e.into());
            }
        };
        status
            .active
            .get_or_insert_with(Vec::new)
            .push(reference(&created));
        status.last_schedule_time = Some(Time(scheduled));
        Ok(())
    }
}

/// Where the search for unmet times starts (upstream `mostRecentScheduleTime`): the last
/// schedule time, else the CronJob's creation; with `deadline` (seconds, now), no earlier than
/// the deadline allows.
fn earliest_time(
    cj: &Typed,
    status: &CronJobStatus,
    deadline: Option<(i64, Timestamp)>,
) -> Timestamp {
    let mut earliest = status
        .last_schedule_time
        .as_ref()
        .or(cj.metadata.creation_timestamp.as_ref())
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    if let Some((secs, now)) = deadline
        && let Ok(limit) = now.checked_sub(jiff::SignedDuration::from_secs(secs))
        && limit > earliest
    {
        earliest = limit;
    }
    earliest
}

/// Upstream `nextScheduleTimeDuration`: the wait until the schedule's next time after the
/// latest one passed (or after now, when the schedule is broken or times were missed), plus
/// `NEXT_SCHEDULE_DELTA`; none when the schedule never fires again.
fn next_schedule_delay(
    cj: &Typed,
    status: &CronJobStatus,
    now: Timestamp,
    sched: &Schedule,
) -> Option<Duration> {
    let earliest = earliest_time(cj, status, None);
    let base = match sched.most_recent(earliest, now) {
        Ok((Some(t), _)) => t,
        Ok((None, Missed::None)) => earliest,
        Ok((None, _)) | Err(_) => now,
    };
    let next = sched.next(base)?;
    let wait = next.duration_since(now);
    Some(Duration::try_from(wait).unwrap_or_default() + NEXT_SCHEDULE_DELTA)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cronjob(extra: serde_json::Value) -> Typed {
        let mut v = json!({
            "metadata": {"name": "hello", "namespace": "ns", "uid": "cj-uid",
                         "creationTimestamp": "2024-01-01T10:30:00Z"},
            "spec": {"schedule": "0 * * * *", "jobTemplate": {
                "metadata": {"labels": {"app": "hello"}, "annotations": {"a": "b"}},
                "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}],
                                                "restartPolicy": "OnFailure"}}}}},
        });
        if let (Some(spec), Some(extra)) = (v["spec"].as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        serde_json::from_value(v).unwrap()
    }

    fn job(name: &str, condition: Option<&str>, start: Option<&str>) -> TypedJob {
        serde_json::from_value(json!({
            "metadata": {"name": name, "uid": format!("{name}-uid")},
            "status": {
                "startTime": start,
                "conditions": condition.map(|c| vec![json!({"type": c, "status": "True"})]),
            },
        }))
        .unwrap()
    }

    fn owner() -> Owner {
        Owner {
            api_version: "batch/v1".into(),
            kind: "CronJob".into(),
            name: "hello".into(),
            uid: "cj-uid".into(),
            deleting: false,
        }
    }

    #[test]
    fn jobs_are_named_after_the_scheduled_minute_and_made_from_the_template() {
        let t: Timestamp = "2024-01-01T11:00:00Z".parse().unwrap();
        assert_eq!(job_name("hello", t), "hello-28401780");
        let job = job_from_template(&cronjob(json!({})), &owner(), t);
        assert_eq!(job.metadata.name.as_deref(), Some("hello-28401780"));
        let annotations = job.metadata.annotations.unwrap();
        assert_eq!(annotations["a"], "b");
        assert_eq!(annotations[SCHEDULED_TIMESTAMP], "2024-01-01T11:00:00Z");
        assert_eq!(job.metadata.labels.unwrap()["app"], "hello");
        let refs = job.metadata.owner_references.unwrap();
        assert_eq!(
            (
                refs[0].kind.as_str(),
                refs[0].uid.as_str(),
                refs[0].controller
            ),
            ("CronJob", "cj-uid", Some(true))
        );
        assert_eq!(
            job.spec
                .unwrap()
                .template
                .spec
                .unwrap()
                .restart_policy
                .as_deref(),
            Some("OnFailure")
        );
        // In the CronJob's zone.
        let zoned = job_from_template(&cronjob(json!({"timeZone": "Asia/Kolkata"})), &owner(), t);
        assert_eq!(
            zoned.metadata.annotations.unwrap()[SCHEDULED_TIMESTAMP],
            "2024-01-01T16:30:00+05:30"
        );
    }

    #[test]
    fn finished_jobs_beyond_the_limits_go_oldest_first() {
        let cj = cronjob(json!({"successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 0}));
        let jobs = vec![
            job("s3", Some("Complete"), Some("2024-01-01T03:00:00Z")),
            job("s1", Some("Complete"), Some("2024-01-01T01:00:00Z")),
            job("s2", Some("Complete"), Some("2024-01-01T02:00:00Z")),
            job("f1", Some("Failed"), None),
            job("running", None, Some("2024-01-01T00:00:00Z")),
        ];
        let names: Vec<&str> = beyond_history_limits(&cj, &jobs)
            .iter()
            .filter_map(|j| j.metadata.name.as_deref())
            .collect();
        assert_eq!(names, ["s1", "s2", "f1"]);
        // Unset limits keep everything.
        assert!(beyond_history_limits(&cronjob(json!({})), &jobs).is_empty());
    }

    #[test]
    fn requeues_at_the_next_schedule_time() {
        let cj = cronjob(json!({}));
        let sched = Schedule::parse("0 * * * *", TimeZone::UTC).unwrap();
        let now: Timestamp = "2024-01-01T10:59:30Z".parse().unwrap();
        let status = CronJobStatus::default();
        assert_eq!(
            next_schedule_delay(&cj, &status, now, &sched),
            Some(Duration::from_millis(30_100))
        );
        // The deadline moves the earliest time forward only.
        let now: Timestamp = "2024-01-01T13:10:00Z".parse().unwrap();
        assert_eq!(
            earliest_time(&cj, &status, Some((60, now))),
            "2024-01-01T13:09:00Z".parse::<Timestamp>().unwrap()
        );
        assert_eq!(rfc1123z(now), "Mon, 01 Jan 2024 13:10:00 +0000");
    }
}
