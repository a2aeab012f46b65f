//! `metadata` rules (kubernetes/apimachinery pkg/api/validation/objectmeta.go
//! `ValidateObjectMetaAccessor` and `ValidateObjectMetaAccessorUpdate`, plus core's finalizer
//! rule from kubernetes/kubernetes pkg/apis/core/validation/validation.go).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::field::FieldError;
use super::names::{
    NameRule, TOTAL_ANNOTATION_SIZE_LIMIT, is_label_value, is_qualified_name, name_errors,
};
use crate::gojson::{go_json, go_quote, json_string};

/// Finalizer names core accepts without a domain prefix (`IsStandardFinalizerName`).
const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];
const FINALIZER_ORPHAN: &str = "orphan";
const FINALIZER_FOREGROUND: &str = "foregroundDeletion";
const FIELD_IMMUTABLE: &str = "field is immutable";

/// Validates `metadata` of a built-in object being created (core `ValidateObjectMeta`, which is
/// apimachinery's `ValidateObjectMetaAccessor` plus core's finalizer-name rule).
///
/// `meta` is the JSON value of `metadata`; missing fields count as empty and wrongly typed fields
/// are reported as `Invalid`. Checks, in upstream order: `generateName` (with the prefix form of
/// the name rule), `name` (required unless `generateName` is given, so the check also works
/// before a name is generated), `namespace` (required iff `namespaced`), `generation` (not
/// negative), label keys and values, annotation keys and total size, ownerReferences (non-empty
/// identity, a single controller, no core `Event` owner), finalizer names (qualified names;
/// `orphan` with `foregroundDeletion` is invalid; duplicates are accepted, as upstream does) and
/// finally that unprefixed finalizers are standard ones.
///
/// Error paths are upstream's: label, annotation and ownerReference errors name the map or list
/// (`metadata.labels`, `metadata.ownerReferences.uid`), qualified-name finalizer errors name
/// `metadata.finalizers`, and only the standard-name rule indexes (`metadata.finalizers[0]`).
pub fn validate_object_meta(
    meta: &Value,
    namespaced: bool,
    name_rule: NameRule,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_generic(meta, namespaced, name_rule);
    if let Some(obj) = meta.as_object() {
        for (i, name) in finalizer_list(obj).iter().enumerate() {
            if let Some(name) = name
                && !name.contains('/')
                && !STANDARD_FINALIZERS.contains(&name.as_str())
            {
                errs.push(FieldError::invalid(
                    format!("metadata.finalizers[{i}]"),
                    name.as_str(),
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
    errs
}

/// Validates `metadata` with apimachinery's `ValidateObjectMetaAccessor` alone, which is what
/// custom resources get: unlike built-ins they may use unprefixed finalizer names (upstream only
/// warns about those).
pub fn validate_object_meta_generic(
    meta: &Value,
    namespaced: bool,
    name_rule: NameRule,
) -> Vec<FieldError> {
    let empty = Map::new();
    let obj = match meta {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => return vec![type_error("metadata", other, "object")],
    };
    let mut errs = Vec::new();

    let generate_name = string_field(obj, "generateName", "metadata.generateName", &mut errs);
    if let Some(g) = generate_name.filter(|g| !g.is_empty()) {
        for msg in name_errors(name_rule, g, true) {
            errs.push(FieldError::invalid("metadata.generateName", g, msg));
        }
    }
    match obj.get("name") {
        Some(Value::String(n)) if !n.is_empty() => {
            for msg in name_errors(name_rule, n, false) {
                errs.push(FieldError::invalid("metadata.name", n.as_str(), msg));
            }
        }
        None | Some(Value::Null) | Some(Value::String(_)) => {
            if generate_name.is_none_or(str::is_empty) {
                errs.push(FieldError::required(
                    "metadata.name",
                    "name or generateName is required",
                ));
            }
        }
        Some(other) => errs.push(type_error("metadata.name", other, "string")),
    }

    match obj.get("namespace") {
        Some(Value::String(ns)) if !ns.is_empty() => {
            if namespaced {
                for msg in name_errors(NameRule::Dns1123Label, ns, false) {
                    errs.push(FieldError::invalid("metadata.namespace", ns.as_str(), msg));
                }
            } else {
                errs.push(FieldError::forbidden(
                    "metadata.namespace",
                    "not allowed on this type",
                ));
            }
        }
        None | Some(Value::Null) | Some(Value::String(_)) => {
            if namespaced {
                errs.push(FieldError::required("metadata.namespace", ""));
            }
        }
        Some(other) => errs.push(type_error("metadata.namespace", other, "string")),
    }

    if let Some(g) = integer_field(obj, "generation", "metadata.generation", &mut errs)
        && g < 0
    {
        errs.push(FieldError::invalid_value(
            "metadata.generation",
            &Value::from(g),
            "must be greater than or equal to 0",
        ));
    }

    validate_labels(obj, &mut errs);
    validate_annotations(obj, &mut errs);
    validate_owner_references(obj, &mut errs);
    validate_finalizers(obj, &mut errs);
    errs
}

fn validate_labels(obj: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    const PATH: &str = "metadata.labels";
    for (k, v) in string_map(obj, "labels", PATH, errs) {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid(PATH, k, msg));
        }
        for msg in is_label_value(v) {
            errs.push(FieldError::invalid(PATH, v, msg));
        }
    }
}

fn validate_annotations(obj: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    const PATH: &str = "metadata.annotations";
    let entries = string_map(obj, "annotations", PATH, errs);
    let mut total = 0usize;
    for (k, v) in &entries {
        // Annotation keys are qualified names except that case does not matter.
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(PATH, *k, msg));
        }
        total = total.saturating_add(k.len()).saturating_add(v.len());
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(PATH, "", TOTAL_ANNOTATION_SIZE_LIMIT));
    }
}

