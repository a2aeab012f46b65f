//! Required node affinity and `nodeSelector` (k8s.io/component-helpers scheduling/corev1/
//! nodeaffinity/nodeaffinity.go `GetRequiredNodeAffinity`, `NodeSelector.Match`): the terms are
//! ORed, a term's requirements ANDed; `matchExpressions` look at labels, `matchFields` at
//! `metadata.name`.

use std::collections::BTreeMap;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

/// One `nodeSelectorTerm`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Term {
    pub expressions: Vec<Requirement>,
    pub fields: Vec<Requirement>,
}

/// What a pod requires of a node's labels and name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequiredAffinity {
    pub node_selector: Vec<(String, String)>,
    /// `None`: no required node affinity.
    pub terms: Option<Vec<Term>>,
}

fn requirements(v: &Value) -> Vec<Requirement> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|r| Requirement {
            key: r["key"].as_str().unwrap_or_default().to_owned(),
            operator: r["operator"].as_str().unwrap_or_default().to_owned(),
            values: r["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        })
        .collect()
}

impl RequiredAffinity {
    /// From a pod's `spec`.
    pub fn of(spec: &Value) -> Self {
        let node_selector = spec["nodeSelector"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect();
        let required =
            &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
        let terms = required
            .is_object()
            .then(|| parse_terms(&required["nodeSelectorTerms"]));
        Self {
            node_selector,
            terms,
        }
    }

    /// `GetRequiredNodeAffinity(pod).Match(node)`.
    pub fn matches(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        let selector_ok = self
            .node_selector
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v));
        selector_ok
            && self
                .terms
                .as_ref()
                .is_none_or(|terms| terms.iter().any(|t| term_matches(t, name, labels)))
    }
}

/// Matches a `NodeSelector` (a list of terms) against a node: a PersistentVolume's node
/// affinity uses the same rules.
pub fn terms_match(terms: &[Term], name: &str, labels: &BTreeMap<String, String>) -> bool {
    terms.iter().any(|t| term_matches(t, name, labels))
}

pub fn parse_terms(v: &Value) -> Vec<Term> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|t| Term {
            expressions: requirements(&t["matchExpressions"]),
            fields: requirements(&t["matchFields"]),
        })
        .collect()
}

/// A term with neither expressions nor fields matches nothing.
fn term_matches(term: &Term, name: &str, labels: &BTreeMap<String, String>) -> bool {
    if term.expressions.is_empty() && term.fields.is_empty() {
        return false;
    }
    term.expressions
        .iter()
        .all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && term.fields.iter().all(|r| {
            // `metadata.name` is the only field a selector may name.
            r.key == "metadata.name" && requirement_matches(r, Some(name))
        })
}

/// `labels.Requirement.Matches` for the node-selector operators.
fn requirement_matches(r: &Requirement, value: Option<&str>) -> bool {
    let int = |s: &str| s.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| r.values.iter().all(|x| x != v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        op @ ("Gt" | "Lt") => {
            let (Some(have), Some(want)) =
                (value.and_then(int), r.values.first().and_then(|s| int(s)))
            else {
                return false;
            };
            if r.values.len() != 1 {
                return false;
            }
            if op == "Gt" { have > want } else { have < want }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labels() -> BTreeMap<String, String> {
        [("zone", "a"), ("cores", "16")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    fn affinity(terms: Value) -> RequiredAffinity {
        RequiredAffinity::of(&json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}))
    }

    #[test]
    fn operators() {
        let one = |key: &str, op: &str, values: Value| {
            affinity(
                json!([{"matchExpressions": [{"key": key, "operator": op, "values": values}]}]),
            )
            .matches("n1", &labels())
        };
        assert!(one("zone", "In", json!(["a", "b"])));
        assert!(!one("zone", "In", json!(["b"])));
        assert!(one("zone", "NotIn", json!(["b"])));
        assert!(one("missing", "NotIn", json!(["b"])));
        assert!(one("zone", "Exists", json!(null)));
        assert!(one("missing", "DoesNotExist", json!(null)));
        assert!(one("cores", "Gt", json!(["8"])));
        assert!(!one("cores", "Lt", json!(["8"])));
        assert!(!one("zone", "Gt", json!(["8"])));
    }

    #[test]
    fn terms_are_ored_fields_name_the_node_and_the_selector_is_anded() {
        let a = affinity(json!([
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]},
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
        ]));
        assert!(a.matches("n1", &labels()));
        let a = affinity(json!([
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]},
        ]));
        assert!(!a.matches("n1", &labels()));
        assert!(a.matches("n2", &labels()));
        assert!(!affinity(json!([{}])).matches("n1", &labels()));
        let s = RequiredAffinity::of(&json!({"nodeSelector": {"zone": "b"}}));
        assert!(!s.matches("n1", &labels()));
    }
}
