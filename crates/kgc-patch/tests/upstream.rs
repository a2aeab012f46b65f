//! The server-side half of upstream's strategic merge patch tests, ported from kubernetes/kubernetes
//! `staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch_test.go`
//! (`TestCustomStrategicMergePatch`, `TestStrategicMergePatch`, `TestReplaceWithRawExtension`,
//! `TestUnknownField`). The cases live in `testdata/upstream_cases.yaml`, each under its upstream
//! description. For every case, `apply(original, twoWay)` must give `twoWayResult` (or
//! `modified`), and `apply(current, threeWay)` must give `result`; `expectedError` cases must
//! fail with an error containing that text.
//!
//! Upstream compares results after `sortMergeListsByName` for the map-literal tables; here every
//! comparison is exact, order included (the expected documents are written in the order the
//! server produces, which upstream's raw tables check too).

use kgc_patch::strategic::{FieldMeta, Fields, Schema, apply};
use serde_json::Value;

/// Upstream's `MergeItem` test struct:
/// ```go
/// type MergeItem struct {
///     Name, Value, Other    string
///     MergingList           []MergeItem `patchStrategy:"merge" patchMergeKey:"name"`
///     NonMergingList        []MergeItem
///     MergingIntList        []int `patchStrategy:"merge"`
///     NonMergingIntList     []int
///     MergeItemPtr          *MergeItem `patchStrategy:"merge" patchMergeKey:"name"`
///     SimpleMap             map[string]string
///     ReplacingItem         runtime.RawExtension `patchStrategy:"replace"`
///     RetainKeysMap         RetainKeysMergeItem `patchStrategy:"retainKeys"`
///     RetainKeysMergingList []MergeItem `patchStrategy:"merge,retainKeys" patchMergeKey:"name"`
/// }
/// ```
static MERGE_ITEM: Fields = Fields::new(&[
    ("mergingList", FieldMeta::merge_list("name", &MERGE_ITEM)),
    ("mergingIntList", FieldMeta::merge_set()),
    ("mergeItemPtr", FieldMeta::merge_list("name", &MERGE_ITEM)),
    ("replacingItem", FieldMeta::replace()),
    (
        "retainKeysMap",
        FieldMeta::object(&RETAIN_KEYS_MERGE_ITEM).retain_keys(),
    ),
    (
        "retainKeysMergingList",
        FieldMeta::merge_list("name", &MERGE_ITEM).retain_keys(),
    ),
]);

/// Upstream's `RetainKeysMergeItem`.
static RETAIN_KEYS_MERGE_ITEM: Fields = Fields::new(&[
    ("mergingIntList", FieldMeta::merge_set()),
    ("mergingList", FieldMeta::merge_list("name", &MERGE_ITEM)),
]);

const SCHEMA: Schema = Schema::new(&MERGE_ITEM);

fn cases() -> Vec<Value> {
    let text = include_str!("testdata/upstream_cases.yaml");
    match serde_saphyr::from_str::<Value>(text).expect("test data parses") {
        Value::Array(cases) => cases,
        other => panic!("test data is not a list: {other}"),
    }
}

/// Runs every case of one upstream table; reports all failures at once.
fn run(source: &str) -> usize {
    let mut failures = Vec::new();
    let mut count = 0;
    for case in cases().iter().filter(|c| c["source"] == source) {
        count += 1;
        let desc = case["description"].as_str().unwrap();
        let empty = Value::Object(Default::default());
        let original = case.get("original").unwrap_or(&empty);
        if let Some(want_err) = case.get("expectedError").and_then(Value::as_str) {
            match apply(original, &case["twoWay"], SCHEMA) {
                Err(e) if e.to_string().contains(want_err) => {}
                other => failures.push(format!(
                    "{desc}: expected an error containing {want_err:?}, got {other:?}"
                )),
            }
            continue;
        }
        if let Some(two_way) = case.get("twoWay") {
            let want = case
                .get("twoWayResult")
                .or_else(|| case.get("modified"))
                .expect("twoWayResult or modified");
            match apply(original, two_way, SCHEMA) {
                Ok(got) if &got == want => {}
                other => failures.push(format!(
                    "{desc} (two-way):\n  original: {original}\n  patch:    {two_way}\n  want:     {want}\n  got:      {other:?}"
                )),
            }
        }
        if let Some(three_way) = case.get("threeWay") {
            let current = case.get("current").unwrap_or(&empty);
            let want = &case["result"];
            match apply(current, three_way, SCHEMA) {
                Ok(got) if &got == want => {}
                other => failures.push(format!(
                    "{desc} (three-way):\n  current: {current}\n  patch:   {three_way}\n  want:    {want}\n  got:     {other:?}"
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} cases of {source} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    count
}

/// upstream `TestCustomStrategicMergePatch`, table `customStrategicMergePatchTestCaseData`.
#[test]
fn custom_strategic_merge_patch_cases() {
    assert_eq!(run("customStrategicMergePatchTestCaseData"), 18);
}

/// upstream `TestCustomStrategicMergePatch`, table `customStrategicMergePatchRawTestCases`.
#[test]
fn custom_strategic_merge_patch_raw_cases() {
    assert_eq!(run("customStrategicMergePatchRawTestCases"), 5);
}

/// upstream `TestStrategicMergePatch`, table `createStrategicMergePatchTestCaseData`.
#[test]
fn create_strategic_merge_patch_cases() {
    assert_eq!(run("createStrategicMergePatchTestCaseData"), 22);
}

/// upstream `TestStrategicMergePatch`, table `strategicMergePatchRawTestCases`.
#[test]
fn strategic_merge_patch_raw_cases() {
    assert!(run("strategicMergePatchRawTestCases") >= 90);
}

/// upstream `TestReplaceWithRawExtension`, table `replaceRawExtensionPatchTestCases`.
#[test]
fn replace_raw_extension_cases() {
    assert_eq!(run("replaceRawExtensionPatchTestCases"), 2);
}

/// upstream `TestUnknownField` (the cases that get as far as applying a patch).
#[test]
fn unknown_field_cases() {
    assert_eq!(run("TestUnknownField"), 3);
}

/// Every case of the data file belongs to one of the tables above.
#[test]
fn every_case_is_run() {
    let known = [
        "customStrategicMergePatchTestCaseData",
        "customStrategicMergePatchRawTestCases",
        "createStrategicMergePatchTestCaseData",
        "strategicMergePatchRawTestCases",
        "replaceRawExtensionPatchTestCases",
        "TestUnknownField",
    ];
    for c in cases() {
        assert!(
            known.iter().any(|k| c["source"] == *k),
            "unknown source in {c}"
        );
    }
}
