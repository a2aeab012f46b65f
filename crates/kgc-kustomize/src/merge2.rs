//! The strategic merge kustomize does (`kubernetes-sigs/kustomize
//! api/filters/patchstrategicmerge` over `kyaml/yaml/merge2` and `kyaml/yaml/walk`), which is
//! not the API server's (`kgc_patch::strategic`): the output of `kubectl kustomize` depends on
//! the differences, so they are kept.
//!
//! - Lists merge by key only where the schema says `x-kubernetes-patch-strategy: merge`
//!   (kustomize's merge keys are not inferred for patches); every other list is replaced.
//! - Merged lists put the patch's items first, in the patch's order, then the object's items
//!   the patch does not name (kustomize's `MergeOptionsListPrepend`); lists of scalars merged as
//!   sets likewise (`finalizers: [new, old]`).
//! - `null` deletes a field; `$patch: delete` deletes a map, a list item or (at the top) the
//!   whole resource; `$patch: replace` replaces a map or a list (`[{$patch: replace}, …]`), but
//!   on an item of a merged list and at the top of the patch it changes nothing, because kyaml
//!   merges into the object in place and those two results are dropped. `$retainKeys`,
//!   `$setElementOrder` and `$deleteFromPrimitiveList` are not kustomize directives.
//! - Values taken from the patch where the object has none are the patch merged with itself:
//!   their `null` fields and `$patch: delete` maps are dropped.
//! - The whole object is walked, not only where the patch goes: its merged lists are rebuilt
//!   wherever they are. kyaml also drops the object's empty values (`key:`) on the way but
//!   keeps its `key: null`; serde reads both as `null`, and kgc keeps them all (the common
//!   one is kubectl's `creationTimestamp: null`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::openapi::Node;

const DIRECTIVE: &str = "$patch";

type R<T> = Result<T, String>;

/// `patch` merged into `dest`; `None` when the patch deletes the resource. Errors name the
/// field at fault (`spec.template: wrong node kind…`).
pub fn merge(dest: &Value, patch: &Value, schema: Option<Node>) -> R<Option<Value>> {
    // kyaml keeps the result only as far as it changed the object in place: a top-level
    // `$patch: replace` returns the patch instead, which kustomize discards.
    if let (Value::Object(_), Some(Value::String(d))) = (dest, patch.get(DIRECTIVE))
        && d == "replace"
    {
        return Ok(Some(dest.clone()));
    }
    let merged = walk(Some(dest), Some(patch), schema, &mut Vec::new())?;
    Ok(merged
        .map(|(v, _)| v)
        .filter(|v| !v.is_null() && v.as_object().is_none_or(|m| !m.is_empty())))
}

/// What a walk produced, and whether it is the object's value merged into (`true`) rather than
/// a value taken from the patch: kyaml merges into the object in place, which decides what
/// survives in merged lists.
type Walked = Option<(Value, bool)>;

fn node_kind(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "MappingNode",
        Value::Array(_) => "SequenceNode",
        _ => "ScalarNode",
    }
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn at(path: &[String], message: String) -> String {
    if path.is_empty() {
        message
    } else {
        format!("{}: {message}", path.join("."))
    }
}

/// kyaml `Walker.Walk`: the kind of the first value present decides how the two merge.
fn walk(
    dest: Option<&Value>,
    origin: Option<&Value>,
    schema: Option<Node>,
    path: &mut Vec<String>,
) -> R<Walked> {
    if let (Some(d), Some(o)) = (present(dest), present(origin))
        && node_kind(d) != node_kind(o)
    {
        return Err(at(
            path,
            format!(
                "wrong node kind: expected {} but got {}",
                node_kind(d),
                node_kind(o)
            ),
        ));
    }
    match present(dest).or(present(origin)) {
        None | Some(Value::Object(_)) => walk_map(dest, origin, schema, path),
        Some(Value::Array(_)) => match schema.and_then(Node::merge_keys) {
            Some(keys) => walk_merged_list(dest, origin, schema, &keys, path),
            None => Ok(take_patch(dest, origin)),
        },
        Some(_) => Ok(take_patch(dest, origin)),
    }
}

