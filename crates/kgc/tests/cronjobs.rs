//! The CronJob controller against a spawned durable `kgc serve` running it alone
//! (`--controllers=-*,cronjob`): the test forges what the Job controller would write (a Job's
//! Complete or Failed status). Time passes by restarting the server with a larger hidden
//! `--clock-offset`, so each restart is the next minute (or hour) of the schedule. The first
//! offset puts the server's clock a few seconds past a minute, so no real minute boundary
//! passes during a test and each restart starts exactly one Job.

kgc_testsupport::bind_kgc!();

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Event;
use kgc_testsupport::*;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(20);

/// A server whose clock, `minutes` after the first start, is a few seconds past a minute.
struct Clocked {
    server: Server,
    base_secs: u64,
    controllers: &'static str,
}

impl Clocked {
    /// The CronJob controller alone.
    async fn start() -> Self {
        Self::start_running("-*,cronjob").await
    }

    /// With `--controllers=CONTROLLERS`.
    async fn start_running(controllers: &'static str) -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        // Five seconds past the next minute.
        let base_secs = (65 - now % 60) % 60;
        let args = Self::args(controllers, base_secs);
        let server = Server::living(&args.iter().map(String::as_str).collect::<Vec<_>>()).await;
        Clocked {
            server,
            base_secs,
            controllers,
        }
    }

    fn args(controllers: &str, offset_secs: u64) -> Vec<String> {
        vec![
            format!("--controllers={controllers}"),
            "--clock-offset".into(),
            format!("{offset_secs}s"),
        ]
    }

    /// Restarts the server `minutes` minutes later than the first start.
    async fn at_minute(&mut self, minutes: u64) {
        let args = Self::args(self.controllers, self.base_secs + minutes * 60);
        self.server
            .restart_with(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .await;
    }

    fn client(&self) -> Client {
        self.server.client()
    }
}

fn cronjob(name: &str, schedule: &str, spec: Value) -> CronJob {
    let mut cj = json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": {
            "metadata": {"labels": {"cron": name}},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}},
    });
    if let (Some(s), Some(extra)) = (cj["spec"].as_object_mut(), spec.as_object()) {
        s.extend(extra.clone());
    }
    typed(cj)
}

async fn create(c: &Client, ns: &str, cj: &CronJob) -> CronJob {
    Api::<CronJob>::namespaced(c.clone(), ns)
        .create(&PostParams::default(), cj)
        .await
        .expect("creating the CronJob")
}

