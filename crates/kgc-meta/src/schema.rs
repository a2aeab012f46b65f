//! Custom-resource bodies against their CRD's structural schema: pruning of unknown fields,
//! defaulting, and validation (apiextensions-apiserver `pkg/apiserver/schema/pruning`,
//! `pkg/apiserver/schema/defaulting`, `pkg/apiserver/validation`).
//!
//! The subset of OpenAPI v3 implemented is what structural schemas use in practice: `type`,
//! `properties`, `items`, `additionalProperties`, `required`, `enum`, `default`, `nullable`,
//! numeric and length bounds, `x-kubernetes-preserve-unknown-fields`,
//! `x-kubernetes-int-or-string` and `x-kubernetes-embedded-resource`. `pattern` and `format` are
//! not checked.

use serde_json::{Map, Value};

use crate::validation::FieldError;

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
    validate_at(obj, schema, "", true, &mut errs);
    errs
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

fn validate_at(v: &Value, schema: &Value, path: &str, root: bool, errs: &mut Vec<FieldError>) {
    let field = if path.is_empty() { "<root>" } else { path };
    if v.is_null() {
        let nullable = schema
            .get("nullable")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !nullable
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
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if int_or_string {
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
        let supported: Vec<String> = options.iter().map(Value::to_string).collect();
        errs.push(FieldError::not_supported(
            field,
            v.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string()),
            &supported
                .iter()
                .map(|s| s.trim_matches('"'))
                .collect::<Vec<_>>(),
        ));
    }
    if let Some(n) = v.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
            let exclusive = schema
                .get("exclusiveMinimum")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if n < min || (exclusive && n == min) {
                let rel = if exclusive {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                errs.push(FieldError::invalid_value(
                    field,
                    v,
                    format!("{field} in body should be {rel} {min}"),
                ));
            }
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
            let exclusive = schema
                .get("exclusiveMaximum")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if n > max || (exclusive && n == max) {
                let rel = if exclusive {
                    "less than"
                } else {
                    "less than or equal to"
                };
                errs.push(FieldError::invalid_value(
                    field,
                    v,
                    format!("{field} in body should be {rel} {max}"),
                ));
            }
        }
    }
    if let Some(s) = v.as_str() {
        let len = s.chars().count() as u64;
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && len > max
        {
            errs.push(FieldError::too_long(field, s, max as usize));
        }
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && len < min
        {
            errs.push(FieldError::invalid_value(
                field,
                v,
                format!("{field} in body should be at least {min} chars long"),
            ));
        }
    }
    match v {
        Value::Object(map) => validate_object(map, schema, path, root, errs),
        Value::Array(items) => {
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && items.len() as u64 > max
            {
                errs.push(FieldError::too_many(field, items.len(), max as usize));
            }
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (items.len() as u64) < min
            {
                errs.push(FieldError::invalid_value(
                    field,
                    v,
                    format!("{field} in body should have at least {min} items"),
                ));
            }
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate_at(item, item_schema, &format!("{path}[{i}]"), false, errs);
                }
            }
        }
        _ => {}
    }
}

fn validate_object(
    map: &Map<String, Value>,
    schema: &Value,
    path: &str,
    root: bool,
    errs: &mut Vec<FieldError>,
) {
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
    let props = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    for (k, child) in map {
        if root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(cs) = props.and_then(|p| p.get(k)).or(additional) {
            validate_at(child, cs, &join(path, k), false, errs);
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
}
