//! Custom-resource bodies against their CRD's structural schema: pruning of unknown fields,
//! defaulting, and validation (apiextensions-apiserver `pkg/apiserver/schema/pruning`,
//! `pkg/apiserver/schema/defaulting`, `pkg/apiserver/validation`).
//!
//! Every value validation a structural schema may carry is checked, each failure worded as
//! kube-apiserver words it (kube-openapi `pkg/validation/errors/schema.go` through
//! apiextensions-apiserver `pkg/apiserver/validation/validation.go`): `type`, `enum`,
//! `required`, `nullable`, `minimum`/`maximum` (exclusive or not), `multipleOf`,
//! `minLength`/`maxLength`, `pattern`, `format`, `minItems`/`maxItems`, `uniqueItems`,
//! `minProperties`/`maxProperties`, `x-kubernetes-list-type` (`set`, `map`),
//! `x-kubernetes-int-or-string`, and `allOf`/`anyOf`/`oneOf`/`not`. The CEL rules of
//! `x-kubernetes-validations` are kgc-cel's (`rules`), which this crate cannot depend on.

use serde_json::{Map, Value};

use crate::gojson::go_quote;
use crate::validation::FieldError;

mod format;
mod listtype;
mod pattern;

pub use format::check as check_format;
pub(crate) use pattern::go_regexp_error;
pub use pattern::{compile as compile_pattern, go_ascii};

fn preserves_unknown(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Removes fields the schema does not know, returning their paths (`spec.foo`). At the root,
/// `apiVersion`, `kind` and `metadata` are always kept.
pub fn prune(obj: &mut Value, schema: &Value) -> Vec<String> {
    let mut unknown = Vec::new();
    prune_at(obj, schema, "", true, &mut unknown);
    unknown
}

fn prune_at(v: &mut Value, schema: &Value, path: &str, root: bool, unknown: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let keep_all = preserves_unknown(schema) && props.is_none();
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                if root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let child_path = join(path, &k);
                let child_schema = props.and_then(|p| p.get(&k)).or(additional);
                match child_schema {
                    Some(cs) => {
                        if let Some(child) = map.get_mut(&k) {
                            prune_at(child, cs, &child_path, false, unknown);
                        }
                    }
                    None if keep_all || preserves_unknown(schema) => {}
                    None => {
                        map.remove(&k);
                        unknown.push(child_path);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_at(item, item_schema, &format!("{path}[{i}]"), false, unknown);
                }
            }
        }
        _ => {}
    }
}

