//! Validation of RBAC objects, worded as `pkg/apis/rbac/validation/validation.go` words it.
//!
//! Only the RBAC-specific fields are checked here (`rules`, `aggregationRule`, `roleRef`,
//! `subjects`); `metadata` goes through the server's generic object-meta validation (with the
//! path-segment name rule the catalog gives RBAC kinds), as it does for every kind. Call these
//! after defaulting (`kgc_meta::defaults::apply`), which fills `roleRef.apiGroup` and the
//! `apiGroup` of User and Group subjects.

use kgc_meta::gojson::go_quote;
use kgc_meta::validation::{
    FieldError, FieldErrorKind, is_dns1123_subdomain, is_label_value, is_qualified_name,
};
use serde_json::Value;

use crate::RBAC_GROUP;
use crate::aggregation::selector_from_json;

/// The field errors of a Role, ClusterRole, RoleBinding or ClusterRoleBinding (by `kind`);
/// empty for any other kind.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match obj.get("kind").and_then(Value::as_str) {
        Some("Role") => rules(obj, true, &mut errs),
        Some("ClusterRole") => {
            rules(obj, false, &mut errs);
            aggregation_rule(obj, &mut errs);
        }
        Some("RoleBinding") => binding(obj, true, &mut errs),
        Some("ClusterRoleBinding") => binding(obj, false, &mut errs),
        _ => {}
    }
    errs
}

/// [`validate`] plus the update rule: a binding's `roleRef` cannot change
/// (`ValidateRoleBindingUpdate`); the caller validates the metadata update generically.
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validate(new);
    let kind = new.get("kind").and_then(Value::as_str);
    if matches!(kind, Some("RoleBinding" | "ClusterRoleBinding"))
        && new.get("roleRef") != old.get("roleRef")
    {
        errs.push(FieldError {
            kind: FieldErrorKind::Invalid,
            field: "roleRef".into(),
            value: Some(go_struct_role_ref(
                new.get("roleRef").unwrap_or(&Value::Null),
            )),
            detail: "cannot change roleRef".into(),
        });
    }
    errs
}

/// How upstream prints the new `rbac.RoleRef` in that error: Go's `%#v` of the struct.
fn go_struct_role_ref(v: &Value) -> String {
    let field = |k: &str| go_quote(v.get(k).and_then(Value::as_str).unwrap_or_default());
    format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
        field("apiGroup"),
        field("kind"),
        field("name")
    )
}

/// A list of strings at `path`, or a type error.
fn strings<'a>(v: Option<&'a Value>, path: &str, errs: &mut Vec<FieldError>) -> Vec<&'a str> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(s) => out.push(s),
                    None => errs.push(FieldError::invalid_value(
                        format!("{path}[{i}]"),
                        item,
                        "must be a string",
                    )),
                }
            }
            out
        }
        Some(other) => {
            errs.push(FieldError::invalid_value(
                path,
                other,
                "must be a list of strings",
            ));
            Vec::new()
        }
    }
}

