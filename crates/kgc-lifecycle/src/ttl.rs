//! TTL after finished (upstream `pkg/controller/ttlafterfinished`): a Job with
//! `spec.ttlSecondsAfterFinished` is deleted (Foreground, uid precondition) once the time of its
//! `Complete` or `Failed` condition plus the TTL has passed.
//!
//! Every Job change enqueues the Job; a worker judges it from the cache and, if it has not
//! expired, schedules it again for exactly its expiry in the work queue: there is no polling.
//! An expired Job is read back live first (its TTL may have been edited) and judged again.

use std::sync::Arc;
use std::time::Duration;

use kgc_client::Cluster;
use kgc_meta::{PropagationPolicy, ResourceInfo};
use serde_json::Value;

use crate::{Error, Metrics, Result, Target, propagation, time_field};
use kgc_runtime::informer::{Cache, Key, View, describe, key_of};
use kgc_runtime::queue::WorkQueue;
use kgc_runtime::{Context, Next, run_workers};

const COLLECTOR: &str = "ttl";

/// Settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--concurrent-ttl-after-finished-syncs` (upstream 5).
    pub workers: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self { workers: 5 }
    }
}

/// What the collector keeps of a Job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub uid: String,
    pub deleting: bool,
    /// `spec.ttlSecondsAfterFinished`; `None` when unset.
    pub ttl: Option<i32>,
    /// The `lastTransitionTime` of the first true Complete or Failed condition; `None` while
    /// the Job runs.
    pub finished_at: Option<jiff::Timestamp>,
}

impl Job {
    /// The view of a Job; `Err` names the malformed field (a negative or non-int32 TTL, a
    /// finished condition without a readable time).
    pub fn from_json(obj: &Value) -> Result<Self> {
        let invalid = |field: &'static str, reason: String| Error::Invalid {
            object: describe(&key_of(obj)),
            field,
            reason,
        };
        let ttl = match &obj["spec"]["ttlSecondsAfterFinished"] {
            Value::Null => None,
            v => match v.as_i64().and_then(|t| i32::try_from(t).ok()) {
                Some(t) if t >= 0 => Some(t),
                _ => {
                    return Err(invalid(
                        "spec.ttlSecondsAfterFinished",
                        format!("must be a non-negative 32-bit integer, got {v}"),
                    ));
                }
            },
        };
        let mut finished_at = None;
        // Upstream `getFinishAndExpireTime`: the first condition of type Complete or Failed
        // with status True.
        if let Some(c) = obj["status"]["conditions"].as_array().and_then(|cs| {
            cs.iter().find(|c| {
                (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True"
            })
        }) {
            {
                match time_field(
                    obj,
                    &c["lastTransitionTime"],
                    "status.conditions[].lastTransitionTime",
                )? {
                    Some(t) => finished_at = Some(t),
                    None => {
                        return Err(invalid(
                            "status.conditions[].lastTransitionTime",
                            "unable to find the time when the Job finished".into(),
                        ));
                    }
                }
            }
        }
        Ok(Self {
            uid: obj["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            deleting: !obj["metadata"]["deletionTimestamp"].is_null(),
            ttl,
            finished_at,
        })
    }

    /// Upstream `needsCleanup`: a TTL and finished.
    pub fn needs_cleanup(&self) -> bool {
        self.ttl.is_some() && self.finished_at.is_some()
    }
}

/// Upstream `timeLeft`: how long until the Job expires (zero or negative: expired) and when.
pub fn time_left(
    job: &Job,
    now: jiff::Timestamp,
) -> Result<(jiff::SignedDuration, jiff::Timestamp), String> {
    let (Some(ttl), Some(finished)) = (job.ttl, job.finished_at) else {
        return Err("job should not be cleaned up".into());
    };
    if finished > now {
        tracing::warn!(collector = COLLECTOR, %finished, %now, "the Job finished in the future; clock skew?");
    }
    let expire_at = finished
        .checked_add(jiff::SignedDuration::from_secs(i64::from(ttl)))
        .map_err(|e| format!("expiry out of range: {e}"))?;
    Ok((expire_at.duration_since(now), expire_at))
}

impl View for Job {
    fn view(obj: &Value) -> Option<Self> {
        Job::from_json(obj)
            .map_err(|e| tracing::warn!(collector = COLLECTOR, error = %e, "skipping a Job that cannot be judged"))
            .ok()
    }
}

/// The running collector.
pub struct Ttl<C> {
    ctx: Context<C>,
    metrics: Arc<Metrics>,
    jobs_resource: Arc<ResourceInfo>,
    jobs: Cache<Job>,
    queue: WorkQueue<Key>,
}

/// What processing one key did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Nothing,
    Requeued(Duration),
    Deleted,
}

