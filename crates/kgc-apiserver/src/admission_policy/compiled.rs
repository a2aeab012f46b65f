//! ValidatingAdmissionPolicies and their bindings as the dispatcher uses them: read from the
//! store, with every expression compiled once per resourceVersion of its policy
//! (kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating`
//! `plugin.go` compiles a policy when its informer sees a new version of it).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kgc_meta::Catalog;
use serde_json::Value;

use crate::matchconditions::{Expression, Matcher};
use crate::webhook::{Rule, Selector, Target, matching_version, selectors_match};

/// One `resourceRules[]` entry (`NamedRuleWithOperations`).
struct NamedRule {
    rule: Rule,
    /// `resourceNames`: empty names every object.
    names: Vec<String>,
}

/// `matchConstraints` of a policy or `matchResources` of a binding (policy/matching).
pub(crate) struct Constraints {
    rules: Vec<NamedRule>,
    exclude: Vec<NamedRule>,
    namespace_selector: Selector,
    object_selector: Selector,
    equivalent: bool,
}

fn named_rules(v: &Value) -> Vec<NamedRule> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|r| NamedRule {
            rule: Rule::from_json(r),
            names: r["resourceNames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        })
        .collect()
}

/// The rules of `rules` that name the object `name` (or any object).
fn for_name(rules: &[NamedRule], name: &str) -> Vec<Rule> {
    rules
        .iter()
        .filter(|r| r.names.is_empty() || r.names.iter().any(|n| n == name))
        .map(|r| r.rule.clone())
        .collect()
}

impl Constraints {
    fn from_json(v: &Value) -> Self {
        Self {
            rules: named_rules(&v["resourceRules"]),
            exclude: named_rules(&v["excludeResourceRules"]),
            namespace_selector: Selector::from_json(&v["namespaceSelector"]),
            object_selector: Selector::from_json(&v["objectSelector"]),
            equivalent: v["matchPolicy"].as_str() != Some("Exact"),
        }
    }

    /// Whether the rules name the request, before its objects are looked at: the version they
    /// match it in. No `resourceRules` (a binding's `matchResources`) match every request.
    pub fn rules_match(
        &self,
        catalog: &Catalog,
        target: &Target<'_>,
        name: &str,
    ) -> Option<String> {
        if matching_version(&for_name(&self.exclude, name), false, catalog, target).is_some() {
            return None;
        }
        if self.rules.is_empty() {
            return Some(target.version.to_owned());
        }
        matching_version(
            &for_name(&self.rules, name),
            self.equivalent,
            catalog,
            target,
        )
    }

    /// The whole match: rules, then selectors.
    pub fn matches(
        &self,
        catalog: &Catalog,
        target: &Target<'_>,
        name: &str,
        ns_labels: Option<&BTreeMap<String, String>>,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Option<String> {
        let version = self.rules_match(catalog, target, name)?;
        selectors_match(
            &self.namespace_selector,
            &self.object_selector,
            ns_labels,
            obj,
            old,
        )
        .then_some(version)
    }
}

/// One `validations[]` entry.
pub(crate) struct Validation {
    pub expression: Expression,
    pub source: String,
    pub message: String,
    pub message_expression: Option<Expression>,
    /// `reason`: `Invalid` when absent.
    pub reason: String,
}

/// A compiled ValidatingAdmissionPolicy.
pub(crate) struct Policy {
    pub name: String,
    resource_version: String,
    /// `paramKind` as `(apiVersion, kind)`.
    pub param_kind: Option<(String, String)>,
    pub constraints: Constraints,
    pub conditions: Matcher,
    pub variables: Vec<(String, Expression)>,
    pub validations: Vec<Validation>,
    /// `auditAnnotations`: each `key` and its `valueExpression`.
    pub audit_annotations: Vec<(String, Expression)>,
    /// `failurePolicy: Fail` (the default) rather than `Ignore`.
    pub fail: bool,
}

impl Policy {
    /// Compiles a policy.
    fn compile(p: &Value) -> Self {
        let spec = &p["spec"];
        let vars = &kgc_cel::POLICY_VARIABLES;
        let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
        Self {
            name: text(&p["metadata"], "name"),
            resource_version: text(&p["metadata"], "resourceVersion"),
            param_kind: spec["paramKind"].as_object().map(|k| {
                let s = |key: &str| k.get(key).and_then(Value::as_str).unwrap_or_default();
                (s("apiVersion").to_owned(), s("kind").to_owned())
            }),
            constraints: Constraints::from_json(&spec["matchConstraints"]),
            conditions: Matcher::from_json(&spec["matchConditions"], vars),
            variables: spec["variables"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| {
                    (
                        text(v, "name"),
                        Expression::compile(v["expression"].as_str().unwrap_or_default(), vars),
                    )
                })
                .collect(),
            validations: spec["validations"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| Validation {
                    expression: Expression::compile(
                        v["expression"].as_str().unwrap_or_default(),
                        vars,
                    ),
                    source: text(v, "expression"),
                    message: text(v, "message"),
                    message_expression: v["messageExpression"]
                        .as_str()
                        .filter(|m| !m.trim().is_empty())
                        .map(|m| Expression::compile(m, vars)),
                    reason: v["reason"].as_str().unwrap_or("Invalid").to_owned(),
                })
                .collect(),
            audit_annotations: spec["auditAnnotations"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| {
                    (
                        text(a, "key"),
                        Expression::compile(
                            a["valueExpression"].as_str().unwrap_or_default(),
                            vars,
                        ),
                    )
                })
                .collect(),
            fail: spec["failurePolicy"].as_str() != Some("Ignore"),
        }
    }
}

/// `paramRef` of a binding.
pub(crate) struct ParamRef {
    pub name: String,
    pub namespace: String,
    pub selector: Option<Selector>,
    /// `parameterNotFoundAction: Deny` rather than `Allow`.
    pub deny_when_missing: bool,
}

/// A ValidatingAdmissionPolicyBinding.
pub(crate) struct Binding {
    pub name: String,
    pub policy: String,
    pub param_ref: Option<ParamRef>,
    pub constraints: Option<Constraints>,
    pub deny: bool,
    pub warn: bool,
    pub audit: bool,
    /// `validationActions` as written, for the audit annotation of a failure.
    pub actions: Vec<String>,
}

impl Binding {
    fn from_json(b: &Value) -> Self {
        let spec = &b["spec"];
        let actions: Vec<&str> = spec["validationActions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
        Self {
            name: text(&b["metadata"], "name"),
            policy: text(spec, "policyName"),
            param_ref: spec["paramRef"].as_object().map(|_| {
                let r = &spec["paramRef"];
                ParamRef {
                    name: text(r, "name"),
                    namespace: text(r, "namespace"),
                    selector: r
                        .get("selector")
                        .filter(|s| !s.is_null())
                        .map(Selector::from_json),
                    deny_when_missing: r["parameterNotFoundAction"].as_str() == Some("Deny"),
                }
            }),
            constraints: spec
                .get("matchResources")
                .filter(|m| m.is_object())
                .map(Constraints::from_json),
            deny: actions.contains(&"Deny"),
            warn: actions.contains(&"Warn"),
            audit: actions.contains(&"Audit"),
            actions: actions.iter().map(|a| (*a).to_owned()).collect(),
        }
    }
}

/// Every policy, by name, compiled.
#[derive(Default)]
pub(crate) struct CompiledPolicies(pub HashMap<String, Arc<Policy>>);

impl CompiledPolicies {
    /// The policies among `objects`, reusing those of `previous` whose resourceVersion is the
    /// same, so that a change to one policy recompiles that one alone.
    pub fn build(objects: Vec<Value>, previous: Option<&Self>) -> Self {
        Self(
            objects
                .iter()
                .map(|p| {
                    let name = p["metadata"]["name"].as_str().unwrap_or_default();
                    let rv = p["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or_default();
                    let policy = previous
                        .and_then(|prev| prev.0.get(name))
                        .filter(|old| old.resource_version == rv)
                        .map_or_else(|| Arc::new(Policy::compile(p)), Arc::clone);
                    (name.to_owned(), policy)
                })
                .collect(),
        )
    }
}

/// Every binding, sorted by the name of its policy then its own, as upstream evaluates them.
pub(crate) fn bindings(objects: Vec<Value>) -> Vec<Binding> {
    let mut all: Vec<Binding> = objects.iter().map(Binding::from_json).collect();
    all.sort_by(|a, b| (&a.policy, &a.name).cmp(&(&b.policy, &b.name)));
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(rv: &str, expr: &str) -> Value {
        json!({"metadata": {"name": "p", "resourceVersion": rv},
            "spec": {"validations": [{"expression": expr}]}})
    }

    #[test]
    fn recompiled_only_when_the_policy_changed() {
        let first = CompiledPolicies::build(vec![policy("1", "true")], None);
        let same = CompiledPolicies::build(vec![policy("1", "true")], Some(&first));
        assert!(Arc::ptr_eq(&first.0["p"], &same.0["p"]));
        let changed = CompiledPolicies::build(vec![policy("2", "false")], Some(&same));
        assert!(!Arc::ptr_eq(&same.0["p"], &changed.0["p"]));
    }

    #[test]
    fn resource_names_and_exclusions() {
        let c = Constraints::from_json(&json!({
            "resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"],
                "apiVersions": ["v1"], "resources": ["deployments"], "resourceNames": ["web"]}],
            "excludeResourceRules": [{"operations": ["*"], "apiGroups": ["*"],
                "apiVersions": ["*"], "resources": ["*"], "resourceNames": ["skip"]}]}));
        let catalog = Catalog::builtin();
        let t = Target {
            operation: "CREATE",
            group: "apps",
            version: "v1",
            resource: "deployments",
            subresource: "",
            namespace: "ns",
        };
        assert_eq!(c.rules_match(&catalog, &t, "web").as_deref(), Some("v1"));
        assert_eq!(c.rules_match(&catalog, &t, "db"), None);
        let all = Constraints::from_json(&json!({"excludeResourceRules": [{"operations": ["*"],
            "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "resourceNames": ["skip"]}]}));
        assert!(all.rules_match(&catalog, &t, "db").is_some());
        assert!(all.rules_match(&catalog, &t, "skip").is_none());
    }
}
