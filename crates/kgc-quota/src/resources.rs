//! `corev1.ResourceList` arithmetic as kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/
//! quota/v1/resources.go` does it (`Add`, `Subtract`, `Mask`, `LessThanOrEqual`, `IsNegative`,
//! `RemoveZeros`), and the `name=value,…` rendering the refusal messages print.

use std::collections::BTreeMap;

use kgc_meta::quantity::Quantity;
use serde_json::{Map, Value};

/// A resource list, kept sorted by name so every rendering is deterministic (upstream sorts
/// before printing).
pub type ResourceList = BTreeMap<String, Quantity>;

/// `Add`: every name of either list, summed.
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (k, v) in b {
        let sum = match out.get(k) {
            Some(q) => q.add(v),
            None => v.clone(),
        };
        out.insert(k.clone(), sum);
    }
    out
}

/// `Subtract`: `a - b` over every name of either list.
pub fn subtract(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (k, v) in b {
        let diff = out.get(k).cloned().unwrap_or_default().sub(v);
        out.insert(k.clone(), diff);
    }
    out
}

/// `SubtractWithNonNegativeResult`: as [`subtract`], negative results read as zero.
pub fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    subtract(a, b)
        .into_iter()
        .map(|(k, v)| {
            if v.is_negative() {
                (k, Quantity::default())
            } else {
                (k, v)
            }
        })
        .collect()
}

/// `Mask`: only the entries named in `names`.
pub fn mask<'a>(list: &ResourceList, names: impl IntoIterator<Item = &'a str>) -> ResourceList {
    names
        .into_iter()
        .filter_map(|n| list.get(n).map(|q| (n.to_owned(), q.clone())))
        .collect()
}

/// `LessThanOrEqual`: whether every entry of `a` that `b` limits is within it, and the names
/// that are not (sorted).
pub fn exceeded(a: &ResourceList, b: &ResourceList) -> Vec<String> {
    a.iter()
        .filter(|(k, v)| b.get(*k).is_some_and(|limit| *v > limit))
        .map(|(k, _)| k.clone())
        .collect()
}

/// `IsNegative`: the names with a negative quantity.
pub fn negative(list: &ResourceList) -> Vec<String> {
    list.iter()
        .filter(|(_, v)| v.is_negative())
        .map(|(k, _)| k.clone())
        .collect()
}

/// `RemoveZeros`.
pub fn remove_zeros(list: ResourceList) -> ResourceList {
    list.into_iter().filter(|(_, v)| !v.is_zero()).collect()
}

/// `prettyPrint`: `name=value` pairs, sorted, joined by commas.
pub fn pretty(list: &ResourceList) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A JSON resource list (`spec.hard`, `status.used`); an entry that is not a quantity is left
/// out (validation refuses such objects before they are stored).
pub fn from_json(v: &Value) -> ResourceList {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| Quantity::from_json(q).ok().map(|q| (k.clone(), q)))
        .collect()
}

/// The JSON form of a list, quantities as their canonical strings.
pub fn to_json(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, v)| (k.clone(), Value::from(v.to_string())))
            .collect::<Map<_, _>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(v: Value) -> ResourceList {
        from_json(&v)
    }

    #[test]
    fn arithmetic_as_upstream() {
        let a = list(json!({"pods": "2", "requests.memory": "1Gi"}));
        let b = list(json!({"pods": "1", "cpu": "500m"}));
        assert_eq!(
            to_json(&add(&a, &b)),
            json!({"cpu": "500m", "pods": "3", "requests.memory": "1Gi"})
        );
        assert_eq!(
            to_json(&subtract(&b, &a)),
            json!({"cpu": "500m", "pods": "-1", "requests.memory": "-1Gi"})
        );
        assert_eq!(
            to_json(&subtract_non_negative(&b, &a)),
            json!({"cpu": "500m", "pods": "0", "requests.memory": "0"})
        );
        assert_eq!(to_json(&mask(&a, ["pods", "cpu"])), json!({"pods": "2"}));
        assert_eq!(
            exceeded(&a, &list(json!({"pods": "1", "cpu": "0"}))),
            ["pods"]
        );
        assert_eq!(pretty(&a), "pods=2,requests.memory=1Gi");
        assert_eq!(
            to_json(&remove_zeros(list(json!({"a": "0", "b": "1"})))),
            json!({"b": "1"})
        );
    }
}
