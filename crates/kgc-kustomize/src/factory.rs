//! Resource files read as kustomize's `resource.Factory` (`kubernetes-sigs/kustomize
//! api/resource/factory.go` over kyaml's reader): every YAML or JSON document an object,
//! `List`s flattened, and the values as kustomize's own round trips leave them.

use std::path::Path;

use serde_json::Value;

use crate::Error;
use crate::error::first_line;
use crate::resource::Resource;

/// The objects of a resource file: every YAML (or JSON) document, `List`s flattened.
pub fn parse_resources(path: &Path, text: &str) -> Result<Vec<Resource>, Error> {
    let invalid = |field: String, message: String| Error::Invalid {
        file: path.to_owned(),
        field,
        message,
    };
    // kyaml reads resources with go-yaml v3 (YAML 1.2): only `true`/`false` are booleans,
    // `y`, `yes`, `on` stay strings.
    // serde-saphyr's default budget (1024 documents, 250k nodes) guards untrusted input; a
    // repository's manifests (CRD bundles) exceed it, so the limits are raised, not removed.
    let mut budget = serde_saphyr::Budget::default();
    budget.max_documents = 1_000_000;
    budget.max_nodes = 50_000_000;
    budget.max_events = 200_000_000;
    // go-yaml v3 reads a leading-zero integer as octal (`0755` is 493), as `strconv`'s base 0.
    let options = serde_saphyr::options! {
        strict_booleans: true,
        legacy_octal_numbers: true,
        budget: Some(budget),
    };
    let docs: Vec<Value> = serde_saphyr::from_multiple_with_options(text, options)
        .map_err(|e| invalid("documents".into(), first_line(&e.to_string())))?;
    let mut out = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let field = format!("documents[{i}]");
        match doc {
            Value::Null => {}
            Value::Object(ref o) => {
                let kind = o.get("kind").and_then(Value::as_str).unwrap_or_default();
                if kind.ends_with("List") && o.get("items").is_some_and(Value::is_array) {
                    if let Some(Value::Array(items)) = o.get("items") {
                        for item in items {
                            out.push(checked(item.clone()).map_err(|m| invalid(field.clone(), m))?);
                        }
                    }
                } else {
                    out.push(checked(doc).map_err(|m| invalid(field, m))?);
                }
            }
            _ => return Err(invalid(field, "not a YAML mapping".into())),
        }
    }
    Ok(out)
}

/// kustomize turns objects into JSON on the way (kyaml's `RNode.Map`): a float without a
/// fraction (`1.0`, `1e3`) becomes the integer JSON prints it as.
fn json_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9.0e15
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(json_numbers),
        Value::Object(map) => map.values_mut().for_each(json_numbers),
        _ => {}
    }
}

/// A resource must say what it is: kustomize refuses objects without kind or name.
fn checked(mut object: Value) -> Result<Resource, String> {
    json_numbers(&mut object);
    // kyaml's reader rewrites the annotations (it adds and later drops its own), which leaves
    // every value a string: `port: 8080` comes out `"8080"`, `x: null` as `"null"`.
    if let Some(Value::Object(annotations)) = object.pointer_mut("/metadata/annotations") {
        for value in annotations.values_mut() {
            let text = match &*value {
                Value::String(_) => continue,
                Value::Null => "null".to_owned(),
                other => other.to_string(),
            };
            *value = Value::String(text);
        }
    }
    let has = |p: &str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    if !has("/kind") {
        return Err("missing kind in object".into());
    }
    if !has("/metadata/name") {
        return Err("missing metadata.name in object".into());
    }
    Ok(Resource::new(object))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Value>, Error> {
        parse_resources(Path::new("r.yaml"), text)
            .map(|rs| rs.into_iter().map(|r| r.object).collect())
    }

    #[test]
    fn lists_flattened_empty_documents_skipped_values_as_kustomize_leaves_them() {
        let objects = parse(
            "---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n\
             ---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  annotations: {port: 8080}\ndata: {on: y}\nspec: {f: 1.0, o: 0755}\n",
        )
        .unwrap();
        assert_eq!(objects.len(), 2);
        assert_eq!(objects[1]["metadata"]["annotations"]["port"], "8080");
        assert_eq!(objects[1]["data"]["on"], "y");
        assert_eq!(objects[1]["spec"]["f"], 1);
        assert_eq!(objects[1]["spec"]["o"], 493);
    }

    #[test]
    fn objects_without_kind_or_name_and_bad_yaml_are_one_line_errors() {
        let e = parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "r.yaml: documents[0]: missing metadata.name in object"
        );
        let e = parse("a: [\n").unwrap_err().to_string();
        assert!(
            e.starts_with("r.yaml: documents: ") && !e.contains('\n'),
            "{e}"
        );
    }
}