impl<C: Cluster> Ttl<C> {
    /// Starts the Job cache; every change enqueues Jobs that need cleanup.
    pub async fn start(ctx: Context<C>, metrics: Arc<Metrics>) -> Self {
        let jobs_resource = ctx.informers.resource("batch", "jobs").await;
        // Upstream's queue name (`pkg/controller/ttlafterfinished`).
        let queue: WorkQueue<Key> = ctx.queue("ttl_jobs_to_delete");
        let q = queue.clone();
        let jobs = ctx.informers.cache::<Job>(Arc::clone(&jobs_resource));
        jobs.on_change(Arc::new(move |key: &Key, job: Option<&Job>| {
            if let Some(j) = job
                && !j.deleting
                && j.needs_cleanup()
            {
                q.add(key.clone());
            }
        }));
        jobs.synced().await;
        Self {
            ctx,
            metrics,
            jobs_resource,
            jobs,
            queue,
        }
    }

    /// Upstream `processTTL`: `None` if the Job is to be deleted now, else what to do instead.
    fn judge(&self, key: &Key, job: &Job) -> Option<Outcome> {
        if job.deleting || !job.needs_cleanup() {
            return Some(Outcome::Nothing);
        }
        match time_left(job, self.ctx.clock.now()) {
            Err(e) => {
                tracing::warn!(collector = COLLECTOR, job = %describe(key), error = %e, "skipping");
                Some(Outcome::Nothing)
            }
            Ok((left, _)) if left.is_positive() => {
                let d = Duration::try_from(left).unwrap_or(Duration::MAX);
                self.queue.add_after(key.clone(), d);
                Some(Outcome::Requeued(d))
            }
            Ok(_) => None,
        }
    }

    /// Upstream `processJob`.
    pub async fn process(&self, key: &Key) -> Result<Outcome> {
        let Some(job) = self.jobs.get(key) else {
            return Ok(Outcome::Nothing);
        };
        if let Some(outcome) = self.judge(key, &job) {
            return Ok(outcome);
        }
        // Expired by the cache; the TTL may have been edited since: read it back.
        let Some(live) = self
            .ctx
            .cluster()
            .get_object(&self.jobs_resource, &key.0, &key.1)
            .await?
        else {
            return Ok(Outcome::Nothing);
        };
        let fresh = Job::from_json(&live)?;
        if let Some(outcome) = self.judge(key, &fresh) {
            return Ok(outcome);
        }
        let target = Target {
            resource: &self.jobs_resource,
            namespace: &key.0,
            name: &key.1,
            uid: &fresh.uid,
        };
        crate::delete(
            &self.ctx,
            &self.metrics,
            (COLLECTOR, "expired"),
            target,
            propagation(PropagationPolicy::Foreground),
        )
        .await?;
        Ok(Outcome::Deleted)
    }

    /// What a worker does with `key` once processed: failures are retried with the queue's
    /// back-off (5 ms doubling to 1000 s, client-go's default controller limiter), except a
    /// Job that cannot be judged, which is logged and left alone.
    async fn next(&self, key: &Key) -> Next {
        match self.process(key).await {
            Ok(_) => Next::Done,
            Err(e @ Error::Invalid { .. }) => {
                crate::skip(&self.metrics, COLLECTOR, &e);
                Next::Done
            }
            Err(e) => {
                tracing::warn!(collector = COLLECTOR, job = %describe(key), error = %e, retries = self.queue.requeues(key), "retrying");
                Next::Retry(COLLECTOR.into())
            }
        }
    }
}