/// An ownerReference as Go's `metav1.OwnerReference` holds it, so errors can echo it in the same
/// JSON shape (field order and `omitempty`) upstream prints.
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    controller: Option<bool>,
    block_owner_deletion: Option<bool>,
}

impl OwnerRef {
    fn to_go_json(&self) -> String {
        let mut s = format!(
            "{{\"apiVersion\":{},\"kind\":{},\"name\":{},\"uid\":{}",
            json_string(&self.api_version),
            json_string(&self.kind),
            json_string(&self.name),
            json_string(&self.uid)
        );
        if let Some(c) = self.controller {
            let _ = write!(s, ",\"controller\":{c}");
        }
        if let Some(b) = self.block_owner_deletion {
            let _ = write!(s, ",\"blockOwnerDeletion\":{b}");
        }
        s.push('}');
        s
    }
}

fn validate_owner_references(obj: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    const PATH: &str = "metadata.ownerReferences";
    let items = match obj.get("ownerReferences") {
        None | Some(Value::Null) => return,
        Some(Value::Array(items)) => items,
        Some(other) => {
            errs.push(type_error(PATH, other, "array"));
            return;
        }
    };
    let mut refs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = format!("{PATH}[{i}]");
        let Some(m) = item.as_object() else {
            errs.push(type_error(&item_path, item, "object"));
            continue;
        };
        let mut s = |key: &str| {
            string_field(m, key, &format!("{item_path}.{key}"), errs)
                .unwrap_or_default()
                .to_owned()
        };
        let (api_version, kind, name, uid) = (s("apiVersion"), s("kind"), s("name"), s("uid"));
        let controller = bool_field(m, "controller", &format!("{item_path}.controller"), errs);
        let block_owner_deletion = bool_field(
            m,
            "blockOwnerDeletion",
            &format!("{item_path}.blockOwnerDeletion"),
            errs,
        );
        refs.push(OwnerRef {
            api_version,
            kind,
            name,
            uid,
            controller,
            block_owner_deletion,
        });
    }

    let mut first_controller: Option<String> = None;
    for r in &refs {
        let (group, version) = parse_group_version(&r.api_version);
        if version.is_empty() {
            errs.push(FieldError::invalid(
                format!("{PATH}.apiVersion"),
                r.api_version.as_str(),
                "version must not be empty",
            ));
        }
        if r.kind.is_empty() {
            errs.push(FieldError::invalid(
                format!("{PATH}.kind"),
                r.kind.as_str(),
                "kind must not be empty",
            ));
        }
        if r.name.is_empty() {
            errs.push(FieldError::invalid(
                format!("{PATH}.name"),
                r.name.as_str(),
                "name must not be empty",
            ));
        }
        if r.uid.is_empty() {
            errs.push(FieldError::invalid_rendered(
                format!("{PATH}.uid"),
                json_string(&r.uid),
                "uid must not be empty",
            ));
        }
        // BannedOwners holds only core v1 Event: events must never keep anything alive.
        if group.is_empty() && version == "v1" && r.kind == "Event" {
            errs.push(FieldError::invalid_rendered(
                PATH,
                r.to_go_json(),
                format!(
                    "{group}/{version}, Kind={} is disallowed from being an owner",
                    r.kind
                ),
            ));
        }
        if r.controller == Some(true) {
            let current = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                Some(first) => {
                    let all: Vec<String> = refs.iter().map(OwnerRef::to_go_json).collect();
                    errs.push(FieldError::invalid_rendered(
                        PATH,
                        format!("[{}]", all.join(",")),
                        format!(
                            "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                        ),
                    ));
                }
                None => first_controller = Some(current),
            }
        }
    }
}

