//! A Job's conditions and counters (`kubernetes/kubernetes pkg/controller/job/
//! job_controller.go`, `ensureJobConditionStatus`, `cleanUncountedPodsWithoutFinalizers`;
//! `pkg/controller/job/util/utils.go`, `IsJobFinished`).
//!
//! As upstream since 1.31, a Job first gets an interim condition — `SuccessCriteriaMet` or
//! `FailureTarget` — and the terminal one (`Complete` or `Failed`) only once every pod is
//! counted and none is left terminating, so a client that sees `Complete` knows the pods are
//! done.

use std::collections::HashSet;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus, UncountedTerminatedPods};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub const COMPLETE: &str = "Complete";
pub const FAILED: &str = "Failed";
pub const SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";
pub const FAILURE_TARGET: &str = "FailureTarget";
pub const SUSPENDED: &str = "Suspended";

/// `batch.JobReasonBackoffLimitExceeded` and the others.
pub const BACKOFF_LIMIT_EXCEEDED: &str = "BackoffLimitExceeded";
pub const DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
pub const COMPLETIONS_REACHED: &str = "CompletionsReached";

/// The condition of `type_` whose status is True.
pub fn true_condition<'a>(status: &'a JobStatus, type_: &str) -> Option<&'a JobCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_ && c.status == "True")
}

/// Complete or Failed (upstream `IsJobFinished`): the controller leaves it alone.
pub fn is_finished(job: &Job) -> bool {
    job.status.as_ref().is_some_and(|s| {
        true_condition(s, COMPLETE).is_some() || true_condition(s, FAILED).is_some()
    })
}

pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> JobCondition {
    JobCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// Sets the condition of `type_` to `status` (upstream `ensureJobConditionStatus`): a missing
/// condition is only added when True. Whether anything changed.
pub fn ensure(
    status: &mut JobStatus,
    type_: &str,
    value: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> bool {
    let list = status.conditions.get_or_insert_with(Vec::new);
    match list.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status == value
                && c.reason.as_deref() == Some(reason)
                && c.message.as_deref() == Some(message)
            {
                return false;
            }
            let transition = c.status != value;
            c.status = value.to_owned();
            c.reason = Some(reason.to_owned());
            c.message = Some(message.to_owned());
            c.last_probe_time = Some(Time(now));
            if transition {
                c.last_transition_time = Some(Time(now));
            }
            true
        }
        None if value == "True" => {
            list.push(new_condition(type_, value, reason, message, now));
            true
        }
        None => false,
    }
}

/// The uids counted as finished but not yet in the counters.
#[derive(Debug, Default, Clone)]
pub struct Uncounted {
    pub succeeded: HashSet<String>,
    pub failed: HashSet<String>,
}

impl Uncounted {
    pub fn of(status: &JobStatus) -> Self {
        let u = status.uncounted_terminated_pods.clone().unwrap_or_default();
        Self {
            succeeded: u.succeeded.unwrap_or_default().into_iter().collect(),
            failed: u.failed.unwrap_or_default().into_iter().collect(),
        }
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.succeeded.contains(uid) || self.failed.contains(uid)
    }
}

/// Moves the uncounted pods that no longer hold the finalizer into the counters (upstream
/// `cleanUncountedPodsWithoutFinalizers`); whether the status changed.
pub fn clean_uncounted(status: &mut JobStatus, with_finalizer: &HashSet<String>) -> bool {
    let u = status
        .uncounted_terminated_pods
        .get_or_insert_with(UncountedTerminatedPods::default);
    let mut changed = false;
    for (list, counter) in [
        (&mut u.succeeded, &mut status.succeeded),
        (&mut u.failed, &mut status.failed),
    ] {
        let uids = list.get_or_insert_with(Vec::new);
        let before = uids.len();
        uids.retain(|uid| with_finalizer.contains(uid));
        let moved = before - uids.len();
        if moved > 0 {
            changed = true;
            *counter = Some(counter.unwrap_or(0) + i32::try_from(moved).unwrap_or(i32::MAX));
        }
    }
    changed
}

/// Adds `uid` to the uncounted succeeded (or failed) pods.
pub fn add_uncounted(status: &mut JobStatus, uid: &str, succeeded: bool) {
    let u = status
        .uncounted_terminated_pods
        .get_or_insert_with(UncountedTerminatedPods::default);
    let list = if succeeded {
        &mut u.succeeded
    } else {
        &mut u.failed
    };
    list.get_or_insert_with(Vec::new).push(uid.to_owned());
}

/// How many pods are uncounted.
pub fn uncounted_len(status: &JobStatus) -> usize {
    status.uncounted_terminated_pods.as_ref().map_or(0, |u| {
        u.succeeded.as_ref().map_or(0, Vec::len) + u.failed.as_ref().map_or(0, Vec::len)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_once_the_finalizer_is_gone() {
        let mut s = JobStatus {
            succeeded: Some(1),
            ..JobStatus::default()
        };
        add_uncounted(&mut s, "a", true);
        add_uncounted(&mut s, "b", true);
        add_uncounted(&mut s, "c", false);
        assert_eq!(uncounted_len(&s), 3);
        let still = HashSet::from(["b".to_owned()]);
        assert!(clean_uncounted(&mut s, &still));
        assert_eq!((s.succeeded, s.failed), (Some(2), Some(1)));
        assert_eq!(Uncounted::of(&s).succeeded, still);
        assert!(!clean_uncounted(&mut s, &still));
    }

    #[test]
    fn conditions_are_added_true_and_flipped_in_place() {
        let now = Timestamp::from_second(10).unwrap();
        let mut s = JobStatus::default();
        assert!(!ensure(
            &mut s,
            SUSPENDED,
            "False",
            "JobResumed",
            "Job resumed",
            now
        ));
        assert!(ensure(
            &mut s,
            SUSPENDED,
            "True",
            "JobSuspended",
            "Job suspended",
            now
        ));
        assert!(!ensure(
            &mut s,
            SUSPENDED,
            "True",
            "JobSuspended",
            "Job suspended",
            now
        ));
        assert!(ensure(
            &mut s,
            SUSPENDED,
            "False",
            "JobResumed",
            "Job resumed",
            now
        ));
        assert_eq!(s.conditions.as_ref().map(Vec::len), Some(1));
        assert!(true_condition(&s, SUSPENDED).is_none());
        let job = Job {
            status: Some(JobStatus {
                conditions: Some(vec![new_condition(
                    COMPLETE,
                    "True",
                    COMPLETIONS_REACHED,
                    "",
                    now,
                )]),
                ..JobStatus::default()
            }),
            ..Job::default()
        };
        assert!(is_finished(&job));
    }
}
