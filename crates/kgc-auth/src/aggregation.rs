//! ClusterRole aggregation (`pkg/controller/clusterroleaggregation`): a ClusterRole with an
//! `aggregationRule` gets, as its `rules`, the rules of every other ClusterRole matched by its
//! label selectors — selectors in order, matching roles by name, each distinct rule once.
//!
//! Upstream's controller re-syncs a role whenever any ClusterRole changes, so chains (`admin`
//! takes `edit`, which takes `view`) settle after a few syncs. [`aggregate`] computes that
//! settled state in one call.

use std::collections::BTreeMap;

use kgc_meta::LabelSelector;
use kgc_meta::validation::{is_label_value, is_qualified_name};
use serde_json::Value;

use crate::PolicyRule;
use crate::rule::parse_rules;

struct Role {
    name: String,
    /// `None` when `metadata.labels` is malformed: such a role is never aggregated into
    /// another (a guess at its labels could satisfy a `NotIn` or `DoesNotExist` selector).
    labels: Option<BTreeMap<String, String>>,
    rules: Vec<PolicyRule>,
    /// `None`: not aggregated, or its selectors do not parse (upstream's sync then fails and
    /// leaves the role as it is).
    selectors: Option<Vec<LabelSelector>>,
}

/// Given every ClusterRole (JSON), the new `rules` of each aggregated ClusterRole whose rules
/// change, by name. The caller writes those back (`rules` replaced, nothing else touched).
///
/// Roles without a name are ignored; a role whose aggregation selectors are invalid is left
/// unchanged; rules that do not parse are not aggregated (they would grant nothing anyway).
pub fn aggregate(cluster_roles: &[Value]) -> Vec<(String, Vec<PolicyRule>)> {
    let mut roles: Vec<Role> = cluster_roles.iter().filter_map(parse_role).collect();
    roles.sort_by(|a, b| a.name.cmp(&b.name));
    let original: Vec<Vec<PolicyRule>> = roles.iter().map(|r| r.rules.clone()).collect();
    // Each pass settles at least one more link of the longest aggregation chain; a cycle may
    // flip-flop, so the number of passes is bounded.
    for _ in 0..=roles.len() {
        let mut changed = false;
        for i in 0..roles.len() {
            let Some(selectors) = &roles[i].selectors else {
                continue;
            };
            let mut rules: Vec<PolicyRule> = Vec::new();
            for selector in selectors {
                for (j, other) in roles.iter().enumerate() {
                    let selected = other.labels.as_ref().is_some_and(|l| selector.matches(l));
                    if j == i || !selected {
                        continue;
                    }
                    for r in &other.rules {
                        if !rules.contains(r) {
                            rules.push(r.clone());
                        }
                    }
                }
            }
            if rules != roles[i].rules {
                roles[i].rules = rules;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    roles
        .into_iter()
        .zip(original)
        .filter(|(r, before)| r.selectors.is_some() && r.rules != *before)
        .map(|(r, _)| (r.name, r.rules))
        .collect()
}

fn parse_role(v: &Value) -> Option<Role> {
    let meta = v.get("metadata")?;
    let name = meta.get("name")?.as_str()?.to_owned();
    let labels = match meta.get("labels") {
        None | Some(Value::Null) => Some(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect(),
        Some(_) => None,
    };
    let (rules, _) = parse_rules(v);
    let selectors = match v.get("aggregationRule") {
        None | Some(Value::Null) => None,
        Some(rule) => match rule.get("clusterRoleSelectors") {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(items)) => items.iter().map(selector_from_json).collect(),
            Some(_) => None,
        },
    };
    Some(Role {
        name,
        labels,
        rules,
        selectors,
    })
}

/// `metav1.LabelSelectorAsSelector` of a structured selector (`matchLabels`,
/// `matchExpressions`). Anything malformed is an error, never a looser selector.
pub fn selector_from_json(v: &Value) -> Option<LabelSelector> {
    let o = v.as_object()?;
    let mut clauses: Vec<String> = Vec::new();
    let valid_key = |k: &str| is_qualified_name(k).is_empty();
    let valid_value = |s: &str| is_label_value(s).is_empty();
    match o.get("matchLabels") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let v = v.as_str()?;
                if !valid_key(k) || !valid_value(v) {
                    return None;
                }
                clauses.push(format!("{k}={v}"));
            }
        }
        Some(_) => return None,
    }
    match o.get("matchExpressions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for e in items {
                let key = e.get("key")?.as_str()?;
                if !valid_key(key) {
                    return None;
                }
                let values: Vec<&str> = match e.get("values") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(vs)) => {
                        vs.iter().map(Value::as_str).collect::<Option<_>>()?
                    }
                    Some(_) => return None,
                };
                if !values.iter().all(|v| valid_value(v)) {
                    return None;
                }
                let clause = match (e.get("operator")?.as_str()?, values.is_empty()) {
                    ("In", false) => format!("{key} in ({})", values.join(",")),
                    ("NotIn", false) => format!("{key} notin ({})", values.join(",")),
                    ("Exists", true) => key.to_owned(),
                    ("DoesNotExist", true) => format!("!{key}"),
                    _ => return None,
                };
                clauses.push(clause);
            }
        }
        Some(_) => return None,
    }
    LabelSelector::parse(&clauses.join(",")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(name: &str, labels: Value, rules: Value, agg: Option<Value>) -> Value {
        let mut r = json!({"kind": "ClusterRole", "metadata": {"name": name, "labels": labels}, "rules": rules});
        if let Some(a) = agg {
            r["aggregationRule"] = json!({"clusterRoleSelectors": a});
        }
        r
    }

    fn r(verb: &str, res: &str) -> Value {
        json!({"verbs": [verb], "apiGroups": [""], "resources": [res]})
    }

    fn pr(verb: &str, res: &str) -> PolicyRule {
        PolicyRule::from_json(&r(verb, res)).unwrap()
    }

    // Ported from clusterroleaggregation_controller_test.go `TestSyncClusterRole`.
    #[test]
    fn sync_cluster_role() {
        let hammer = role(
            "hammer",
            json!({"foo": "bar"}),
            json!([r("get", "pods")]),
            None,
        );
        let chisel = role(
            "chisel",
            json!({"foo": "bar"}),
            json!([r("list", "pods")]),
            None,
        );
        let other = role(
            "other",
            json!({"baz": "qux"}),
            json!([r("delete", "pods")]),
            None,
        );
        let sel = json!([{"matchLabels": {"foo": "bar"}}]);

        // "no change": already aggregated.
        let agg = role(
            "target",
            json!({}),
            json!([r("list", "pods"), r("get", "pods")]),
            Some(sel.clone()),
        );
        assert!(aggregate(&[hammer.clone(), chisel.clone(), agg]).is_empty());

        // "update": rules in selector order, matching roles by name, without duplicates.
        let agg = role(
            "target",
            json!({}),
            json!([]),
            Some(json!([{"matchLabels": {"foo": "bar"}}, {"matchLabels": {"baz": "qux"}}])),
        );
        let dup = role(
            "dup",
            json!({"baz": "qux"}),
            json!([r("get", "pods")]),
            None,
        );
        assert_eq!(
            aggregate(&[hammer.clone(), chisel.clone(), other.clone(), dup, agg]),
            [(
                "target".to_owned(),
                vec![pr("list", "pods"), pr("get", "pods"), pr("delete", "pods")]
            )]
        );

        // "no roles match": rules emptied.
        let agg = role(
            "target",
            json!({}),
            json!([r("get", "pods")]),
            Some(json!([{"matchLabels": {"none": "x"}}])),
        );
        assert_eq!(aggregate(&[hammer, agg]), [("target".to_owned(), vec![])]);
    }

    #[test]
    fn chains_settle_in_one_call() {
        let policy = crate::bootstrap_policy();
        let admin = policy
            .iter()
            .find(|o| o["metadata"]["name"] == "admin")
            .unwrap();
        let rules = admin["rules"].as_array().unwrap();
        // admin = aggregate-to-admin + edit (= aggregate-to-edit + view (= aggregate-to-view)).
        for want in [
            json!({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings", "roles"]}),
            json!({"apiGroups": [""], "resources": ["pods/eviction"]}),
            json!({"apiGroups": [""], "resources": ["namespaces"]}),
        ] {
            assert!(
                rules
                    .iter()
                    .any(|r| r["apiGroups"] == want["apiGroups"]
                        && r["resources"] == want["resources"]),
                "admin lacks {want}"
            );
        }
        assert!(
            aggregate(
                &policy
                    .iter()
                    .filter(|o| o["kind"] == "ClusterRole")
                    .cloned()
                    .collect::<Vec<_>>()
            )
            .is_empty()
        );
    }

    #[test]
    fn invalid_selectors_leave_the_role_alone() {
        let hammer = role(
            "hammer",
            json!({"foo": "bar"}),
            json!([r("get", "pods")]),
            None,
        );
        for bad in [
            json!([{"matchExpressions": [{"key": "foo", "operator": "Sideways", "values": ["bar"]}]}]),
            json!([{"matchExpressions": [{"key": "foo", "operator": "In", "values": []}]}]),
            json!([{"matchExpressions": [{"key": "foo", "operator": "Exists", "values": ["x"]}]}]),
            json!([{"matchLabels": {"foo": "a,b"}}]),
            json!([{"matchLabels": {"foo": 1}}]),
            json!(["foo=bar"]),
            json!("foo=bar"),
        ] {
            let agg = role(
                "target",
                json!({}),
                json!([r("create", "secrets")]),
                Some(bad.clone()),
            );
            assert!(aggregate(&[hammer.clone(), agg]).is_empty(), "{bad}");
        }
    }

    #[test]
    fn roles_with_malformed_labels_are_never_aggregated() {
        let odd = role(
            "odd",
            json!({"tier": 5}),
            json!([r("get", "secrets")]),
            None,
        );
        let agg = role(
            "target",
            json!({}),
            json!([]),
            Some(
                json!([{"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["b"]}]}]),
            ),
        );
        assert!(aggregate(&[odd, agg]).is_empty());
    }

    #[test]
    fn expressions_select() {
        let hammer = role(
            "hammer",
            json!({"tier": "a"}),
            json!([r("get", "pods")]),
            None,
        );
        let chisel = role(
            "chisel",
            json!({"tier": "b"}),
            json!([r("list", "pods")]),
            None,
        );
        let agg = role(
            "target",
            json!({}),
            json!([]),
            Some(
                json!([{"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["b"]}]}]),
            ),
        );
        assert_eq!(
            aggregate(&[hammer, chisel, agg]),
            [("target".to_owned(), vec![pr("get", "pods")])]
        );
    }
}