/// Upstream `schema.ParseGroupVersion` as `FromAPIVersionAndKind` uses it: an unparsable
/// apiVersion yields an empty group and version.
fn parse_group_version(api_version: &str) -> (&str, &str) {
    if api_version.is_empty() || api_version == "/" {
        return ("", "");
    }
    match api_version.split_once('/') {
        None => ("", api_version),
        Some((g, v)) if !v.contains('/') => (g, v),
        Some(_) => ("", ""),
    }
}

fn validate_finalizers(obj: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    const PATH: &str = "metadata.finalizers";
    let Some(items) = finalizer_items(obj, errs) else {
        return;
    };
    let mut names = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let name = match item {
            Value::String(s) => s.as_str(),
            Value::Null => "",
            other => {
                errs.push(type_error(&format!("{PATH}[{i}]"), other, "string"));
                continue;
            }
        };
        for msg in is_qualified_name(name) {
            errs.push(FieldError::invalid(PATH, name, msg));
        }
        names.push(name);
    }
    if names.contains(&FINALIZER_ORPHAN) && names.contains(&FINALIZER_FOREGROUND) {
        let list: Vec<Value> = names.iter().map(|n| Value::from(*n)).collect();
        errs.push(FieldError::invalid_value(
            PATH,
            &Value::Array(list),
            format!("finalizer {FINALIZER_ORPHAN} and {FINALIZER_FOREGROUND} cannot be both set"),
        ));
    }
}

/// The finalizers array, reporting a wrong type once.
fn finalizer_items<'a>(
    obj: &'a Map<String, Value>,
    errs: &mut Vec<FieldError>,
) -> Option<&'a Vec<Value>> {
    match obj.get("finalizers") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(items),
        Some(other) => {
            errs.push(type_error("metadata.finalizers", other, "array"));
            None
        }
    }
}

/// Finalizer names by index (`None` for items that are not strings); no errors reported.
fn finalizer_list(obj: &Map<String, Value>) -> Vec<Option<String>> {
    match obj.get("finalizers") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Null => Some(String::new()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Validates what an update may not do to `metadata` (apimachinery
/// `ValidateObjectMetaAccessorUpdate`): `name`, `namespace`, `uid`, `creationTimestamp`,
/// `deletionTimestamp` and `deletionGracePeriodSeconds` are immutable ("field is immutable"),
/// `generation` must not decrease, and while `old` has a `deletionTimestamp` no finalizer may be
/// added.
///
/// Only the update-specific rules are here: run [`validate_object_meta`] on `new` as well, as
/// upstream strategies do.
///
/// Upstream's store (`rest.BeforeUpdate`) fills `generation`, `uid`, `creationTimestamp`,
/// `deletionTimestamp` and `deletionGracePeriodSeconds` (and the handler the namespace) from the
/// stored object before validating, so an update that merely *omits* one of them never fails
/// there; this function therefore treats an omitted one as unchanged and reports only values the
/// request actually changes. (The store also silently restores a changed `creationTimestamp`, and
/// a changed `deletionTimestamp` once one is set; callers wanting that leniency copy those before
/// calling.) Upstream's "must be specified for an update" check on `resourceVersion` is left out
/// because unconditional updates fill the version in before that check runs.
pub fn validate_object_meta_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let empty = Map::new();
    let new_obj = match new {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => return vec![type_error("metadata", other, "object")],
    };
    let old_obj = old.as_object().unwrap_or(&empty);
    let mut errs = Vec::new();

    if present(old_obj.get("deletionTimestamp")).is_some() {
        let strings = |m: &Map<String, Value>| -> BTreeSet<String> {
            finalizer_list(m).into_iter().flatten().collect()
        };
        let old_set = strings(old_obj);
        let added: Vec<String> = strings(new_obj)
            .into_iter()
            .filter(|f| !old_set.contains(f))
            .collect();
        if !added.is_empty() {
            let quoted: Vec<String> = added.iter().map(|f| go_quote(f)).collect();
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    quoted.join(", ")
                ),
            ));
        }
    }

    let generation = |m: &Map<String, Value>| m.get("generation").and_then(Value::as_i64);
    if let Some(new_generation) = generation(new_obj)
        && new_generation < generation(old_obj).unwrap_or(0)
    {
        errs.push(FieldError::invalid_value(
            "metadata.generation",
            &Value::from(new_generation),
            "must not be decremented",
        ));
    }

    // (field, how its new value is echoed, whether omitting it means "keep the stored value")
    for (key, render, omittable) in [
        ("name", Render::GoString, false),
        ("namespace", Render::GoString, true),
        ("uid", Render::JsonString, true),
        ("creationTimestamp", Render::Json, true),
        ("deletionTimestamp", Render::Json, true),
        ("deletionGracePeriodSeconds", Render::Json, true),
    ] {
        let (n, o) = (present(new_obj.get(key)), present(old_obj.get(key)));
        if n != o && !(omittable && n.is_none()) {
            let shown = match (render, n) {
                (Render::GoString, Some(Value::String(s))) => go_quote(s),
                (Render::GoString, None) => go_quote(""),
                (Render::JsonString, None) => json_string(""),
                (_, None) => "null".to_owned(),
                (_, Some(v)) => go_json(v),
            };
            errs.push(FieldError::invalid_rendered(
                format!("metadata.{key}"),
                shown,
                FIELD_IMMUTABLE,
            ));
        }
    }
    errs
}

