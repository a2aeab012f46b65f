//! The difference upstream appends to "may not change" errors. kube-apiserver prints
//! `cmp.Diff(old, new)` of its internal Go structs there, which cannot be reproduced from JSON;
//! this renders the changed top-level fields in the same layout (`-` old, `+` new, Go-style field
//! names) so the message stays informative and its first line — the part clients match — stays
//! upstream's.

use std::fmt;

use kgc_meta::gojson::go_json;
use serde_json::Value;

use crate::field::Errors;
use crate::json::same;

/// Upstream's "may not change" errors: unless `new` is `old` (a `type_name`), a `Forbidden` at
/// `path` whose detail is `msg`, a newline and the difference (`msg` is formatted only then).
pub(crate) fn forbid_changes(
    path: &str,
    msg: impl fmt::Display,
    type_name: &str,
    old: &Value,
    new: &Value,
    errs: &mut Errors,
) {
    if !same(old, new) {
        errs.forbidden(path, format!("{msg}\n{}", diff(type_name, old, new)));
    }
}

/// `cmp.Diff`-like lines for the fields of `old` and `new` that differ, inside `type_name{…}`.
fn diff(type_name: &str, old: &Value, new: &Value) -> String {
    let mut keys: Vec<&String> = old
        .as_object()
        .into_iter()
        .chain(new.as_object())
        .flat_map(|m| m.keys())
        .collect();
    keys.sort();
    keys.dedup();
    let mut out = format!("  {type_name}{{\n");
    for k in keys {
        let (o, n) = (old.get(k.as_str()), new.get(k.as_str()));
        let null = Value::Null;
        if same(o.unwrap_or(&null), n.unwrap_or(&null)) {
            continue;
        }
        let name = go_field_name(k);
        if let Some(o) = o.filter(|v| !v.is_null()) {
            out.push_str(&format!("- \t{name}: {},\n", go_json(o)));
        }
        if let Some(n) = n.filter(|v| !v.is_null()) {
            out.push_str(&format!("+ \t{name}: {},\n", go_json(n)));
        }
    }
    out.push_str("  }\n");
    out
}

/// A JSON field name as the Go field it comes from (`nodeName` → `NodeName`).
fn go_field_name(json: &str) -> String {
    let mut c = json.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_changed_fields_only() {
        assert_eq!(
            diff(
                "core.PodSpec",
                &json!({"nodeName": "a", "hostname": "h", "x": null}),
                &json!({"nodeName": "b", "hostname": "h", "subdomain": "s"})
            ),
            "  core.PodSpec{\n- \tNodeName: \"a\",\n+ \tNodeName: \"b\",\n+ \tSubdomain: \"s\",\n  }\n"
        );
    }
}