/// The Jobs of the namespace, by name.
async fn jobs(c: &Client, ns: &str) -> Vec<Job> {
    let mut jobs = Api::<Job>::namespaced(c.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("listing Jobs")
        .items;
    jobs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    jobs
}

fn names(jobs: &[Job]) -> Vec<String> {
    jobs.iter()
        .filter_map(|j| j.metadata.name.clone())
        .collect()
}

/// Waits for the namespace to hold `n` Jobs; their names.
async fn wait_jobs(c: &Client, ns: &str, n: usize) -> Vec<String> {
    eventually(&format!("{n} Jobs"), T, || async {
        jobs(c, ns).await.len() == n
    })
    .await;
    names(&jobs(c, ns).await)
}

/// What the Job controller writes when a Job finishes (as the TTL collector's tests forge it).
async fn finish(c: &Client, ns: &str, name: &str, ok: bool) {
    let job = Api::<Job>::namespaced(c.clone(), ns)
        .get(name)
        .await
        .expect("the Job");
    let scheduled = job.metadata.annotations.unwrap_or_default()
        ["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        .clone();
    let (interim, last) = if ok {
        ("SuccessCriteriaMet", "Complete")
    } else {
        ("FailureTarget", "Failed")
    };
    let mut status = json!({"conditions": [
        {"type": interim, "status": "True", "lastTransitionTime": scheduled},
        {"type": last, "status": "True", "lastTransitionTime": scheduled}],
        "startTime": scheduled});
    if ok {
        status["completionTime"] = json!(scheduled);
    }
    Api::<Job>::namespaced(c.clone(), ns)
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .expect("forging the Job's status");
}

/// The reasons of the namespace's events, with their messages.
async fn events(c: &Client, ns: &str) -> Vec<(String, String)> {
    Api::<Event>::namespaced(c.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("listing events")
        .items
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

async fn wait_event(c: &Client, ns: &str, reason: &str, message: &str) {
    eventually(&format!("event {reason}: {message}"), T, || async {
        events(c, ns)
            .await
            .iter()
            .any(|(r, m)| r == reason && m == message)
    })
    .await;
}

async fn status(c: &Client, ns: &str, name: &str) -> k8s_openapi::api::batch::v1::CronJobStatus {
    Api::<CronJob>::namespaced(c.clone(), ns)
        .get(name)
        .await
        .expect("the CronJob")
        .status
        .unwrap_or_default()
}

/// Waits for `job` to be on the CronJob's active list: its status write has landed.
async fn wait_active(c: &Client, ns: &str, cronjob: &str, job: &str) {
    eventually(&format!("{job} active"), T, || async {
        status(c, ns, cronjob)
            .await
            .active
            .unwrap_or_default()
            .iter()
            .any(|r| r.name.as_deref() == Some(job))
    })
    .await;
}

/// The minute a Job of `cronjob` was scheduled for, from its name.
fn minute_of(cronjob: &str, job: &str) -> i64 {
    job.strip_prefix(&format!("{cronjob}-"))
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("{job} is not named <cronjob>-<minute>"))
}

/// Upstream e2e "should delete successful/failed finished jobs with limit": every minute a
/// Job; finished ones beyond `successfulJobsHistoryLimit` and `failedJobsHistoryLimit` are
/// deleted oldest first, running ones never.
#[tokio::test]
async fn test_cronjob_history_limits() {
    let mut s = Clocked::start().await;
    let ns = fresh_namespace(&s.client(), "cron-history").await;
    let cj = create(
        &s.client(),
        &ns,
        &cronjob(
            "hist",
            "* * * * *",
            json!({"successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1}),
        ),
    )
    .await;
    assert_eq!(cj.spec.concurrency_policy.as_deref(), Some("Allow"));

    let mut made = Vec::new();
    for (minute, ok) in [(1, true), (2, false), (3, true), (4, false)] {
        s.at_minute(minute).await;
        let c = s.client();
        eventually("this minute's Job", T, || async {
            names(&jobs(&c, &ns).await)
                .iter()
                .any(|n| !made.contains(n))
        })
        .await;
        let new: Vec<String> = names(&jobs(&c, &ns).await)
            .into_iter()
            .filter(|n| !made.contains(n))
            .collect();
        assert_eq!(new.len(), 1, "one new Job per minute: {new:?}");
        let job = new[0].clone();
        // The Job: the template's labels, the controller reference, the annotation.
        let j = Api::<Job>::namespaced(c.clone(), &ns)
            .get(&job)
            .await
            .unwrap();
        assert_eq!(j.metadata.labels.unwrap_or_default()["cron"], "hist");
        let owner = &j.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.controller),
            ("CronJob", "hist", Some(true))
        );
        let scheduled =
            j.metadata.annotations.unwrap()["batch.kubernetes.io/cronjob-scheduled-timestamp"]
                .clone();
        let at: k8s_openapi::jiff::Timestamp = scheduled.parse().unwrap();
        assert_eq!(at.as_second() / 60, minute_of("hist", &job), "{scheduled}");
        eventually("the Job is active", T, || async {
            let st = status(&c, &ns, "hist").await;
            st.active
                .unwrap_or_default()
                .iter()
                .any(|r| r.name.as_deref() == Some(job.as_str()))
                && st.last_schedule_time.map(|t| t.0) == Some(at)
        })
        .await;
        finish(&c, &ns, &job, ok).await;
        wait_event(
            &c,
            &ns,
            "SawCompletedJob",
            &format!(
                "Saw completed job: {job}, condition: {}",
                if ok { "Complete" } else { "Failed" }
            ),
        )
        .await;
        made.push(job);
    }
    // Kept: the newest of each kind; deleted: the older ones.
    let c = s.client();
    eventually("the oldest finished Jobs deleted", T, || async {
        names(&jobs(&c, &ns).await) == [made[2].clone(), made[3].clone()]
    })
    .await;
    for old in &made[..2] {
        wait_event(&c, &ns, "SuccessfulDelete", &format!("Deleted job {old}")).await;
    }
    let st = status(&c, &ns, "hist").await;
    assert!(st.active.unwrap_or_default().is_empty());
    let success = st.last_successful_time.expect("lastSuccessfulTime").0;
    assert_eq!(success.as_second() / 60, minute_of("hist", &made[2]));
}

/// Forbid: no second Job while the first runs (`JobAlreadyActive`); once it finishes, the
/// latest missed time starts at once.
#[tokio::test]
async fn forbid_skips_while_a_job_runs() {
    let mut s = Clocked::start().await;
    let ns = fresh_namespace(&s.client(), "cron-forbid").await;
    create(
        &s.client(),
        &ns,
        &cronjob(
            "forbid",
            "* * * * *",
            json!({"concurrencyPolicy": "Forbid"}),
        ),
    )
    .await;
    s.at_minute(1).await;
    let first = wait_jobs(&s.client(), &ns, 1).await;
    wait_active(&s.client(), &ns, "forbid", &first[0]).await;
    s.at_minute(2).await;
    let c = s.client();
    wait_event(
        &c,
        &ns,
        "JobAlreadyActive",
        "Not starting job because prior execution is running and concurrency policy is Forbid",
    )
    .await;
    assert_eq!(names(&jobs(&c, &ns).await), first);
    finish(&c, &ns, &first[0], true).await;
    let both = wait_jobs(&c, &ns, 2).await;
    assert_eq!(
        minute_of("forbid", &both[1]),
        minute_of("forbid", &both[0]) + 1,
        "{both:?}"
    );
}

/// Replace: the running Job is deleted and the new one takes its place in `active`.
#[tokio::test]
async fn replace_deletes_the_running_job() {
    let mut s = Clocked::start().await;
    let ns = fresh_namespace(&s.client(), "cron-replace").await;
    create(
        &s.client(),
        &ns,
        &cronjob(
            "replace",
            "* * * * *",
            json!({"concurrencyPolicy": "Replace"}),
        ),
    )
    .await;
    s.at_minute(1).await;
    let first = wait_jobs(&s.client(), &ns, 1).await;
    wait_active(&s.client(), &ns, "replace", &first[0]).await;
    s.at_minute(2).await;
    let c = s.client();
    wait_event(
        &c,
        &ns,
        "SuccessfulDelete",
        &format!("Deleted job {}", first[0]),
    )
    .await;
    eventually("only the new Job, and it is active", T, || async {
        let now = names(&jobs(&c, &ns).await);
        let active = status(&c, &ns, "replace").await.active.unwrap_or_default();
        now.len() == 1
            && now[0] != first[0]
            && active.len() == 1
            && active[0].name.as_deref() == Some(now[0].as_str())
    })
    .await;
}

/// Suspend stops new Jobs; resuming starts the missed time. A start later than
/// `startingDeadlineSeconds` is skipped; of more than 100 missed times the latest starts, with
/// a warning. An hourly schedule in a time zone half an hour off UTC runs on that zone's hours,
/// and its Job's annotation says so. Bad specs are refused by the API server with upstream's
/// messages.
#[tokio::test]
async fn suspend_time_zones_and_validation() {
    let mut s = Clocked::start().await;
    let c = s.client();
    let ns = fresh_namespace(&c, "cron-suspend").await;
    create(
        &c,
        &ns,
        &cronjob("paused", "* * * * *", json!({"suspend": true})),
    )
    .await;
    create(
        &c,
        &ns,
        &cronjob("kolkata", "@hourly", json!({"timeZone": "Asia/Kolkata"})),
    )
    .await;
    // Two hours behind every minute: the latest time runs, with upstream's warning.
    create(&c, &ns, &cronjob("behind", "* * * * *", json!({}))).await;
    // Its last time is 5 s past when the server comes back: beyond a 2 s deadline.
    create(
        &c,
        &ns,
        &cronjob("late", "* * * * *", json!({"startingDeadlineSeconds": 2})),
    )
    .await;
    let bad = |name: &str, schedule: &str, spec: Value| cronjob(name, schedule, spec);
    for (cj, message) in [
        (
            bad("bad-schedule", "61 * * * *", json!({})),
            "CronJob.batch \"bad-schedule\" is invalid: spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61",
        ),
        (
            bad("bad-zone", "* * * * *", json!({"timeZone": "Mars/Olympus"})),
            "CronJob.batch \"bad-zone\" is invalid: spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus",
        ),
        (
            bad(
                "bad-limit",
                "* * * * *",
                json!({"failedJobsHistoryLimit": -1}),
            ),
            "CronJob.batch \"bad-limit\" is invalid: spec.failedJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            bad("bad-tz", "TZ=UTC * * * * *", json!({})),
            "CronJob.batch \"bad-tz\" is invalid: spec.schedule: Invalid value: \"TZ=UTC * * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ),
    ] {
        let status = api_error(
            Api::<CronJob>::namespaced(c.clone(), &ns)
                .create(&PostParams::default(), &cj)
                .await,
        );
        assert_eq!((status.code, status.message.as_str()), (422, message));
    }

    s.at_minute(121).await;
    let c = s.client();
    // The hourly Job: at a whole hour in Kolkata, which is half past in UTC.
    let made = wait_jobs(&c, &ns, 2).await;
    assert!(
        made[0].starts_with("behind-") && made[1].starts_with("kolkata-"),
        "{made:?}"
    );
    wait_event(
        &c,
        &ns,
        "TooManyMissedTimes",
        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
    )
    .await;
    let made = &made[1..];
    let job = Api::<Job>::namespaced(c.clone(), &ns)
        .get(&made[0])
        .await
        .unwrap();
    let scheduled =
        job.metadata.annotations.unwrap()["batch.kubernetes.io/cronjob-scheduled-timestamp"]
            .clone();
    assert!(scheduled.ends_with(":00:00+05:30"), "{scheduled}");
    assert_eq!(minute_of("kolkata", &made[0]) % 60, 30, "{scheduled}");
    // Suspended: nothing for it.
    consistently(
        "no Job while suspended or too late",
        Duration::from_secs(2),
        || async {
            !names(&jobs(&c, &ns).await)
                .iter()
                .any(|n| n.starts_with("paused-") || n.starts_with("late-"))
        },
    )
    .await;
    Api::<CronJob>::namespaced(c.clone(), &ns)
        .patch(
            "paused",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": false}})),
        )
        .await
        .expect("resuming");
    eventually("the resumed CronJob's Job", T, || async {
        names(&jobs(&c, &ns).await)
            .iter()
            .any(|n| n.starts_with("paused-"))
    })
    .await;
}

/// With every controller on, the CronJob's Job runs its pod to completion (the Job controller,
/// the scheduler and the simulated kubelet), and `successfulJobsHistoryLimit: 0` deletes it
/// once it is finished.
#[tokio::test]
async fn a_living_cluster_runs_the_job_and_keeps_no_history() {
    let mut s = Clocked::start_running("*").await;
    let ns = fresh_namespace(&s.client(), "cron-living").await;
    create(
        &s.client(),
        &ns,
        &cronjob(
            "living",
            "* * * * *",
            json!({"successfulJobsHistoryLimit": 0}),
        ),
    )
    .await;
    s.at_minute(1).await;
    let c = s.client();
    let made = wait_jobs(&c, &ns, 1).await;
    let job = &made[0];
    // Deleted as soon as it is finished: the history cleanup comes first in a sync, and takes
    // it off the active list itself (upstream's order, so no `SawCompletedJob`).
    wait_event(&c, &ns, "SuccessfulDelete", &format!("Deleted job {job}")).await;
    eventually("the Job gone", T, || async {
        jobs(&c, &ns).await.is_empty()
    })
    .await;
    // The status is written after the deletion, in the same sync.
    eventually("lastSuccessfulTime and nothing active", T, || async {
        let st = status(&c, &ns, "living").await;
        st.last_successful_time.is_some() && st.active.as_ref().is_none_or(Vec::is_empty)
    })
    .await;
}