/// How an immutable field's new value is echoed: Go prints a `string` with `%q`, and marshals
/// named string types (UID), times and pointers as JSON.
#[derive(Clone, Copy)]
enum Render {
    GoString,
    JsonString,
    Json,
}

/// A field's value with "unset" normalised: absent, `null` and `""` all mean the Go zero value.
fn present(v: Option<&Value>) -> Option<&Value> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(v) => Some(v),
    }
}

fn type_error(path: &str, value: &Value, expected: &str) -> FieldError {
    FieldError::invalid_value(path, value, format!("must be of type {expected}"))
}

/// A string field; absent and `null` are `None`, other types are reported.
fn string_field<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<&'a str> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            errs.push(type_error(path, other, "string"));
            None
        }
    }
}

fn integer_field(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<i64> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(v) => {
            let n = v.as_i64();
            if n.is_none() {
                errs.push(type_error(path, v, "integer"));
            }
            n
        }
    }
}

fn bool_field(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<bool> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            errs.push(type_error(path, other, "boolean"));
            None
        }
    }
}

/// A `map[string]string` field as sorted entries (Go decodes a `null` entry as ""), reporting
/// entries and maps of the wrong type.
fn string_map<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Vec<(&'a str, &'a str)> {
    let m = match obj.get(key) {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Object(m)) => m,
        Some(other) => {
            errs.push(type_error(path, other, "object"));
            return Vec::new();
        }
    };
    let mut entries: Vec<(&str, &Value)> = m.iter().map(|(k, v)| (k.as_str(), v)).collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        match v {
            Value::String(s) => out.push((k, s.as_str())),
            Value::Null => out.push((k, "")),
            other => errs.push(type_error(&format!("{path}[{k}]"), other, "string")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::names::messages::*;
    use super::*;
    use serde_json::json;

    fn strings(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn ok_meta() -> Value {
        json!({"name": "x", "namespace": "ns"})
    }

    fn with(extra: Value) -> Value {
        let mut m = ok_meta();
        if let (Some(m), Some(e)) = (m.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                m.insert(k.clone(), v.clone());
            }
        }
        m
    }

    fn check(meta: Value) -> Vec<String> {
        strings(&validate_object_meta(
            &meta,
            true,
            NameRule::Dns1123Subdomain,
        ))
    }

    #[test]
    fn valid_metadata_passes() {
        let meta = json!({
            "name": "web-1",
            "namespace": "default",
            "generation": 3,
            "labels": {"app": "web", "example.com/tier": "", "Empty": null},
            "annotations": {"Example.COM/Note": "anything at all"},
            "finalizers": ["orphan", "kubernetes", "example.com/x", "x/y", "example.com/x"],
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": true},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2", "controller": false},
            ],
            "uid": "ignored", "resourceVersion": "5",
        });
        assert_eq!(check(meta), Vec::<String>::new());
    }

    #[test]
    fn name_required_or_invalid() {
        assert_eq!(
            check(json!({"namespace": "ns"})),
            vec!["metadata.name: Required value: name or generateName is required"]
        );
        assert_eq!(
            check(json!({"name": "", "namespace": "ns"})),
            vec!["metadata.name: Required value: name or generateName is required"]
        );
        assert_eq!(
            check(json!({"generateName": "web-", "namespace": "ns"})),
            Vec::<String>::new()
        );
        assert_eq!(
            check(json!({"name": "Foo", "namespace": "ns"})),
            vec![format!(
                "metadata.name: Invalid value: \"Foo\": {SUBDOMAIN_MSG}"
            )]
        );
        assert_eq!(
            check(json!({"generateName": "Web-", "namespace": "ns"})),
            vec![format!(
                "metadata.generateName: Invalid value: \"Web-\": {SUBDOMAIN_MSG}"
            )]
        );
        assert_eq!(
            check(json!({"name": 5, "namespace": "ns"})),
            vec!["metadata.name: Invalid value: 5: must be of type string"]
        );
    }

    #[test]
    fn per_kind_name_rules() {
        let ns = strings(&validate_object_meta(
            &json!({"name": "a.b"}),
            false,
            NameRule::Dns1123Label,
        ));
        assert_eq!(
            ns,
            vec!["metadata.name: Invalid value: \"a.b\": must not contain dots"]
        );
        let role = strings(&validate_object_meta(
            &json!({"name": "system:controller:x"}),
            false,
            NameRule::PathSegment,
        ));
        assert!(role.is_empty());
    }

    #[test]
    fn namespace_rules() {
        assert_eq!(
            check(json!({"name": "x"})),
            vec!["metadata.namespace: Required value"]
        );
        assert_eq!(
            check(json!({"name": "x", "namespace": "Bad_NS"})),
            vec![format!(
                "metadata.namespace: Invalid value: \"Bad_NS\": {LABEL_MSG}"
            )]
        );
        let cluster = strings(&validate_object_meta(
            &json!({"name": "x", "namespace": "ns"}),
            false,
            NameRule::Dns1123Subdomain,
        ));
        assert_eq!(
            cluster,
            vec!["metadata.namespace: Forbidden: not allowed on this type"]
        );
        let cluster_ok = validate_object_meta(
            &json!({"name": "x", "namespace": ""}),
            false,
            NameRule::Dns1123Subdomain,
        );
        assert!(cluster_ok.is_empty());
    }

    #[test]
    fn generation_not_negative() {
        assert_eq!(
            check(with(json!({"generation": -2}))),
            vec!["metadata.generation: Invalid value: -2: must be greater than or equal to 0"]
        );
        assert_eq!(
            check(with(json!({"generation": "1"}))),
            vec!["metadata.generation: Invalid value: \"1\": must be of type integer"]
        );
    }

    #[test]
    fn labels_rules() {
        assert_eq!(
            check(with(json!({"labels": {"app:x": "ok", "b": "bad value"}}))),
            vec![
                format!("metadata.labels: Invalid value: \"app:x\": {NAME_PART_MSG}"),
                format!("metadata.labels: Invalid value: \"bad value\": {LABEL_VALUE_MSG}"),
            ]
        );
        assert_eq!(
            check(with(json!({"labels": {"a": 1}}))),
            vec!["metadata.labels[a]: Invalid value: 1: must be of type string"]
        );
        assert_eq!(
            check(with(json!({"labels": ["a"]}))),
            vec!["metadata.labels: Invalid value: [\"a\"]: must be of type object"]
        );
    }

    #[test]
    fn annotation_rules() {
        assert_eq!(
            check(with(json!({"annotations": {"a b": "x"}}))),
            vec![format!(
                "metadata.annotations: Invalid value: \"a b\": {NAME_PART_MSG}"
            )]
        );
        // Case does not matter for annotation keys, even in the prefix.
        assert!(check(with(json!({"annotations": {"EXAMPLE.com/Key": "x"}}))).is_empty());
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
        assert_eq!(
            check(with(json!({"annotations": {"a": big}}))),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
        let exact = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 1);
        assert!(check(with(json!({"annotations": {"a": exact}}))).is_empty());
    }

    #[test]
    fn finalizer_rules() {
        assert_eq!(
            check(with(
                json!({"finalizers": ["orphan", "foregroundDeletion"]})
            )),
            vec![
                "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set"
            ]
        );
        assert_eq!(
            check(with(json!({"finalizers": ["x/y", "custom"]}))),
            vec![
                "metadata.finalizers[1]: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
            ]
        );
        assert_eq!(
            check(with(json!({"finalizers": ["a b/c"]}))),
            vec![format!(
                "metadata.finalizers: Invalid value: \"a b/c\": prefix part {SUBDOMAIN_MSG}"
            )]
        );
        assert_eq!(
            check(with(json!({"finalizers": ["bad name"]}))),
            vec![
                format!("metadata.finalizers: Invalid value: \"bad name\": {NAME_PART_MSG}"),
                "metadata.finalizers[0]: Invalid value: \"bad name\": name is neither a standard finalizer name nor is it fully qualified".to_owned(),
            ]
        );
        assert_eq!(
            check(with(json!({"finalizers": [3]}))),
            vec!["metadata.finalizers[0]: Invalid value: 3: must be of type string"]
        );
        // Custom resources may use unprefixed names.
        let generic = validate_object_meta_generic(
            &with(json!({"finalizers": ["custom", "custom"]})),
            true,
            NameRule::Dns1123Subdomain,
        );
        assert!(generic.is_empty());
    }

    #[test]
    fn owner_reference_rules() {
        assert_eq!(
            check(with(json!({"ownerReferences": [{}]}))),
            vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty",
                "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty",
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty",
            ]
        );
        assert_eq!(
            check(with(json!({"ownerReferences": [
                {"apiVersion": "apps/", "kind": "K", "name": "n", "uid": "u"},
                {"apiVersion": "a/b/c", "kind": "K", "name": "n", "uid": "u"},
            ]}))),
            vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty",
                "metadata.ownerReferences.apiVersion: Invalid value: \"a/b/c\": version must not be empty",
            ]
        );
        assert_eq!(
            check(with(json!({"ownerReferences": [
                {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u", "blockOwnerDeletion": false}
            ]}))),
            vec![
                "metadata.ownerReferences: Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"e\",\"uid\":\"u\",\"blockOwnerDeletion\":false}: /v1, Kind=Event is disallowed from being an owner"
            ]
        );
        // Only the core Event is banned upstream.
        assert!(
            check(with(json!({"ownerReferences": [
                {"apiVersion": "events.k8s.io/v1", "kind": "Event", "name": "e", "uid": "u"}
            ]})))
            .is_empty()
        );
        assert_eq!(
            check(with(json!({"ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "1", "controller": true},
                {"apiVersion": "v1", "kind": "Pod", "name": "b", "uid": "2"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "c", "uid": "3", "controller": true},
            ]}))),
            vec![
                "metadata.ownerReferences: Invalid value: [{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"a\",\"uid\":\"1\",\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"b\",\"uid\":\"2\"},{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"c\",\"uid\":\"3\",\"controller\":true}]: Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/a and Deployment/c"
            ]
        );
        assert_eq!(
            check(with(json!({"ownerReferences": [
                {"apiVersion": "v1", "kind": "K", "name": "n", "uid": 7, "controller": "yes"}
            ]}))),
            vec![
                "metadata.ownerReferences[0].uid: Invalid value: 7: must be of type string",
                "metadata.ownerReferences[0].controller: Invalid value: \"yes\": must be of type boolean",
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty",
            ]
        );
        assert_eq!(
            check(with(json!({"ownerReferences": {"a": 1}}))),
            vec!["metadata.ownerReferences: Invalid value: {\"a\":1}: must be of type array"]
        );
    }

    #[test]
    fn errors_follow_upstream_order() {
        let got = check(json!({
            "name": "Bad",
            "generation": -1,
            "labels": {"k": "-"},
            "finalizers": ["nope"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n"}],
        }));
        let fields: Vec<&str> = got
            .iter()
            .map(|s| s.split(':').next().unwrap_or_default())
            .collect();
        assert_eq!(
            fields,
            vec![
                "metadata.name",
                "metadata.namespace",
                "metadata.generation",
                "metadata.labels",
                "metadata.ownerReferences.uid",
                "metadata.finalizers[0]",
            ]
        );
    }

    #[test]
    fn wrong_shapes_never_panic() {
        for meta in [
            json!(null),
            json!(3),
            json!("x"),
            json!([]),
            json!({"name": null, "namespace": null, "labels": null, "finalizers": null}),
            json!({"name": {}, "namespace": [], "annotations": 3, "ownerReferences": [1, null]}),
        ] {
            let _ = validate_object_meta(&meta, true, NameRule::Dns1123Subdomain);
            let _ = validate_object_meta_update(&meta, &meta);
            let _ = validate_object_meta_update(&meta, &json!(7));
        }
        assert_eq!(
            strings(&validate_object_meta(
                &json!(3),
                true,
                NameRule::Dns1123Subdomain
            )),
            vec!["metadata: Invalid value: 3: must be of type object"]
        );
    }

    fn update(new: Value, old: Value) -> Vec<String> {
        strings(&validate_object_meta_update(&new, &old))
    }

    #[test]
    fn update_immutable_fields() {
        let old = json!({
            "name": "a", "namespace": "ns", "uid": "u1",
            "creationTimestamp": "2024-01-01T00:00:00Z", "generation": 2
        });
        assert!(update(old.clone(), old.clone()).is_empty());
        assert_eq!(
            update(
                json!({
                    "name": "b", "namespace": "other", "uid": "u2",
                    "creationTimestamp": "2025-01-01T00:00:00Z", "generation": 2
                }),
                old.clone()
            ),
            vec![
                "metadata.name: Invalid value: \"b\": field is immutable",
                "metadata.namespace: Invalid value: \"other\": field is immutable",
                "metadata.uid: Invalid value: \"u2\": field is immutable",
                "metadata.creationTimestamp: Invalid value: \"2025-01-01T00:00:00Z\": field is immutable",
            ]
        );
        // Omitted fields are filled from the stored object upstream, so they are no change.
        assert!(update(json!({"name": "a"}), old.clone()).is_empty());
        assert_eq!(
            update(json!({"namespace": "ns"}), old.clone()),
            vec!["metadata.name: Invalid value: \"\": field is immutable"]
        );
        assert_eq!(
            update(
                json!({"name": "a", "creationTimestamp": "2024-01-01T00:00:01Z"}),
                old
            ),
            vec![
                "metadata.creationTimestamp: Invalid value: \"2024-01-01T00:00:01Z\": field is immutable"
            ]
        );
    }

    #[test]
    fn update_deletion_fields_and_generation() {
        let old = json!({
            "name": "a", "generation": 3,
            "deletionTimestamp": "2024-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30
        });
        assert_eq!(
            update(json!({"name": "a", "generation": 2}), old.clone()),
            vec!["metadata.generation: Invalid value: 2: must not be decremented"]
        );
        assert!(update(json!({"name": "a"}), old.clone()).is_empty());
        assert_eq!(
            update(
                json!({"name": "a", "deletionTimestamp": "2025-01-01T00:00:00Z", "deletionGracePeriodSeconds": null}),
                old.clone()
            ),
            vec![
                "metadata.deletionTimestamp: Invalid value: \"2025-01-01T00:00:00Z\": field is immutable"
            ]
        );
        assert_eq!(
            update(
                json!({"name": "a", "generation": 4, "deletionTimestamp": "2024-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0}),
                old
            ),
            vec!["metadata.deletionGracePeriodSeconds: Invalid value: 0: field is immutable"]
        );
        assert_eq!(
            update(
                json!({"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z"}),
                json!({"name": "a"})
            ),
            vec![
                "metadata.deletionTimestamp: Invalid value: \"2024-01-01T00:00:00Z\": field is immutable"
            ]
        );
    }

    #[test]
    fn update_no_new_finalizers_while_deleting() {
        let old = json!({"name": "a", "deletionTimestamp": "t", "finalizers": ["x/y"]});
        assert_eq!(
            update(
                json!({"name": "a", "deletionTimestamp": "t", "finalizers": ["x/y", "b/z", "a/z", "b/z"]}),
                old.clone()
            ),
            vec![
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"a/z\", \"b/z\"}"
            ]
        );
        // Removing or keeping finalizers is fine; adding before deletion is fine.
        assert!(update(json!({"name": "a", "deletionTimestamp": "t"}), old).is_empty());
        assert!(
            update(
                json!({"name": "a", "finalizers": ["new/one"]}),
                json!({"name": "a"})
            )
            .is_empty()
        );
    }
}