/// Scalars and replaced lists: the patch's value if it has one (`null` deletes), else the
/// object's.
fn take_patch(dest: Option<&Value>, origin: Option<&Value>) -> Walked {
    match origin {
        Some(Value::Null) => None,
        Some(o) => Some((o.clone(), false)),
        None => dest.map(|d| (d.clone(), true)),
    }
}

enum Directive<T> {
    Merge(T),
    Replace(T),
    Delete,
}

/// A patch map's `$patch`, and the map without it (kyaml `determineMappingNodePatchStrategy`).
fn map_directive(o: &Map<String, Value>) -> R<Directive<Map<String, Value>>> {
    let Some(d) = o.get(DIRECTIVE) else {
        return Ok(Directive::Merge(o.clone()));
    };
    let mut rest = o.clone();
    rest.remove(DIRECTIVE);
    match d.as_str() {
        Some("delete") => Ok(Directive::Delete),
        Some("replace") => Ok(Directive::Replace(rest)),
        Some("merge") => Ok(Directive::Merge(rest)),
        _ => Err(format!("unknown patch strategy '{}'", scalar(d))),
    }
}

/// kyaml `Merger.VisitMap`, then the map's fields one by one.
fn walk_map(
    dest: Option<&Value>,
    origin: Option<&Value>,
    schema: Option<Node>,
    path: &mut Vec<String>,
) -> R<Walked> {
    let Some(Value::Object(d)) = present(dest) else {
        return match origin {
            // Where the object has nothing, the patch's map merges with itself.
            Some(Value::Object(o)) => match map_directive(o) {
                Ok(Directive::Delete) => Ok(None),
                Ok(Directive::Merge(o) | Directive::Replace(o)) => Ok(Some((
                    Value::Object(merge_fields(&o, &o, schema, path)?),
                    false,
                ))),
                // kyaml ignores a bad directive here and keeps the map as written.
                Err(_) => Ok(Some((
                    Value::Object(merge_fields(o, o, schema, path)?),
                    false,
                ))),
            },
            // A `null` in the object the patch does not mention: kyaml keeps `key: null` and
            // `key: ~` but drops `key:` (an empty value), which serde cannot tell apart. The
            // null kept is the common one (`creationTimestamp: null`, as kubectl writes
            // manifests), so every null is kept.
            None => Ok(dest.map(|d| (d.clone(), true))),
            _ => Ok(None),
        };
    };
    match origin {
        // The object's map is walked all the same (its merged lists are rebuilt).
        None => Ok(Some((
            Value::Object(merge_fields(d, &Map::new(), schema, path)?),
            true,
        ))),
        Some(Value::Object(o)) => match map_directive(o).map_err(|e| at(path, e))? {
            Directive::Delete => Ok(None),
            Directive::Replace(o) => Ok(Some((
                Value::Object(merge_fields(&o, &o, schema, path)?),
                false,
            ))),
            Directive::Merge(o) => Ok(Some((
                Value::Object(merge_fields(d, &o, schema, path)?),
                true,
            ))),
        },
        _ => Ok(None),
    }
}

fn merge_fields(
    d: &Map<String, Value>,
    o: &Map<String, Value>,
    schema: Option<Node>,
    path: &mut Vec<String>,
) -> R<Map<String, Value>> {
    let names: BTreeSet<&String> = d.keys().chain(o.keys()).collect();
    let mut out = Map::new();
    for name in names {
        path.push(name.clone());
        let walked = walk(
            d.get(name),
            o.get(name),
            schema.and_then(|s| s.field(name)),
            path,
        )?;
        path.pop();
        if let Some((v, _)) = walked {
            out.insert(name.clone(), v);
        }
    }
    Ok(out)
}

/// A list's directive item (`- $patch: replace`, alone in its map), and the list without it
/// (kyaml `determineSequenceNodePatchStrategy`).
fn list_directive(o: &[Value]) -> R<Directive<Vec<Value>>> {
    let found = o
        .iter()
        .position(|v| v.get(DIRECTIVE).is_some())
        .filter(|&i| o[i].as_object().is_some_and(|m| m.len() == 1));
    let Some(i) = found else {
        return Ok(Directive::Merge(o.to_vec()));
    };
    let mut rest = o.to_vec();
    let item = rest.remove(i);
    match item[DIRECTIVE].as_str() {
        Some("delete") => Ok(Directive::Delete),
        Some("replace") => Ok(Directive::Replace(rest)),
        Some("merge") => Ok(Directive::Merge(rest)),
        _ => Err(format!(
            "unknown patch strategy '{}'",
            scalar(&item[DIRECTIVE])
        )),
    }
}

