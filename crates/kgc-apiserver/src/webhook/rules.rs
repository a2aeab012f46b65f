//! Which requests a webhook is called for: its `rules`, `namespaceSelector`, `objectSelector`
//! and `matchPolicy` (kubernetes/apiserver `pkg/admission/plugin/webhook/predicates/rules`,
//! `predicates/namespace`, `predicates/object`, and `generic/webhook.go`
//! `ShouldCallHook`).

use std::collections::BTreeMap;

use kgc_meta::{Catalog, LabelSelector};
use serde_json::Value;

/// One `rules[]` entry (`RuleWithOperations`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Rule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    /// `*` (the default), `Cluster` or `Namespaced`.
    pub scope: String,
}

/// What a request is, for matching.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub operation: &'a str,
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    /// `""` for the object itself.
    pub subresource: &'a str,
    /// `""` for a cluster-scoped object.
    pub namespace: &'a str,
}

fn any_or(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == "*" || x == want)
}

impl Rule {
    pub fn from_json(v: &Value) -> Self {
        let strings = |key: &str| -> Vec<String> {
            v[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        };
        Self {
            operations: strings("operations"),
            api_groups: strings("apiGroups"),
            api_versions: strings("apiVersions"),
            resources: strings("resources"),
            scope: v["scope"].as_str().unwrap_or("*").to_owned(),
        }
    }

    /// `rules.Matcher.Matches`: operation, group, version, resource/subresource and scope.
    pub fn matches(&self, t: &Target<'_>) -> bool {
        any_or(&self.operations, t.operation)
            && any_or(&self.api_groups, t.group)
            && any_or(&self.api_versions, t.version)
            && self.matches_resource(t.resource, t.subresource)
            && match self.scope.as_str() {
                "Cluster" => t.namespace.is_empty(),
                "Namespaced" => !t.namespace.is_empty(),
                _ => true,
            }
    }

    /// `pods` names the object alone, `pods/status` one subresource, `pods/*` the object's
    /// subresources, `*` every object and `*/*` everything.
    fn matches_resource(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r.as_str(), ""));
            (res == "*" || res == resource) && (sub == "*" || sub == subresource)
        })
    }
}

/// The version a webhook is called with: the request's when a rule names it, else (with
/// `matchPolicy: Equivalent`) another served version of the same resource a rule names
/// (`generic/webhook.go` `ShouldCallHook` through the equivalent resource mapper).
pub(crate) fn matching_version(
    rules: &[Rule],
    equivalent: bool,
    catalog: &Catalog,
    t: &Target<'_>,
) -> Option<String> {
    if rules.iter().any(|r| r.matches(t)) {
        return Some(t.version.to_owned());
    }
    if !equivalent {
        return None;
    }
    rules
        .iter()
        .flat_map(|r| r.api_versions.iter().map(move |v| (r, v)))
        .find(|(r, v)| {
            v.as_str() != "*"
                && v.as_str() != t.version
                && catalog.get(t.group, v, t.resource).is_some()
                && r.matches(&Target { version: v, ..*t })
        })
        .map(|(_, v)| v.clone())
}

/// A `metav1.LabelSelector` of a webhook: absent (or empty) selects everything; one that does
/// not parse selects nothing and says why when called.
#[derive(Debug, Clone)]
pub(crate) enum Selector {
    Everything,
    Some(LabelSelector),
    Invalid,
}

impl Selector {
    pub fn from_json(v: &Value) -> Self {
        match v {
            Value::Null => Self::Everything,
            Value::Object(m) if m.values().all(|x| x.is_null()) => Self::Everything,
            _ => match kgc_auth::selector_from_json(v) {
                Some(s) if s.is_empty() => Self::Everything,
                Some(s) => Self::Some(s),
                None => Self::Invalid,
            },
        }
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::Everything => true,
            Self::Some(s) => s.matches(labels),
            Self::Invalid => false,
        }
    }
}

/// `namespaceSelector` against the namespace's labels (`None`: a cluster-scoped object, which
/// every namespaceSelector matches) and `objectSelector` against the new or the old object
/// (`predicates/namespace` and `predicates/object`).
pub(crate) fn selectors_match(
    namespace_selector: &Selector,
    object_selector: &Selector,
    ns_labels: Option<&BTreeMap<String, String>>,
    obj: Option<&Value>,
    old: Option<&Value>,
) -> bool {
    if let Some(labels) = ns_labels
        && !namespace_selector.matches(labels)
    {
        return false;
    }
    match (obj, old) {
        (None, None) => object_selector.matches(&BTreeMap::new()),
        _ => [obj, old]
            .into_iter()
            .flatten()
            .any(|o| object_selector.matches(&labels_of(o))),
    }
}

/// An object's `metadata.labels`.
pub(crate) fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    obj["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target<'a>(resource: &'a str, sub: &'a str, ns: &'a str) -> Target<'a> {
        Target {
            operation: "CREATE",
            group: "",
            version: "v1",
            resource,
            subresource: sub,
            namespace: ns,
        }
    }

    #[test]
    fn resources_and_subresources() {
        let rule = |res: &str| {
            Rule::from_json(&json!({"operations": ["CREATE"], "apiGroups": [""],
                "apiVersions": ["v1"], "resources": [res]}))
        };
        assert!(rule("pods").matches(&target("pods", "", "ns")));
        assert!(!rule("pods").matches(&target("pods", "status", "ns")));
        assert!(rule("pods/*").matches(&target("pods", "status", "ns")));
        assert!(rule("pods/status").matches(&target("pods", "status", "ns")));
        assert!(rule("*").matches(&target("configmaps", "", "ns")));
        assert!(!rule("*").matches(&target("configmaps", "status", "ns")));
        assert!(rule("*/*").matches(&target("pods", "binding", "ns")));
        assert!(!rule("pods").matches(&Target {
            operation: "DELETE",
            ..target("pods", "", "ns")
        }));
    }

    #[test]
    fn scope() {
        let rule = |scope: &str| {
            Rule::from_json(&json!({"operations": ["*"], "apiGroups": ["*"],
                "apiVersions": ["*"], "resources": ["*"], "scope": scope}))
        };
        assert!(rule("Cluster").matches(&target("namespaces", "", "")));
        assert!(!rule("Cluster").matches(&target("pods", "", "ns")));
        assert!(rule("Namespaced").matches(&target("pods", "", "ns")));
        assert!(rule("*").matches(&target("nodes", "", "")));
    }

    #[test]
    fn selectors() {
        let labels = labels_of(&json!({"metadata": {"labels": {"app": "web"}}}));
        assert!(Selector::from_json(&Value::Null).matches(&labels));
        assert!(Selector::from_json(&json!({})).matches(&labels));
        assert!(Selector::from_json(&json!({"matchLabels": {"app": "web"}})).matches(&labels));
        assert!(!Selector::from_json(&json!({"matchLabels": {"app": "db"}})).matches(&labels));
        assert!(
            Selector::from_json(
                &json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]})
            )
            .matches(&labels)
        );
        assert!(
            !Selector::from_json(&json!({"matchExpressions": [{"key": "app", "operator": "Bad"}]}))
                .matches(&labels)
        );
    }
}
