//! batch/v1 CronJob, following kubernetes/kubernetes `pkg/apis/batch/validation/validation.go`
//! (`ValidateCronJobCreate`, `ValidateCronJobUpdate`, `validateCronJobSpec`,
//! `validateScheduleFormat`, `validateTimeZone`, `validateConcurrencyPolicy`,
//! `ValidateJobTemplateSpec`).

use serde_json::Value;

use crate::cron::{load_location, parse_standard};
use crate::field::{Errors, Path};
use crate::job::validate_job_spec;
use crate::json::Json;
use crate::labels::render_selector;

/// The Job name gets an 11-character `-<timestamp>` suffix and must stay a 63-character label.
const MAX_NAME: usize = 63 - 11;

/// A CronJob create or update (its `status` has no rules).
pub(crate) fn cron_job(obj: &Value, old: Option<&Value>, errs: &mut Errors) {
    let old_spec = old.map(|o| o.at("spec"));
    spec(obj.at("spec"), old_spec, errs);
    let name = obj.at("metadata").str_of("name");
    // Only on create, so CronJobs from before the limit can still be updated and deleted.
    if old.is_none() && name.len() > MAX_NAME {
        errs.invalid("metadata.name", name, "must be no more than 52 characters");
    }
}

/// `validateCronJobSpec`.
fn spec(spec: &Value, old: Option<&Value>, errs: &mut Errors) {
    let schedule = spec.str_of("schedule");
    let time_zone = spec.opt_str("timeZone");
    if schedule.is_empty() {
        errs.required("spec.schedule", "");
    } else {
        if let Err(e) = parse_standard(schedule) {
            errs.invalid("spec.schedule", schedule, e);
        }
        // Schedules that already used TZ may keep it, but not alongside timeZone.
        let allow_tz = old.is_some_and(|o| o.str_of("schedule").contains("TZ"));
        if schedule.contains("TZ") {
            if !allow_tz {
                errs.invalid(
                    "spec.schedule",
                    schedule,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                );
            } else if time_zone.is_some() {
                errs.invalid(
                    "spec.schedule",
                    schedule,
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                );
            }
        }
    }
    if let Some(d) = spec.opt_int("startingDeadlineSeconds") {
        errs.nonnegative("spec.startingDeadlineSeconds", d);
    }
    if old.is_none_or(|o| o.opt_str("timeZone") != time_zone)
        && let Some(tz) = time_zone
    {
        validate_time_zone(tz, errs);
    }
    errs.one_of(
        "spec.concurrencyPolicy",
        spec.str_of("concurrencyPolicy"),
        &["Allow", "Forbid", "Replace"],
    );
    let template = spec.at("jobTemplate").at("spec");
    validate_job_spec(template, &Path::new("spec.jobTemplate.spec"), errs);
    let sel = template.at("selector");
    if !sel.is_null() {
        errs.invalid_raw(
            "spec.jobTemplate.spec.selector",
            render_selector(sel),
            "`selector` will be auto-generated",
        );
    }
    if template.opt_bool("manualSelector") == Some(true) {
        errs.not_supported_raw(
            "spec.jobTemplate.spec.manualSelector",
            "true".to_owned(),
            &["nil", "false"],
        );
    }
    for field in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        if let Some(n) = spec.opt_int(field) {
            errs.nonnegative(Path::new("spec").child(field), n);
        }
    }
}