/// A scalar as YAML text (how kyaml compares merge keys).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null | Value::Object(_) | Value::Array(_) => String::new(),
        other => other.to_string(),
    }
}

/// kyaml `walkAssociativeSequence` (`VisitList`, then `setAssociativeSequenceElements`),
/// including what it does with items that lack a key or leave one of several keys empty
/// (kyaml matches them loosely; a patch item can then be lost, or the object's keyed items
/// removed, and `kubectl kustomize` prints exactly that).
fn walk_merged_list(
    dest: Option<&Value>,
    origin: Option<&Value>,
    schema: Option<Node>,
    keys: &[String],
    path: &mut Vec<String>,
) -> R<Walked> {
    let (mut d, o): (Vec<Value>, Vec<Value>) = match (present(dest), origin) {
        // Where the object has no list, the patch's merges with itself.
        (None, Some(Value::Array(o))) => (o.clone(), o.clone()),
        // The object's list is rebuilt all the same (kyaml walks every merged list).
        (Some(Value::Array(d)), None) => (d.clone(), Vec::new()),
        (Some(Value::Array(d)), Some(Value::Array(o))) => {
            match list_directive(o).map_err(|e| at(path, e))? {
                Directive::Delete => return Ok(None),
                Directive::Replace(o) => (o.clone(), o),
                Directive::Merge(o) => (d.clone(), o),
            }
        }
        _ => return Ok(None),
    };
    if keys.is_empty() {
        // A set of scalars: the patch's values first, then the object's.
        let mut seen = BTreeSet::new();
        let merged = o
            .into_iter()
            .chain(d)
            .filter(|v| seen.insert(scalar(v)))
            .collect();
        return Ok(Some((Value::Array(merged), true)));
    }
    let elements = schema.and_then(Node::elements);
    // The key values of every item, the patch's first (kyaml `elementValues`).
    let mut seen = BTreeSet::new();
    let mut values: Vec<Vec<String>> = o
        .iter()
        .chain(&d)
        .map(|e| {
            keys.iter()
                .map(|k| e.get(k).map(scalar).unwrap_or_default())
                .collect()
        })
        .filter(|v: &Vec<String>| seen.insert(v.clone()))
        .collect();
    if keys.len() > 1 {
        merge_values(&mut values);
    }
    let mut items: Vec<Value> = Vec::new();
    let mut last_keys = keys.to_vec();
    for value in &values {
        let (vk, vv) = validate_keys(&values, value, keys);
        let (ek, ev) = validate_keys(std::slice::from_ref(&vv), &vv, &vk);
        let di = element_list(&d, &ek, &ev);
        let oi = element_list(&o, &ek, &ev);
        path.push(format!("[{}]", keyed(&vk, &vv)));
        let walked = walk(di.map(|i| &d[i]), oi.map(|i| &o[i]), elements, path)?;
        path.pop();
        let merged =
            walked.filter(|(v, _)| !v.is_null() && v.as_object().is_none_or(|m| !m.is_empty()));
        let Some((mut v, from_dest)) = merged else {
            element_setter(&mut d, None, &vk, &vv);
            continue;
        };
        if let Value::Object(m) = &mut v {
            for (k, kv) in vk.iter().zip(&vv) {
                if !m.contains_key(k) && !kv.is_empty() {
                    m.insert(k.clone(), Value::String(kv.clone()));
                }
            }
        }
        // kyaml merges into the object's item in place; a value taken from the patch instead
        // (`$patch: replace`) never reaches the object, whose item wins below.
        if let (Some(i), true) = (di, from_dest) {
            d[i] = v.clone();
        }
        element_setter(&mut items, Some(v), &vk, &vv);
        last_keys = vk;
    }
    if !values.is_empty() {
        append_list(&mut items, d, &last_keys);
    }
    Ok(Some((Value::Array(items), true)))
}

