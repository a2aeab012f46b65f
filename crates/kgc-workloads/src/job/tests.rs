use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kgc_runtime::informer::View;

use super::*;

fn spec(completions: Option<i32>, parallelism: i32) -> JobSpec {
    JobSpec {
        completions,
        parallelism: Some(parallelism),
        ..JobSpec::default()
    }
}

#[test]
fn active_wanted_by_completions_and_parallelism() {
    assert_eq!(want_active(&spec(Some(3), 2), 0, 0), 2);
    assert_eq!(want_active(&spec(Some(3), 2), 2, 2), 1);
    assert_eq!(want_active(&spec(Some(3), 2), 0, 4), 0);
    // Work queue Jobs: parallelism until one succeeds, then what runs.
    assert_eq!(want_active(&spec(None, 3), 0, 0), 3);
    assert_eq!(want_active(&spec(None, 3), 2, 1), 2);
}

#[test]
fn deadline_counts_from_the_start_unless_suspended() {
    let start = jiff::Timestamp::from_second(1000).unwrap();
    let st = JobStatus {
        start_time: Some(Time(start)),
        ..JobStatus::default()
    };
    let mut s = JobSpec {
        active_deadline_seconds: Some(10),
        ..JobSpec::default()
    };
    let at = |secs| jiff::Timestamp::from_second(secs).unwrap();
    assert_eq!(
        deadline_left(&s, &st, at(1004)),
        Some(Duration::from_secs(6))
    );
    assert_eq!(deadline_left(&s, &st, at(1020)), Some(Duration::ZERO));
    s.suspend = Some(true);
    assert_eq!(deadline_left(&s, &st, at(1020)), None);
    assert_eq!(deadline_left(&JobSpec::default(), &st, at(1020)), None);
}

#[test]
fn pods_carry_the_finalizer_and_their_index() {
    let owner = Owner {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: "pi".into(),
        uid: "u".into(),
        deleting: false,
    };
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some([("job-name".to_owned(), "pi".to_owned())].into()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    };
    let plain = job_pod(&template, "ns", &owner, None);
    assert_eq!(plain.metadata.generate_name.as_deref(), Some("pi-"));
    assert_eq!(
        plain.metadata.finalizers,
        Some(vec![TRACKING_FINALIZER.to_owned()])
    );
    let r = &plain.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (r.controller, r.block_owner_deletion),
        (Some(true), Some(true))
    );
    let indexed = job_pod(&template, "ns", &owner, Some(2));
    assert_eq!(indexed.metadata.generate_name.as_deref(), Some("pi-2-"));
    assert_eq!(indexed.metadata.annotations.unwrap()[COMPLETION_INDEX], "2");
    assert_eq!(indexed.metadata.labels.unwrap()[COMPLETION_INDEX], "2");
    let spec = indexed.spec.unwrap();
    assert_eq!(spec.hostname.as_deref(), Some("pi-2"));
    assert_eq!(
        spec.containers[0].env.as_ref().unwrap()[0].name,
        "JOB_COMPLETION_INDEX"
    );
}

#[test]
fn restarts_count_against_the_limit_on_failure() {
    let mut s = JobSpec {
        backoff_limit: Some(2),
        ..JobSpec::default()
    };
    s.template.spec = Some(PodSpec {
        restart_policy: Some("OnFailure".into()),
        ..PodSpec::default()
    });
    let pod = |restarts| {
        let mut p = JobPod::view(
            &json!({"metadata": {"name": "p", "uid": "u"}, "status": {"phase": "Running"}}),
        )
        .unwrap();
        p.pod.restarts = restarts;
        p
    };
    assert!(!past_backoff_limit_on_failure(&s, &[pod(1)]));
    assert!(past_backoff_limit_on_failure(&s, &[pod(1), pod(1)]));
    s.template.spec.as_mut().unwrap().restart_policy = Some("Never".into());
    assert!(!past_backoff_limit_on_failure(&s, &[pod(5)]));
}
