//! Labels, annotations and `metav1.LabelSelector`s inside specs (pod templates, workload and
//! claim selectors, node selectors), following apimachinery `pkg/apis/meta/v1/validation`
//! (`ValidateLabels`, `ValidateLabelSelector`), `pkg/api/validation/objectmeta.go`
//! (`ValidateAnnotations`) and `metav1.LabelSelectorAsSelector` for matching.

use std::borrow::Cow;

use kgc_meta::gojson::go_json;
use kgc_meta::validation::{TOTAL_ANNOTATION_SIZE_LIMIT, is_label_value, is_qualified_name};
use serde_json::Value;

use crate::field::{Errors, Path, typed};
use crate::json::{Json, string_map, strings};

/// `ValidateLabels`: keys are qualified names, values label values; both errors name the map.
pub(crate) fn validate_labels(v: &Value, key: &str, path: &Path<'_>, errs: &mut Errors) {
    for (k, val) in string_map(v, key) {
        errs.invalid_each(path, k, is_qualified_name(k));
        errs.invalid_each(path, val, is_label_value(val));
    }
}

/// `ValidateAnnotations`: keys are qualified names (case-insensitively) and the total size is
/// bounded.
pub(crate) fn validate_annotations(v: &Value, key: &str, path: &Path<'_>, errs: &mut Errors) {
    let mut total = 0usize;
    for (k, val) in string_map(v, key) {
        errs.invalid_each(path, k, is_qualified_name(&to_lower(k)));
        total = total.saturating_add(k.len() + val.len());
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT);
    }
}

/// `strings.ToLower` for the case-insensitive checks (annotation keys, provisioner and driver
/// names), copying only when there is something to lower.
pub(crate) fn to_lower(s: &str) -> Cow<'_, str> {
    if s.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii()) {
        Cow::Owned(s.to_lowercase())
    } else {
        Cow::Borrowed(s)
    }
}

const OPERATORS: [&str; 4] = ["In", "NotIn", "Exists", "DoesNotExist"];