/// kyaml `mergeValues`: two key tuples that agree where both are set (and share a value) are
/// the same item, with the empty keys filled in.
fn merge_values(list: &mut [Vec<String>]) {
    for i in 0..list.len() {
        for j in 0..list.len() {
            let (a, b) = (&list[i], &list[j]);
            let mut common = false;
            let mut merged = Vec::with_capacity(a.len());
            let mut clash = false;
            for (x, y) in a.iter().zip(b) {
                if x == y {
                    common = true;
                    merged.push(x.clone());
                } else if !x.is_empty() && !y.is_empty() {
                    clash = true;
                    break;
                } else {
                    merged.push(if x.is_empty() { y.clone() } else { x.clone() });
                }
            }
            if common && !clash {
                list[i] = merged.clone();
                list[j] = merged;
            }
        }
    }
}

/// kyaml `validateKeys`: only the keys some item sets take part (all of them when none does).
fn validate_keys(
    all: &[Vec<String>],
    values: &[String],
    keys: &[String],
) -> (Vec<String>, Vec<String>) {
    let valid: BTreeSet<usize> = all
        .iter()
        .flat_map(|vs| vs.iter().enumerate().filter(|(_, v)| !v.is_empty()))
        .map(|(i, _)| i)
        .collect();
    if valid.is_empty() {
        return (keys.to_vec(), values.to_vec());
    }
    let vk = keys
        .iter()
        .enumerate()
        .filter(|(i, _)| valid.contains(i))
        .map(|(_, k)| k.clone())
        .collect();
    let vv = values
        .iter()
        .enumerate()
        .filter(|(i, v)| !v.is_empty() || valid.contains(i))
        .map(|(_, v)| v.clone())
        .collect();
    (vk, vv)
}

/// kyaml `ElementMatcher`: the first map item whose keys have exactly these values.
fn element_list(list: &[Value], keys: &[String], values: &[String]) -> Option<usize> {
    list.iter().position(|e| {
        e.is_object()
            && keys
                .iter()
                .zip(values)
                .all(|(k, v)| e.get(k).is_some_and(|f| scalar(f) == *v))
    })
}

/// kyaml `ElementSetter`: replaces the items matching `values` (an empty value matches any
/// item that has the key) by `element`, or removes them when there is none; appends
/// `element` when nothing matched. Null and empty-map items are dropped on the way, and with
/// no values at all nothing matches and every other item is dropped (kyaml's behaviour when
/// the object has an item without a key: the merged items before it are lost).
fn element_setter(
    list: &mut Vec<Value>,
    element: Option<Value>,
    keys: &[String],
    values: &[String],
) {
    let mut out = Vec::with_capacity(list.len() + 1);
    let mut found_any = false;
    for e in list.drain(..) {
        if e.is_null() || e.as_object().is_some_and(Map::is_empty) {
            continue;
        }
        let matches = e.is_object()
            && !values.is_empty()
            && keys
                .iter()
                .zip(values)
                .all(|(k, v)| e.get(k).is_some_and(|f| v.is_empty() || scalar(f) == *v));
        if !matches {
            if !values.is_empty() {
                out.push(e);
            }
            continue;
        }
        found_any = true;
        if let Some(el) = &element {
            out.push(el.clone());
        }
    }
    if let Some(el) = element
        && !found_any
    {
        out.push(el);
    }
    *list = out;
}

/// kyaml `appendListNode`: the object's items set into the merged ones (replacing the item
/// with the same keys, else appended; an item without one of the keys is appended as is).
fn append_list(items: &mut Vec<Value>, dest: Vec<Value>, keys: &[String]) {
    for e in dest {
        let mut v = Vec::new();
        for k in keys {
            match e.get(k) {
                Some(f) => v.push(scalar(f)),
                None => items.push(e.clone()),
            }
        }
        if keys.len() > 1 {
            element_setter(items, None, keys, &v);
        }
        element_setter(items, Some(e), keys, &v);
    }
}

