//! A Job's `PrepareForCreate` (kubernetes/kubernetes `pkg/registry/batch/job/strategy.go`
//! `generateSelector`): unless the Job asks for a manual selector, the server labels its pod
//! template with the Job's name and uid and selects on the uid, so that a Job's pods are only
//! ever its own. Validation then refuses a template or selector that contradicts them.

use serde_json::{Map, Value};

/// `batch.LegacyJobNameLabel`, `batch.JobNameLabel`.
const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
/// `batch.LegacyControllerUidLabel`, `batch.ControllerUidLabel`.
const CONTROLLER_UID_LABELS: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];

/// Adds the generated labels and selector to a Job being created (its name and uid already set).
/// Labels the user set are kept: a conflict is validation's to report.
pub(crate) fn generate_selector(job: &mut Value) {
    if job.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let meta = &job["metadata"];
    let name = meta["name"].as_str().unwrap_or_default().to_owned();
    let uid = meta["uid"].as_str().unwrap_or_default().to_owned();
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let template = object_at(spec, "template");
    let template_meta = object_at(template, "metadata");
    let labels = object_at(template_meta, "labels");
    for (keys, value) in [(JOB_NAME_LABELS, &name), (CONTROLLER_UID_LABELS, &uid)] {
        for key in keys {
            labels
                .entry(key)
                .or_insert_with(|| Value::from(value.as_str()));
        }
    }
    let selector = object_at(spec, "selector");
    object_at(selector, "matchLabels")
        .entry(CONTROLLER_UID_LABELS[1])
        .or_insert_with(|| Value::from(uid));
}

/// The object under `key`, made one when absent or not an object.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut().expect("made an object above")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_the_template_and_selects_on_the_uid() {
        let mut job = json!({"metadata": {"name": "pi", "uid": "u-1"},
            "spec": {"template": {"metadata": {"labels": {"job-name": "mine"}}, "spec": {}}}});
        generate_selector(&mut job);
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"],
            json!({"job-name": "mine", "batch.kubernetes.io/job-name": "pi",
                   "controller-uid": "u-1", "batch.kubernetes.io/controller-uid": "u-1"})
        );
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
        );
    }

    #[test]
    fn a_manual_selector_is_left_alone() {
        let mut job = json!({"metadata": {"name": "pi", "uid": "u-1"},
            "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}});
        let before = job.clone();
        generate_selector(&mut job);
        assert_eq!(job, before);
    }
}
