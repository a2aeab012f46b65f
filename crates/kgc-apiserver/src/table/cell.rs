//! Cell values as upstream printers format fields: absent and mistyped fields print as the Go
//! zero value, labels and selectors as `k=v` lists, ages as [`super::duration::human_duration`].

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::{Map, Value};

use super::duration::human_duration;

/// Go's zero `time.Time` (0001-01-01T00:00:00Z), which `metav1.Time.IsZero` reports as unset.
pub(super) const GO_ZERO_TIME: i64 = -62_135_596_800;

/// A `metav1.Time` / `MicroTime`; `None` when absent, unparsable or Go's zero time.
pub(super) fn timestamp(v: &Value) -> Option<Timestamp> {
    let t: Timestamp = v.as_str()?.parse().ok()?;
    (t.as_second() != GO_ZERO_TIME).then_some(t)
}

/// `translateTimestampSince`: the age of a timestamp, `<unknown>` when unset.
pub(super) fn since(v: &Value, now: Timestamp) -> String {
    match timestamp(v) {
        Some(t) => human_duration(now.duration_since(t)),
        None => "<unknown>".into(),
    }
}

pub(super) fn age(obj: &Value, now: Timestamp) -> Value {
    Value::String(since(&obj["metadata"]["creationTimestamp"], now))
}

pub(super) fn st(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// A string field, or `default` when absent or empty.
pub(super) fn st_or<'a>(v: &'a Value, default: &'a str) -> &'a str {
    match v.as_str() {
        Some(s) if !s.is_empty() => s,
        _ => default,
    }
}

pub(super) fn int(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| i64::try_from(u).unwrap_or(i64::MAX)))
        .or_else(|| v.as_f64().map(|f| f as i64))
        .unwrap_or(0)
}

pub(super) fn int_or(v: &Value, default: i64) -> i64 {
    if v.is_number() { int(v) } else { default }
}

pub(super) fn arr(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

pub(super) fn map_len(v: &Value) -> usize {
    v.as_object().map_or(0, Map::len)
}

pub(super) fn name(obj: &Value) -> Value {
    Value::String(st(&obj["metadata"]["name"]).to_owned())
}

pub(super) fn deleting(obj: &Value) -> bool {
    !obj["metadata"]["deletionTimestamp"].is_null()
}

/// A `resource.Quantity` as text (`.String()`); zero when absent. Quantities are printed as
/// written, not canonicalized.
pub(super) fn quantity(v: &Value) -> String {
    match v {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "0".into(),
    }
}

/// An `IntOrString` as text.
pub(super) fn int_or_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `labels.FormatLabels`: `k=v` sorted by key, `<none>` when empty.
pub(super) fn format_labels(v: &Value) -> String {
    let Some(m) = v.as_object() else {
        return "<none>".into();
    };
    let sorted: BTreeMap<&str, &str> = m.iter().map(|(k, v)| (k.as_str(), st(v))).collect();
    let s = sorted
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    if s.is_empty() { "<none>".into() } else { s }
}

/// `metav1.LabelSelectorAsSelector(sel).String()`: requirements sorted by key, set values sorted.
/// `Err` for an invalid operator or value count.
pub(super) fn label_selector_string(sel: &Value) -> Result<String, ()> {
    if sel.is_null() {
        return Ok(String::new());
    }
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = sel["matchLabels"].as_object() {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", st(v))));
        }
    }
    for expr in arr(&sel["matchExpressions"]) {
        let key = st(&expr["key"]);
        let mut values: Vec<&str> = arr(&expr["values"]).iter().map(st).collect();
        values.sort_unstable();
        let text = match st(&expr["operator"]) {
            op @ ("In" | "NotIn") => {
                if values.is_empty() {
                    return Err(());
                }
                let word = if op == "In" { "in" } else { "notin" };
                format!("{key} {word} ({})", values.join(","))
            }
            "Exists" if values.is_empty() => key.to_owned(),
            "DoesNotExist" if values.is_empty() => format!("!{key}"),
            _ => return Err(()),
        };
        reqs.push((key.to_owned(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(reqs
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(","))
}

/// `metav1.FormatLabelSelector`: `<none>` when empty, `<error>` when invalid.
pub(super) fn format_label_selector(sel: &Value) -> String {
    match label_selector_string(sel) {
        Ok(s) if s.is_empty() => "<none>".into(),
        Ok(s) => s,
        Err(()) => "<error>".into(),
    }
}

/// `layoutContainerCells`: container names and images, comma-joined.
pub(super) fn container_cells(containers: &Value) -> (Value, Value) {
    let list = arr(containers);
    let names = list
        .iter()
        .map(|c| st(&c["name"]))
        .collect::<Vec<_>>()
        .join(",");
    let images = list
        .iter()
        .map(|c| st(&c["image"]))
        .collect::<Vec<_>>()
        .join(",");
    (Value::String(names), Value::String(images))
}

/// `listWithMoreString`.
pub(super) fn list_with_more(list: &[String], more: bool, count: usize, max: usize) -> String {
    let ret = list.join(",");
    if more {
        return format!("{ret} + {} more...", count - max);
    }
    if ret.is_empty() {
        "<unset>".into()
    } else {
        ret
    }
}