/// `ValidatePolicyRule` for each of `rules`.
fn rules(obj: &Value, namespaced: bool, errs: &mut Vec<FieldError>) {
    let items = match obj.get("rules") {
        None | Some(Value::Null) => return,
        Some(Value::Array(items)) => items,
        Some(other) => {
            errs.push(FieldError::invalid_value("rules", other, "must be a list"));
            return;
        }
    };
    for (i, rule) in items.iter().enumerate() {
        let path = format!("rules[{i}]");
        if !rule.is_object() {
            errs.push(FieldError::invalid_value(&path, rule, "must be an object"));
            continue;
        }
        let verbs = strings(rule.get("verbs"), &format!("{path}.verbs"), errs);
        let groups = strings(rule.get("apiGroups"), &format!("{path}.apiGroups"), errs);
        let resources = strings(rule.get("resources"), &format!("{path}.resources"), errs);
        let names = strings(
            rule.get("resourceNames"),
            &format!("{path}.resourceNames"),
            errs,
        );
        let urls_path = format!("{path}.nonResourceURLs");
        let urls = strings(rule.get("nonResourceURLs"), &urls_path, errs);
        if verbs.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.verbs"),
                "verbs must contain at least one value",
            ));
        }
        if !urls.is_empty() {
            let shown = Value::from(urls.clone());
            if namespaced {
                errs.push(FieldError::invalid_value(
                    &urls_path,
                    &shown,
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !groups.is_empty() || !resources.is_empty() || !names.is_empty() {
                errs.push(FieldError::invalid_value(
                    &urls_path,
                    &shown,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if groups.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if resources.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

/// The `aggregationRule` part of `ValidateClusterRole`.
fn aggregation_rule(obj: &Value, errs: &mut Vec<FieldError>) {
    let rule = match obj.get("aggregationRule") {
        None | Some(Value::Null) => return,
        Some(r) => r,
    };
    let base = "aggregationRule.clusterRoleSelectors";
    let selectors = match rule.get("clusterRoleSelectors") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(other) => {
            errs.push(FieldError::invalid_value(base, other, "must be a list"));
            return;
        }
    };
    if selectors.is_empty() {
        errs.push(FieldError::required(
            base,
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, sel) in selectors.iter().enumerate() {
        let path = format!("{base}[{i}]");
        let before = errs.len();
        label_selector(sel, &path, errs);
        if errs.len() == before && selector_from_json(sel).is_none() {
            errs.push(FieldError::invalid_value(
                &path,
                sel,
                "invalid label selector.",
            ));
        }
    }
}

/// `ValidateLabelSelector` (apimachinery `metav1/validation`).
fn label_selector(sel: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(o) = sel.as_object() else {
        errs.push(FieldError::invalid_value(path, sel, "must be an object"));
        return;
    };
    if let Some(labels) = o.get("matchLabels").filter(|v| !v.is_null()) {
        let lpath = format!("{path}.matchLabels");
        match labels.as_object() {
            Some(m) => {
                for (k, v) in m {
                    for msg in is_qualified_name(k) {
                        errs.push(FieldError::invalid(&lpath, k, msg));
                    }
                    match v.as_str() {
                        Some(s) => {
                            for msg in is_label_value(s) {
                                errs.push(FieldError::invalid(&lpath, s, msg));
                            }
                        }
                        None => errs.push(FieldError::invalid_value(&lpath, v, "must be a string")),
                    }
                }
            }
            None => errs.push(FieldError::invalid_value(
                &lpath,
                labels,
                "must be an object",
            )),
        }
    }
    let exprs = match o.get("matchExpressions") {
        None | Some(Value::Null) => return,
        Some(Value::Array(items)) => items,
        Some(other) => {
            errs.push(FieldError::invalid_value(
                format!("{path}.matchExpressions"),
                other,
                "must be a list",
            ));
            return;
        }
    };
    for (i, e) in exprs.iter().enumerate() {
        let epath = format!("{path}.matchExpressions[{i}]");
        let values = match e.get("values") {
            None | Some(Value::Null) => 0,
            Some(Value::Array(v)) => v.len(),
            Some(other) => {
                errs.push(FieldError::invalid_value(
                    format!("{epath}.values"),
                    other,
                    "must be a list",
                ));
                0
            }
        };
        match e
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "In" | "NotIn" if values == 0 => errs.push(FieldError::required(
                format!("{epath}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "In" | "NotIn" => {}
            "Exists" | "DoesNotExist" if values > 0 => errs.push(FieldError::forbidden(
                format!("{epath}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::not_supported(
                format!("{epath}.operator"),
                other,
                &["In", "NotIn", "Exists", "DoesNotExist"],
            )),
        }
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        for msg in is_qualified_name(key) {
            errs.push(FieldError::invalid(format!("{epath}.key"), key, msg));
        }
    }
}

/// `ValidateRoleBinding` / `ValidateClusterRoleBinding` (without metadata).
fn binding(obj: &Value, namespaced: bool, errs: &mut Vec<FieldError>) {
    let role_ref = obj.get("roleRef").unwrap_or(&Value::Null);
    let field = |k: &str| role_ref.get(k).and_then(Value::as_str).unwrap_or_default();
    let group = field("apiGroup");
    if group != RBAC_GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            group,
            &[RBAC_GROUP],
        ));
    }
    let kind = field("kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported("roleRef.kind", kind, kinds));
    }
    let name = field("name");
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else {
        for msg in path_segment_name(name) {
            errs.push(FieldError::invalid("roleRef.name", name, msg));
        }
    }
    let subjects = match obj.get("subjects") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(other) => {
            errs.push(FieldError::invalid_value(
                "subjects",
                other,
                "must be a list",
            ));
            return;
        }
    };
    for (i, s) in subjects.iter().enumerate() {
        subject(s, namespaced, &format!("subjects[{i}]"), errs);
    }
}

/// `ValidateRoleBindingSubject`.
fn subject(s: &Value, namespaced: bool, path: &str, errs: &mut Vec<FieldError>) {
    let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or_default();
    let name = field("name");
    if name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    }
    let group = field("apiGroup");
    match field("kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for msg in is_dns1123_subdomain(name) {
                    errs.push(FieldError::invalid(format!("{path}.name"), name, msg));
                }
            }
            if !group.is_empty() {
                errs.push(FieldError::not_supported(
                    format!("{path}.apiGroup"),
                    group,
                    &[""],
                ));
            }
            if !namespaced && field("namespace").is_empty() {
                errs.push(FieldError::required(format!("{path}.namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != RBAC_GROUP {
                errs.push(FieldError::not_supported(
                    format!("{path}.apiGroup"),
                    group,
                    &[RBAC_GROUP],
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            format!("{path}.kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

/// `path.IsValidPathSegmentName`, the rule for RBAC object names (and `roleRef.name`).
fn path_segment_name(name: &str) -> Vec<String> {
    kgc_meta::validation::validate_name(kgc_meta::validation::NameRule::PathSegment, name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rendered(obj: Value) -> Vec<String> {
        validate(&obj).iter().map(ToString::to_string).collect()
    }

    // validation_test.go `TestValidateRoleNonResourceURL` and friends.
    #[test]
    fn cluster_role_non_resource_url_is_valid() {
        assert!(rendered(json!({"kind": "ClusterRole", "rules": [{"verbs": ["get"], "nonResourceURLs": ["/*"]}]})).is_empty());
    }

    #[test]
    fn role_non_resource_url_is_invalid() {
        assert_eq!(
            rendered(
                json!({"kind": "Role", "rules": [{"verbs": ["get"], "nonResourceURLs": ["/*"]}]})
            ),
            [
                r#"rules[0].nonResourceURLs: Invalid value: ["/*"]: namespaced rules cannot apply to non-resource URLs"#
            ]
        );
    }

    #[test]
    fn rule_mixing_resources_and_urls_is_invalid() {
        assert_eq!(
            rendered(
                json!({"kind": "ClusterRole", "rules": [{"verbs": ["get"], "nonResourceURLs": ["/*"], "apiGroups": [""]}]})
            ),
            [
                r#"rules[0].nonResourceURLs: Invalid value: ["/*"]: rules cannot apply to both regular resources and non-resource URLs"#
            ]
        );
    }

    #[test]
    fn no_verbs_no_groups_no_resources() {
        assert_eq!(
            rendered(json!({"kind": "Role", "rules": [{}]})),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[0].resources: Required value: resource rules must supply at least one resource",
            ]
        );
    }

    #[test]
    fn malformed_rule_fields_are_errors_not_panics() {
        let errs = rendered(
            json!({"kind": "Role", "rules": [{"verbs": "*", "apiGroups": [1], "resources": ["pods"]}, 7]}),
        );
        assert_eq!(
            errs,
            [
                r#"rules[0].verbs: Invalid value: "*": must be a list of strings"#,
                "rules[0].apiGroups[0]: Invalid value: 1: must be a string",
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[1]: Invalid value: 7: must be an object",
            ]
        );
    }

    // `TestValidateRoleBinding` / `TestValidateClusterRoleBinding`.
    #[test]
    fn role_binding() {
        let ok = json!({"kind": "RoleBinding",
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "valid"},
        "subjects": [
            {"name": "validsaname", "apiGroup": "", "kind": "ServiceAccount"},
            {"name": "valid@username", "apiGroup": RBAC_GROUP, "kind": "User"},
            {"name": "valid@groupname", "apiGroup": RBAC_GROUP, "kind": "Group"},
        ]});
        assert!(rendered(ok).is_empty());
        assert_eq!(
            rendered(json!({"kind": "RoleBinding",
                "roleRef": {"apiGroup": "rbac.GroupName", "kind": "ClusterRole", "name": "valid"}})),
            [
                r#"roleRef.apiGroup: Unsupported value: "rbac.GroupName": supported values: "rbac.authorization.k8s.io""#
            ]
        );
        assert_eq!(
            rendered(json!({"kind": "RoleBinding",
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Type", "name": "valid"}})),
            [r#"roleRef.kind: Unsupported value: "Type": supported values: "Role", "ClusterRole""#]
        );
        assert_eq!(
            rendered(
                json!({"kind": "RoleBinding", "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role"}})
            ),
            ["roleRef.name: Required value"]
        );
        assert_eq!(
            rendered(json!({"kind": "RoleBinding",
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "valid"},
                "subjects": [{"name": "subject", "kind": "Mad"}, {"kind": "User", "apiGroup": RBAC_GROUP}]})),
            [
                r#"subjects[0].kind: Unsupported value: "Mad": supported values: "ServiceAccount", "User", "Group""#,
                "subjects[1].name: Required value",
            ]
        );
    }

    #[test]
    fn cluster_role_binding() {
        assert_eq!(
            rendered(json!({"kind": "ClusterRoleBinding",
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "valid"},
                "subjects": [{"name": "sa", "kind": "ServiceAccount"}, {"name": "u", "kind": "User"}]})),
            [
                r#"roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole""#,
                "subjects[0].namespace: Required value",
                r#"subjects[1].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io""#,
            ]
        );
    }

    #[test]
    fn role_ref_is_immutable() {
        let old = json!({"kind": "RoleBinding", "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "a"}});
        let new = json!({"kind": "RoleBinding", "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "b"}});
        assert!(validate_update(&old, &old).is_empty());
        let errs: Vec<String> = validate_update(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            [
                r#"roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"b"}: cannot change roleRef"#
            ]
        );
    }

    #[test]
    fn aggregation_rule() {
        assert_eq!(
            rendered(
                json!({"kind": "ClusterRole", "aggregationRule": {"clusterRoleSelectors": []}})
            ),
            [
                "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"
            ]
        );
        assert!(rendered(json!({"kind": "ClusterRole", "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}})).is_empty());
        assert_eq!(
            rendered(
                json!({"kind": "ClusterRole", "aggregationRule": {"clusterRoleSelectors": [
                {"matchExpressions": [{"key": "a", "operator": "In"}, {"key": "b", "operator": "Near", "values": ["x"]}]}]}})
            ),
            [
                "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                r#"aggregationRule.clusterRoleSelectors[0].matchExpressions[1].operator: Unsupported value: "Near": supported values: "In", "NotIn", "Exists", "DoesNotExist""#,
            ]
        );
    }
}