/// Runs the collector with its workers until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config, metrics: Arc<Metrics>) {
    let ttl = Arc::new(Ttl::start(ctx, metrics).await);
    tracing::info!(collector = COLLECTOR, workers = config.workers, "started");
    let queue = ttl.queue.clone();
    run_workers(queue, config.workers, move |key: Key| {
        let ttl = Arc::clone(&ttl);
        async move { ttl.next(&key).await }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(ttl: Option<i64>, condition: Option<(&str, jiff::Timestamp)>) -> Job {
        let mut o = json!({"metadata": {"namespace": "n", "name": "j", "uid": "u"}, "spec": {}});
        if let Some(t) = ttl {
            o["spec"]["ttlSecondsAfterFinished"] = json!(t);
        }
        if let Some((kind, at)) = condition {
            o["status"]["conditions"] = json!([{"type": kind, "status": "True",
                "lastTransitionTime": at.to_string()}]);
        }
        Job::from_json(&o).unwrap()
    }

    #[test]
    fn test_time_left() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let ago10 = now - jiff::SignedDuration::from_secs(10);
        for kind in ["Complete", "Failed"] {
            // "Error case: Job unfinished"
            assert!(
                time_left(&job(Some(100), None), now)
                    .unwrap_err()
                    .contains("should not be cleaned up")
            );
            // "Error case: Job completed now, no TTL"
            assert!(
                time_left(&job(None, Some((kind, now))), now)
                    .unwrap_err()
                    .contains("should not be cleaned up")
            );
            // "Job completed now, 0s TTL"
            assert_eq!(
                time_left(&job(Some(0), Some((kind, now))), now).unwrap(),
                (jiff::SignedDuration::ZERO, now)
            );
            // "Job completed now, 10s TTL"
            assert_eq!(
                time_left(&job(Some(10), Some((kind, now))), now).unwrap(),
                (
                    jiff::SignedDuration::from_secs(10),
                    now + jiff::SignedDuration::from_secs(10)
                )
            );
            // "Job completed 10s ago, 15s TTL"
            assert_eq!(
                time_left(&job(Some(15), Some((kind, ago10))), now).unwrap(),
                (
                    jiff::SignedDuration::from_secs(5),
                    now + jiff::SignedDuration::from_secs(5)
                )
            );
        }
    }

    #[test]
    fn the_first_true_finished_condition_counts() {
        let o = json!({"metadata": {"name": "j"}, "spec": {"ttlSecondsAfterFinished": 5},
            "status": {"conditions": [
                {"type": "Complete", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Failed", "status": "True", "lastTransitionTime": "2026-01-02T00:00:00Z"},
                {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-03T00:00:00Z"}]}});
        let j = Job::from_json(&o).unwrap();
        assert_eq!(j.finished_at, Some("2026-01-02T00:00:00Z".parse().unwrap()));
    }

    #[test]
    fn bad_ttls_and_times_are_named_and_skipped() {
        for ttl in [
            json!(-1),
            json!(1e30),
            json!("60"),
            json!(4_294_967_296_i64),
        ] {
            let o = json!({"metadata": {"namespace": "n", "name": "j"}, "spec": {"ttlSecondsAfterFinished": ttl}});
            let e = Job::from_json(&o).unwrap_err().to_string();
            assert!(
                e.contains("n/j") && e.contains("spec.ttlSecondsAfterFinished"),
                "{e}"
            );
        }
        let o = json!({"metadata": {"name": "j"}, "spec": {"ttlSecondsAfterFinished": 1},
            "status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        assert!(
            Job::from_json(&o)
                .unwrap_err()
                .to_string()
                .contains("unable to find the time")
        );
        let o = json!({"metadata": {"name": "j"}, "spec": {"ttlSecondsAfterFinished": 1},
            "status": {"conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "soon"}]}});
        assert!(
            Job::from_json(&o)
                .unwrap_err()
                .to_string()
                .contains("lastTransitionTime")
        );
    }

    #[test]
    fn the_largest_ttl_does_not_overflow() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let (left, _) = time_left(
            &job(Some(i64::from(i32::MAX)), Some(("Complete", now))),
            now,
        )
        .unwrap();
        assert_eq!(left, jiff::SignedDuration::from_secs(i64::from(i32::MAX)));
    }
}