/// `validateTimeZone`: an IANA name the time-zone database knows, not `Local`.
fn validate_time_zone(tz: &str, errs: &mut Errors) {
    const PATH: &str = "spec.timeZone";
    if tz.is_empty() {
        errs.invalid_typed(PATH, tz, "timeZone must be nil or non-empty string");
        return;
    }
    // IANA naming: components of at most 14 of `[A-Za-z.-_0-9+]`, not `.`/`..`, no leading `-`.
    let bad_part = tz.split('/').any(|part| {
        part == "."
            || part == ".."
            || part.starts_with('-')
            || part.is_empty()
            || part.len() > 14
            || !part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
    });
    if bad_part {
        errs.invalid_typed(PATH, tz, format!("unknown time zone {tz}"));
        return;
    }
    if tz.eq_ignore_ascii_case("Local") {
        errs.invalid_typed(
            PATH,
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        );
    }
    if let Err(e) = load_location(tz) {
        errs.invalid_typed(PATH, tz, e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::set;
    use serde_json::json;

    fn valid() -> Value {
        json!({"metadata": {"name": "hello", "namespace": "ns"}, "spec": {
            "schedule": "*/5 * * * ?", "concurrencyPolicy": "Allow",
            "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
            "jobTemplate": {"spec": {"template": {"spec": {
                "containers": [{"name": "c", "image": "busybox", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}],
                "restartPolicy": "OnFailure", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30}}}},
        }})
    }

    fn run(obj: &Value, old: Option<&Value>) -> Vec<String> {
        crate::testutil::messages(|e| cron_job(obj, old, e))
    }

    /// `TestValidateCronJob` (create).
    #[test]
    fn test_validate_cron_job() {
        assert!(run(&valid(), None).is_empty());
        assert!(run(&set(valid(), "/spec/schedule", json!("@hourly")), None).is_empty());
        assert!(
            run(
                &set(valid(), "/spec/timeZone", json!("America/New_York")),
                None
            )
            .is_empty()
        );
        assert_eq!(
            run(&set(valid(), "/spec/schedule", json!("error")), None),
            vec![
                "spec.schedule: Invalid value: \"error\": expected exactly 5 fields, found 1: [error]"
            ]
        );
        assert_eq!(
            run(&set(valid(), "/spec/schedule", json!("")), None),
            vec!["spec.schedule: Required value"]
        );
        assert_eq!(
            run(
                &set(valid(), "/spec/schedule", json!("TZ=UTC 0 * * * *")),
                None
            ),
            vec![
                "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
            ]
        );
        assert_eq!(
            run(&set(valid(), "/spec/timeZone", json!("Local")), None),
            vec![
                "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
            ]
        );
        assert_eq!(
            run(
                &set(valid(), "/spec/timeZone", json!("Continent/Nowhere")),
                None
            ),
            vec![
                "spec.timeZone: Invalid value: \"Continent/Nowhere\": unknown time zone Continent/Nowhere"
            ]
        );
        assert_eq!(
            run(&set(valid(), "/spec/timeZone", json!("")), None),
            vec!["spec.timeZone: Invalid value: \"\": timeZone must be nil or non-empty string"]
        );
        assert_eq!(
            run(
                &set(valid(), "/spec/concurrencyPolicy", json!("Sometimes")),
                None
            ),
            vec![
                "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\""
            ]
        );
        assert_eq!(
            run(
                &set(
                    set(valid(), "/spec/successfulJobsHistoryLimit", json!(-1)),
                    "/spec/startingDeadlineSeconds",
                    json!(-1)
                ),
                None
            ),
            vec![
                "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/jobTemplate/spec/template/spec/restartPolicy",
                    json!("Always")
                ),
                None
            ),
            vec![
                "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
            ]
        );
        let selector = set(
            set(
                valid(),
                "/spec/jobTemplate/spec/selector",
                json!({"matchLabels": {"a": "b"}}),
            ),
            "/spec/jobTemplate/spec/manualSelector",
            json!(true),
        );
        assert_eq!(
            run(&selector, None),
            vec![
                "spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated",
                "spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: \"nil\", \"false\"",
            ]
        );
        let long = "a".repeat(53);
        assert_eq!(
            run(&set(valid(), "/metadata/name", json!(long)), None),
            vec![format!(
                "metadata.name: Invalid value: \"{long}\": must be no more than 52 characters"
            )]
        );
    }

    /// `TestValidateCronJobUpdate`: TZ may stay in an old schedule, but not with `timeZone`.
    #[test]
    fn test_validate_cron_job_update() {
        let old = set(valid(), "/spec/schedule", json!("CRON_TZ=UTC 0 * * * *"));
        assert!(
            run(
                &set(
                    old.clone(),
                    "/spec/schedule",
                    json!("CRON_TZ=UTC 5 * * * *")
                ),
                Some(&old)
            )
            .is_empty()
        );
        assert_eq!(
            run(
                &set(old.clone(), "/spec/timeZone", json!("UTC")),
                Some(&old)
            ),
            vec![
                "spec.schedule: Invalid value: \"CRON_TZ=UTC 0 * * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule"
            ]
        );
        let long = set(valid(), "/metadata/name", json!("a".repeat(60)));
        assert!(run(&long, Some(&long)).is_empty());
    }
}