/// Fills in `default` values of missing properties, recursively.
pub fn apply_defaults(obj: &mut Value, schema: &Value) {
    match obj {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, prop) in props {
                    if !map.contains_key(k)
                        && let Some(d) = prop.get("default")
                    {
                        map.insert(k.clone(), d.clone());
                    }
                    if let Some(child) = map.get_mut(k) {
                        apply_defaults(child, prop);
                    }
                }
            } else if let Some(add) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for child in map.values_mut() {
                    apply_defaults(child, add);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    apply_defaults(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// Validates a value against its schema; errors name the field as upstream does.
pub fn validate(obj: &Value, schema: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_at(obj, None, schema, "", true, &mut errs);
    errs
}

/// Validates an update of `old` to `obj` with ratcheting (apiextensions-apiserver
/// `pkg/apiserver/schema/validation/ratcheting.go`, `CRDValidationRatcheting`, on since 1.30):
/// a value equal to the old value at the same place (object properties, map values, the items
/// of `map` lists by key and of `set` lists by value) raises no error, so an object stored
/// before its schema tightened can still be updated elsewhere. Items of other lists have no
/// old value of their own: they are ratcheted only with their whole list.
pub fn validate_update(obj: &Value, old: &Value, schema: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_at(obj, Some(old), schema, "", true, &mut errs);
    errs
}

/// The old value of `item` of a list under `schema` among `old` (ratcheting's correlation).
pub fn correlated_item<'a>(item: &Value, old: &'a [Value], schema: &Value) -> Option<&'a Value> {
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => old.iter().find(|o| *o == item),
        Some("map") => {
            let keys = listtype::map_keys(schema);
            old.iter()
                .find(|o| keys.iter().all(|k| o.get(*k) == item.get(*k)))
        }
        _ => None,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(want: &str, v: &Value) -> bool {
    match want {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.as_i64().is_some() || v.as_u64().is_some(),
        "number" => v.is_number(),
        _ => true,
    }
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// One kube-openapi validation failure as apiextensions-apiserver turns it into a field error
/// (`pkg/apiserver/validation/validation.go` `kubeOpenAPIResultToFieldErrors`): the default is
/// `Invalid` with the offending value (`""` when kube-openapi has none) and kube-openapi's own
/// message, which repeats the path (`spec.x in body should match '^a$'`).
fn openapi_error(field: &str, value: Option<&Value>, message: String) -> FieldError {
    let empty = Value::String(String::new());
    FieldError::invalid_value(field, value.unwrap_or(&empty), message)
}

/// Go's `%v` of a `float64` bound (`1`, `1.5`).
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

fn validate_at(
    v: &Value,
    old: Option<&Value>,
    schema: &Value,
    path: &str,
    root: bool,
    errs: &mut Vec<FieldError>,
) {
    if old == Some(v) {
        return;
    }
    let field = if path.is_empty() { "<root>" } else { path };
    if v.is_null() {
        if !flag(schema, "nullable")
            && !root
            && let Some(t) = schema.get("type").and_then(Value::as_str)
        {
            errs.push(FieldError::invalid_value(
                field,
                v,
                format!("{field} in body must be of type {t}: \"null\""),
            ));
        }
        return;
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        if !(v.is_string() || v.as_i64().is_some()) {
            errs.push(FieldError::invalid_value(
                field,
                v,
                format!(
                    "{field} in body must be of type integer or string: \"{}\"",
                    type_name(v)
                ),
            ));
        }
    } else if let Some(t) = schema.get("type").and_then(Value::as_str)
        && !type_matches(t, v)
    {
        // Upstream shows the value's type, not the value.
        errs.push(FieldError::invalid(
            field,
            type_name(v),
            format!("{field} in body must be of type {t}: \"{}\"", type_name(v)),
        ));
        return;
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(v)
    {
        let supported: Vec<String> = options
            .iter()
            .map(|o| o.as_str().map_or_else(|| o.to_string(), str::to_owned))
            .collect();
        errs.push(FieldError::not_supported(
            field,
            v.as_str().map_or_else(|| v.to_string(), str::to_owned),
            &supported.iter().map(String::as_str).collect::<Vec<_>>(),
        ));
    }
    if v.is_number() {
        validate_number(v, schema, field, errs);
    }
    if let Some(s) = v.as_str() {
        validate_string(s, v, schema, field, errs);
    }
    match v {
        Value::Object(map) => validate_object(map, old, schema, path, root, errs),
        Value::Array(items) => {
            let len = items.len();
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && len as u64 > max
            {
                errs.push(FieldError::too_many(field, len, max as usize));
            }
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (len as u64) < min
            {
                errs.push(openapi_error(
                    field,
                    Some(&Value::from(len)),
                    format!("{field} in body should have at least {min} items"),
                ));
            }
            if flag(schema, "uniqueItems")
                && items
                    .iter()
                    .enumerate()
                    .any(|(i, item)| items[..i].contains(item))
            {
                errs.push(openapi_error(
                    field,
                    None,
                    format!("{field} in body shouldn't contain duplicates"),
                ));
            }
            errs.extend(listtype::validate(items, schema, path));
            if let Some(item_schema) = schema.get("items") {
                let old_items = old.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
                for (i, item) in items.iter().enumerate() {
                    let old_item = correlated_item(item, old_items, schema);
                    let at = format!("{path}[{i}]");
                    validate_at(item, old_item, item_schema, &at, false, errs);
                }
            }
        }
        _ => {}
    }
    validate_junctors(v, old, schema, path, root, errs);
}

/// `minimum`, `maximum` (each maybe exclusive) and `multipleOf` (kube-openapi
/// `validate/validator.go` `numberValidator`).
fn validate_number(v: &Value, schema: &Value, field: &str, errs: &mut Vec<FieldError>) {
    let Some(n) = v.as_f64() else { return };
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        let exclusive = flag(schema, "exclusiveMinimum");
        if n < min || (exclusive && n == min) {
            let rel = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let min = number(min);
            errs.push(openapi_error(
                field,
                Some(v),
                format!("{field} in body should be {rel} {min}"),
            ));
        }
    }
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
        let exclusive = flag(schema, "exclusiveMaximum");
        if n > max || (exclusive && n == max) {
            let rel = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            let max = number(max);
            errs.push(openapi_error(
                field,
                Some(v),
                format!("{field} in body should be {rel} {max}"),
            ));
        }
    }
    if let Some(factor) = schema.get("multipleOf").and_then(Value::as_f64)
        && factor > 0.0
    {
        let multiple = match (v.as_i64(), schema["multipleOf"].as_i64()) {
            (Some(i), Some(f)) if f != 0 => i % f == 0,
            _ => {
                let q = n / factor;
                (q - q.round()).abs() < 1e-9 * q.abs().max(1.0)
            }
        };
        if !multiple {
            errs.push(openapi_error(
                field,
                Some(v),
                format!("{field} in body should be a multiple of {}", number(factor)),
            ));
        }
    }
}

/// `maxLength`/`minLength` in characters (Go's `utf8.RuneCountInString`), `pattern` as an
/// unanchored RE2 search (Go's `regexp.MatchString`), and `format`.
fn validate_string(s: &str, v: &Value, schema: &Value, field: &str, errs: &mut Vec<FieldError>) {
    let len = s.chars().count() as u64;
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && len > max
    {
        errs.push(FieldError::too_long(field, s, max as usize));
    }
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && len < min
    {
        errs.push(openapi_error(
            field,
            Some(v),
            format!("{field} in body should be at least {min} chars long"),
        ));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        // A pattern that does not compile is refused with its CRD; one stored before that
        // check fails closed rather than letting every value through.
        let matched = pattern::is_match(pattern, s);
        if !matched {
            errs.push(openapi_error(
                field,
                Some(v),
                format!("{field} in body should match '{pattern}'"),
            ));
        }
    }
    if let Some(f) = schema.get("format").and_then(Value::as_str)
        && format::check(f, s) == Some(false)
    {
        errs.push(openapi_error(
            field,
            Some(v),
            format!("{field} in body must be of type {f}: {}", go_quote(s)),
        ));
    }
}

/// `allOf`, `anyOf`, `oneOf` and `not`, which a structural schema allows as value validations
/// (kube-openapi `validate/schema_props.go`).
fn validate_junctors(
    v: &Value,
    old: Option<&Value>,
    schema: &Value,
    path: &str,
    root: bool,
    errs: &mut Vec<FieldError>,
) {
    let field = if path.is_empty() { "<root>" } else { path };
    let schemas = |key: &str| -> Vec<&Value> {
        schema
            .get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    };
    let passes = |s: &Value| {
        let mut sub = Vec::new();
        validate_at(v, old, s, path, root, &mut sub);
        sub.is_empty()
    };
    for s in schemas("allOf") {
        validate_at(v, old, s, path, root, errs);
    }
    let any = schemas("anyOf");
    if !any.is_empty() && !any.iter().any(|s| passes(s)) {
        errs.push(openapi_error(
            field,
            None,
            format!("{field} in body must validate at least one schema (anyOf)"),
        ));
    }
    let one = schemas("oneOf");
    if !one.is_empty() {
        let valid = one.iter().filter(|s| passes(s)).count();
        if valid != 1 {
            let found = if valid == 0 {
                "Found none valid".to_owned()
            } else {
                format!("Found {valid} valid alternatives")
            };
            errs.push(openapi_error(
                field,
                None,
                format!("{field} in body must validate one and only one schema (oneOf). {found}"),
            ));
        }
    }
    if let Some(not) = schema.get("not").filter(|n| n.is_object())
        && passes(not)
    {
        errs.push(openapi_error(
            field,
            None,
            format!("{field} in body must not validate the schema (not)"),
        ));
    }
}

fn validate_object(
    map: &Map<String, Value>,
    old: Option<&Value>,
    schema: &Value,
    path: &str,
    root: bool,
    errs: &mut Vec<FieldError>,
) {
    let field = if path.is_empty() { "<root>" } else { path };
    for req in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !map.contains_key(req) {
            errs.push(FieldError::required(join(path, req), ""));
        }
    }
    // At the root, apiVersion, kind and metadata count as properties as upstream sees them.
    let count = map.len();
    if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
        && count as u64 > max
    {
        errs.push(FieldError::too_many(field, count, max as usize));
    }
    if let Some(min) = schema.get("minProperties").and_then(Value::as_u64)
        && (count as u64) < min
    {
        errs.push(openapi_error(
            field,
            Some(&Value::from(min)),
            format!("{field} in body should have at least {min} properties"),
        ));
    }
    let props = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    for (k, child) in map {
        if root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(cs) = props.and_then(|p| p.get(k)).or(additional) {
            let old_child = old.and_then(|o| o.get(k));
            validate_at(child, old_child, cs, &join(path, k), false, errs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                "port": {"x-kubernetes-int-or-string": true},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 3}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            }},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        }})
    }

    #[test]
    fn prunes_unknown_fields_and_reports_them() {
        let mut obj = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w"},
            "spec": {"size": 1, "bogus": 1, "free": {"anything": [1]}, "labels": {"a": "b"}}, "extra": true});
        let unknown = prune(&mut obj, &schema());
        assert_eq!(unknown, vec!["extra".to_owned(), "spec.bogus".to_owned()]);
        assert_eq!(obj["spec"]["free"]["anything"], json!([1]));
        assert_eq!(obj["spec"]["labels"]["a"], "b");
        assert_eq!(obj["metadata"]["name"], "w");
    }

    /// ratcheting.go: unchanged invalid values pass an update; changed ones, and new items of
    /// a map list, do not.
    #[test]
    fn updates_ratchet_unchanged_values() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "size": {"type": "integer", "maximum": 10},
            "name": {"type": "string", "maxLength": 3},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}}}},
        }}}});
        let old =
            json!({"spec": {"size": 20, "name": "long", "ports": [{"name": "a", "port": 200}]}});
        let same = json!({"spec": {"size": 20, "name": "long", "ports": [{"name": "a", "port": 200}, {"name": "b", "port": 1}]}});
        assert!(validate_update(&same, &old, &schema).is_empty());
        assert_eq!(validate(&same, &schema).len(), 3);
        let changed =
            json!({"spec": {"size": 21, "name": "long", "ports": [{"name": "b", "port": 200}]}});
        let text: Vec<String> = validate_update(&changed, &old, &schema)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(text, vec![
            "spec.ports[0].port: Invalid value: 200: spec.ports[0].port in body should be less than or equal to 100".to_owned(),
            "spec.size: Invalid value: 21: spec.size in body should be less than or equal to 10".to_owned(),
        ]);
    }

    #[test]
    fn applies_defaults() {
        let mut obj = json!({"spec": {"size": 2}});
        apply_defaults(&mut obj, &schema());
        assert_eq!(obj["spec"]["color"], "red");
    }

    #[test]
    fn validation_errors_name_the_field() {
        let obj = json!({"spec": {"size": "big", "color": "pink", "port": [1], "tags": ["a", "b", "long"]}});
        let errs = validate(&obj, &schema());
        let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert!(text.contains(&"spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"".to_owned()), "{text:?}");
        assert!(
            text.iter()
                .any(|t| t.starts_with("spec.color: Unsupported value: \"pink\"")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.starts_with("spec.port: Invalid value")),
            "{text:?}"
        );
        assert!(
            text.iter().any(|t| t.starts_with("spec.tags: Too many")),
            "{text:?}"
        );
        assert!(
            text.iter().any(|t| t.starts_with("spec.tags[2]: Too long")),
            "{text:?}"
        );
        let missing = validate(&json!({"spec": {}}), &schema());
        assert_eq!(missing[0].to_string(), "spec.size: Required value");
        let bounds = validate(&json!({"spec": {"size": 11}}), &schema());
        assert!(
            bounds[0]
                .to_string()
                .contains("should be less than or equal to 10"),
            "{}",
            bounds[0]
        );
        assert!(validate(&json!({"spec": {"size": 3, "port": "http"}}), &schema()).is_empty());
    }

    /// The messages of one value under one property schema.
    fn errors_of(prop: Value, value: Value) -> Vec<String> {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"x": prop}}}});
        validate(&json!({"spec": {"x": value}}), &schema)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn one_error(prop: Value, bad: Value, good: Value) -> String {
        assert!(
            errors_of(prop.clone(), good.clone()).is_empty(),
            "{prop} refused {good}"
        );
        let errs = errors_of(prop.clone(), bad.clone());
        assert_eq!(errs.len(), 1, "{prop} on {bad}: {errs:?}");
        errs[0].clone()
    }

    #[test]
    fn pattern_is_an_unanchored_re2_search() {
        assert_eq!(
            one_error(
                json!({"type": "string", "pattern": "^[a-z]+$"}),
                json!("abc1"),
                json!("abc")
            ),
            "spec.x: Invalid value: \"abc1\": spec.x in body should match '^[a-z]+$'"
        );
        // Go's regexp.MatchString finds the pattern anywhere.
        assert!(errors_of(json!({"type": "string", "pattern": "[0-9]"}), json!("ab1c")).is_empty());
    }

    #[test]
    fn string_lengths_count_characters() {
        assert_eq!(
            one_error(
                json!({"type": "string", "minLength": 3}),
                json!("ab"),
                json!("äöü")
            ),
            "spec.x: Invalid value: \"ab\": spec.x in body should be at least 3 chars long"
        );
        assert_eq!(
            one_error(
                json!({"type": "string", "maxLength": 3}),
                json!("abcd"),
                json!("äöü")
            ),
            "spec.x: Too long: may not be more than 3 bytes"
        );
    }

    #[test]
    fn numeric_bounds_and_multiples() {
        let cases = [
            (
                json!({"type": "integer", "minimum": 2}),
                json!(1),
                json!(2),
                "spec.x: Invalid value: 1: spec.x in body should be greater than or equal to 2",
            ),
            (
                json!({"type": "integer", "minimum": 2, "exclusiveMinimum": true}),
                json!(2),
                json!(3),
                "spec.x: Invalid value: 2: spec.x in body should be greater than 2",
            ),
            (
                json!({"type": "number", "maximum": 1.5}),
                json!(2.5),
                json!(1.5),
                "spec.x: Invalid value: 2.5: spec.x in body should be less than or equal to 1.5",
            ),
            (
                json!({"type": "integer", "maximum": 10, "exclusiveMaximum": true}),
                json!(10),
                json!(9),
                "spec.x: Invalid value: 10: spec.x in body should be less than 10",
            ),
            (
                json!({"type": "integer", "multipleOf": 5}),
                json!(12),
                json!(15),
                "spec.x: Invalid value: 12: spec.x in body should be a multiple of 5",
            ),
            (
                json!({"type": "number", "multipleOf": 0.5}),
                json!(1.2),
                json!(1.5),
                "spec.x: Invalid value: 1.2: spec.x in body should be a multiple of 0.5",
            ),
        ];
        for (prop, bad, good, want) in cases {
            assert_eq!(one_error(prop, bad, good), want);
        }
    }

    #[test]
    fn item_and_property_counts() {
        assert_eq!(
            one_error(
                json!({"type": "array", "minItems": 2}),
                json!([1]),
                json!([1, 2])
            ),
            "spec.x: Invalid value: 1: spec.x in body should have at least 2 items"
        );
        assert_eq!(
            one_error(
                json!({"type": "array", "maxItems": 1}),
                json!([1, 2]),
                json!([1])
            ),
            "spec.x: Too many: 2: must have at most 1 item"
        );
        assert_eq!(
            one_error(
                json!({"type": "array", "uniqueItems": true}),
                json!([1, 1]),
                json!([1, 2])
            ),
            "spec.x: Invalid value: \"\": spec.x in body shouldn't contain duplicates"
        );
        let map = json!({"type": "object", "additionalProperties": {"type": "string"},
            "minProperties": 1, "maxProperties": 2});
        assert_eq!(
            one_error(map.clone(), json!({}), json!({"a": "1"})),
            "spec.x: Invalid value: 1: spec.x in body should have at least 1 properties"
        );
        assert_eq!(
            one_error(
                map,
                json!({"a": "1", "b": "2", "c": "3"}),
                json!({"a": "1", "b": "2"})
            ),
            "spec.x: Too many: 3: must have at most 2 items"
        );
    }

    #[test]
    fn required_and_nullable() {
        let prop = json!({"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}}});
        assert_eq!(
            one_error(prop, json!({}), json!({"name": "a"})),
            "spec.x.name: Required value"
        );
        assert_eq!(
            one_error(json!({"type": "string"}), Value::Null, json!("a")),
            "spec.x: Invalid value: null: spec.x in body must be of type string: \"null\""
        );
        assert!(errors_of(json!({"type": "string", "nullable": true}), Value::Null).is_empty());
    }

    #[test]
    fn formats_upstream_checks_and_ignores_the_rest() {
        assert_eq!(
            one_error(
                json!({"type": "string", "format": "uuid"}),
                json!("abc"),
                json!("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
            ),
            "spec.x: Invalid value: \"abc\": spec.x in body must be of type uuid: \"abc\""
        );
        assert_eq!(
            one_error(
                json!({"type": "string", "format": "date-time"}),
                json!("yesterday"),
                json!("2024-01-02T03:04:05Z")
            ),
            "spec.x: Invalid value: \"yesterday\": spec.x in body must be of type date-time: \"yesterday\""
        );
        assert!(errors_of(json!({"type": "string", "format": "int32"}), json!("x")).is_empty());
    }

    #[test]
    fn list_types_refuse_duplicates() {
        let set =
            json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
        assert_eq!(
            one_error(set, json!(["a", "a"]), json!(["a", "b"])),
            "spec.x[1]: Duplicate value: \"a\""
        );
    }

    #[test]
    fn junctors() {
        let any = json!({"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]});
        assert_eq!(
            one_error(any, json!(5), json!(11)),
            "spec.x: Invalid value: \"\": spec.x in body must validate at least one schema (anyOf)"
        );
        let one = json!({"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]});
        assert_eq!(
            one_error(one, json!(5), json!(11)),
            "spec.x: Invalid value: \"\": spec.x in body must validate one and only one schema (oneOf). Found 2 valid alternatives"
        );
        let not = json!({"type": "string", "not": {"enum": ["forbidden"]}});
        assert_eq!(
            one_error(not, json!("forbidden"), json!("fine")),
            "spec.x: Invalid value: \"\": spec.x in body must not validate the schema (not)"
        );
        let all = json!({"type": "string", "allOf": [{"minLength": 2}, {"pattern": "^a"}]});
        assert_eq!(
            one_error(all, json!("ba"), json!("ab")),
            "spec.x: Invalid value: \"ba\": spec.x in body should match '^a'"
        );
    }
}