fn keyed(keys: &[String], values: &[String]) -> String {
    keys.iter()
        .zip(values)
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi::Schemas;
    use serde_json::json;

    fn smp(dest: Value, patch: Value) -> Option<Value> {
        let schemas = Schemas::Builtin;
        let s = schemas.for_kind(
            dest["apiVersion"].as_str().unwrap(),
            dest["kind"].as_str().unwrap(),
        );
        merge(&dest, &patch, s).unwrap()
    }

    fn dep(spec: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d",
            "finalizers": ["y"]}, "spec": {"template": {"spec": spec}}})
    }

    #[test]
    fn containers_merge_by_name_patch_items_first() {
        let out = smp(
            dep(json!({"containers": [{"name": "a", "image": "A"},
                {"name": "b", "image": "B", "args": ["y"]}], "tolerations": [{"key": "k1"}]})),
            dep(
                json!({"containers": [{"name": "b", "image": "B2", "args": ["x"]}],
                "tolerations": [{"key": "k2"}]}),
            ),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["template"]["spec"],
            json!({"containers": [{"name": "b", "image": "B2", "args": ["x"]},
                {"name": "a", "image": "A"}], "tolerations": [{"key": "k2"}]})
        );
    }

    #[test]
    fn sets_of_scalars_put_the_patch_first() {
        let mut p = dep(json!({}));
        p["metadata"]["finalizers"] = json!(["z", "y"]);
        let out = smp(dep(json!({})), p).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["z", "y"]));
    }

    #[test]
    fn directives_and_nulls() {
        let out = smp(
            dep(json!({"containers": [{"name": "a", "image": "A"},
                {"name": "b", "image": "B", "env": [{"name": "E", "value": "1"}]}],
                "nodeSelector": {"x": "1", "y": "2"}, "dnsPolicy": "None"})),
            dep(json!({"containers": [
                {"name": "b", "$patch": "replace", "image": "R"},
                {"name": "a", "$patch": "delete"},
                {"name": "c", "image": "C", "env": null,
                    "ports": [{"containerPort": 1, "$patch": "delete"}]}],
                "nodeSelector": {"$patch": "replace", "z": "3"}, "dnsPolicy": null})),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["template"]["spec"],
            json!({"containers": [
                {"name": "b", "image": "B", "env": [{"name": "E", "value": "1"}]},
                {"name": "c", "image": "C", "ports": []}],
                "nodeSelector": {"z": "3"}})
        );
    }

    #[test]
    fn list_directives() {
        let out = smp(
            dep(json!({"containers": [{"name": "a"}, {"name": "b"}]})),
            dep(json!({"containers": [{"$patch": "replace"}, {"name": "c"}]})),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name": "c"}])
        );
        let out = smp(
            dep(json!({"containers": [{"name": "a"}], "volumes": [{"name": "v"}]})),
            dep(json!({"containers": [{"$patch": "delete"}]})),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["template"]["spec"],
            json!({"volumes": [{"name": "v"}]})
        );
        let e = merge(
            &dep(json!({"containers": []})),
            &dep(json!({"containers": [{"$patch": "nope"}]})),
            None,
        );
        assert!(e.is_ok(), "without a schema the list is replaced");
        let s = Schemas::Builtin;
        let e = merge(
            &dep(json!({"containers": []})),
            &dep(json!({"containers": [{"$patch": "nope"}]})),
            s.for_kind("apps/v1", "Deployment"),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "spec.template.spec.containers: unknown patch strategy 'nope'"
        );
    }

    #[test]
    fn the_top_level_directives() {
        let d = dep(json!({"containers": [{"name": "a"}]}));
        let mut p = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d"}, "$patch": "delete"});
        assert_eq!(smp(d.clone(), p.clone()), None);
        p["$patch"] = json!("replace");
        p["spec"] = json!({"replicas": 3});
        assert_eq!(smp(d.clone(), p), Some(d));
    }

    #[test]
    fn kinds_must_agree() {
        let e = merge(
            &dep(json!({"containers": []})),
            &dep(json!({"containers": {"a": 1}})),
            None,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "spec.template.spec.containers: wrong node kind: expected SequenceNode but got MappingNode"
        );
    }

    /// Without a schema (a custom resource), maps merge and lists are replaced.
    #[test]
    fn unknown_kinds_replace_lists() {
        let cr = json!({"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f"},
            "spec": {"items": [{"name": "a"}, {"name": "b"}], "m": {"x": 1}}});
        let out = smp(
            cr,
            json!({"spec": {"items": [{"name": "b", "v": 2}], "m": {"y": 2}}}),
        )
        .unwrap();
        assert_eq!(
            out["spec"],
            json!({"items": [{"name": "b", "v": 2}], "m": {"x": 1, "y": 2}})
        );
    }
}