/// `ValidateLabelSelector` of the selector under `key` (nothing when it is unset).
/// `allow_invalid_values` is upstream's `AllowInvalidLabelValueInSelector`.
pub(crate) fn validate_selector(
    sel: &Value,
    allow_invalid_values: bool,
    path: &Path<'_>,
    errs: &mut Errors,
) {
    if sel.is_null() {
        return;
    }
    validate_labels(sel, "matchLabels", &path.child("matchLabels"), errs);
    let exprs = path.child("matchExpressions");
    for (i, e) in sel.list("matchExpressions").iter().enumerate() {
        let p = exprs.index(i);
        let values = strings(e, "values");
        match e.str_of("operator") {
            "In" | "NotIn" if values.is_empty() => errs.required(
                p.child("values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            ),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.forbidden(
                p.child("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
            op if OPERATORS.contains(&op) => {}
            op => errs.invalid_typed(p.child("operator"), op, "not a valid selector operator"),
        }
        let k = e.str_of("key");
        errs.invalid_each(p.child("key"), k, is_qualified_name(k));
        if !allow_invalid_values {
            for (j, val) in values.iter().enumerate() {
                errs.invalid_each(p.child("values").index(j), val, is_label_value(val));
            }
        }
    }
}

/// A selector that must be set: `Required` when it is not, else validated. Returns whether
/// it is set.
pub(crate) fn validate_required_selector(sel: &Value, path: &Path<'_>, errs: &mut Errors) -> bool {
    if sel.is_null() {
        errs.required(path, "");
        return false;
    }
    validate_selector(sel, false, path, errs);
    true
}

/// Whether the selector has no requirement at all (`matchLabels` and `matchExpressions` empty).
pub(crate) fn is_empty_selector(sel: &Value) -> bool {
    sel.obj("matchLabels").is_none_or(|m| m.is_empty()) && sel.list("matchExpressions").is_empty()
}

/// One requirement of a selector converted with `LabelSelectorAsSelector`.
pub(crate) enum Requirement<'a> {
    Equals(&'a str, &'a str),
    In(&'a str, Vec<&'a str>),
    NotIn(&'a str, Vec<&'a str>),
    Exists(&'a str),
    DoesNotExist(&'a str),
}

/// A `metav1.LabelSelector` as `labels.Selector`: a nil selector selects nothing, an empty one
/// everything.
pub(crate) enum Selector<'a> {
    Nothing,
    Everything,
    Requirements(Vec<Requirement<'a>>),
}

impl<'a> Selector<'a> {
    /// `metav1.LabelSelectorAsSelector`; `None` where upstream returns an error (an unknown
    /// operator, a bad value count, or a key or value that is not a valid label).
    pub(crate) fn from_json(sel: &'a Value) -> Option<Self> {
        if sel.is_null() {
            return Some(Self::Nothing);
        }
        if is_empty_selector(sel) {
            return Some(Self::Everything);
        }
        let valid_key = |k: &str| is_qualified_name(k).is_empty();
        let valid_value = |v: &str| is_label_value(v).is_empty();
        let mut reqs = Vec::new();
        for (k, v) in string_map(sel, "matchLabels") {
            if !valid_key(k) || !valid_value(v) {
                return None;
            }
            reqs.push(Requirement::Equals(k, v));
        }
        for e in sel.list("matchExpressions") {
            let k = e.str_of("key");
            let values = strings(e, "values");
            if !valid_key(k) || !values.iter().all(|v| valid_value(v)) {
                return None;
            }
            reqs.push(match (e.str_of("operator"), values.is_empty()) {
                ("In", false) => Requirement::In(k, values),
                ("NotIn", false) => Requirement::NotIn(k, values),
                ("Exists", true) => Requirement::Exists(k),
                ("DoesNotExist", true) => Requirement::DoesNotExist(k),
                _ => return None,
            });
        }
        Some(Self::Requirements(reqs))
    }

    /// `labels.Selector.Empty()`: true only for the select-everything selector.
    pub(crate) fn is_everything(&self) -> bool {
        matches!(self, Self::Everything)
    }

    /// `labels.Selector.Matches` against the label map under `key` of `obj`.
    pub(crate) fn matches(&self, obj: &Value, key: &str) -> bool {
        let labels = obj.at(key);
        let get = |k: &str| labels.get(k).map(|v| v.as_str().unwrap_or_default());
        match self {
            Self::Nothing => false,
            Self::Everything => true,
            Self::Requirements(reqs) => reqs.iter().all(|r| match r {
                Requirement::Equals(k, v) => get(k) == Some(*v),
                Requirement::In(k, vs) => get(k).is_some_and(|l| vs.contains(&l)),
                Requirement::NotIn(k, vs) => get(k).is_none_or(|l| !vs.contains(&l)),
                Requirement::Exists(k) => get(k).is_some(),
                Requirement::DoesNotExist(k) => get(k).is_none(),
            }),
        }
    }
}

/// A `*metav1.LabelSelector` as `encoding/json` prints it: struct field order, empty fields
/// omitted.
pub(crate) fn render_selector(sel: &Value) -> String {
    if sel.is_null() {
        return "null".to_owned();
    }
    let mut parts = Vec::new();
    if sel.obj("matchLabels").is_some_and(|m| !m.is_empty()) {
        parts.push(format!(
            "\"matchLabels\":{}",
            go_json(sel.at("matchLabels"))
        ));
    }
    let exprs: Vec<String> = sel
        .list("matchExpressions")
        .iter()
        .map(|e| {
            let mut s = format!(
                "{{\"key\":{},\"operator\":{}",
                go_json(e.at("key")),
                typed(e.str_of("operator"))
            );
            let values = strings(e, "values");
            if !values.is_empty() {
                let quoted: Vec<String> = values.iter().map(|v| typed(v)).collect();
                s.push_str(&format!(",\"values\":[{}]", quoted.join(",")));
            }
            s.push('}');
            s
        })
        .collect();
    if !exprs.is_empty() {
        parts.push(format!("\"matchExpressions\":[{}]", exprs.join(",")));
    }
    format!("{{{}}}", parts.join(","))
}

/// A `map[string]string` as `encoding/json` prints it (`null` when unset, keys sorted).
pub(crate) fn render_labels(v: &Value, key: &str) -> String {
    match v.at(key) {
        Value::Object(_) => go_json(v.at(key)),
        _ => "null".to_owned(),
    }
}

/// Upstream checks `ValidateLabelName` on a single key with its own path.
pub(crate) fn validate_label_name(k: &str, path: &Path<'_>, errs: &mut Errors) {
    errs.invalid_each(path, k, is_qualified_name(k));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::messages as msgs;
    use serde_json::json;

    #[test]
    fn selector_requirement_rules() {
        let sel = json!({"matchExpressions": [
            {"key": "a", "operator": "In"},
            {"key": "b", "operator": "Exists", "values": ["x"]},
            {"key": "c", "operator": "Near", "values": ["x"]},
            {"key": "d", "operator": "In", "values": ["bad value"]},
        ]});
        assert_eq!(
            msgs(|e| validate_selector(&sel, false, &Path::new("spec.selector"), e)),
            vec![
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                "spec.selector.matchExpressions[2].operator: Invalid value: \"Near\": not a valid selector operator",
                "spec.selector.matchExpressions[3].values[0]: Invalid value: \"bad value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ]
        );
        assert!(msgs(|e| validate_selector(&sel, true, &Path::new("s"), e)).len() == 3);
    }

    #[test]
    fn selectors_match_like_labels_selector() {
        let pod = json!({"labels": {"app": "web", "tier": "fe"}});
        let sel = |v: Value| {
            let s = Box::leak(Box::new(v));
            Selector::from_json(s).map(|s| s.matches(&pod, "labels"))
        };
        assert_eq!(sel(json!({"matchLabels": {"app": "web"}})), Some(true));
        assert_eq!(sel(json!({"matchLabels": {"app": "db"}})), Some(false));
        assert_eq!(
            sel(
                json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["be"]}]})
            ),
            Some(true)
        );
        assert_eq!(
            sel(json!({"matchExpressions": [{"key": "x", "operator": "Exists"}]})),
            Some(false)
        );
        assert_eq!(sel(json!({})), Some(true));
        assert_eq!(sel(json!(null)), Some(false));
        assert_eq!(
            sel(json!({"matchExpressions": [{"key": "x", "operator": "In"}]})),
            None
        );
        assert_eq!(sel(json!({"matchLabels": {"a": "b c"}})), None);
    }

    #[test]
    fn renders_selectors_in_struct_order() {
        let sel = json!({"matchExpressions": [{"key": "k", "operator": "Exists"}], "matchLabels": {"b": "2", "a": "1"}});
        assert_eq!(
            render_selector(&sel),
            r#"{"matchLabels":{"a":"1","b":"2"},"matchExpressions":[{"key":"k","operator":"Exists"}]}"#
        );
        assert_eq!(render_selector(&json!({"matchLabels": {}})), "{}");
    }
}
