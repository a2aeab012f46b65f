//! A quota's scopes: `spec.scopes` (each an `Exists` requirement) and
//! `spec.scopeSelector.matchExpressions`, as kubernetes/kubernetes `pkg/apis/core/v1/helper/
//! helpers.go` `GetScopeSelectorsFromQuota` joins them.

use serde_json::Value;

/// The scopes upstream knows (`core.ResourceQuotaScope*`).
pub const TERMINATING: &str = "Terminating";
pub const NOT_TERMINATING: &str = "NotTerminating";
pub const BEST_EFFORT: &str = "BestEffort";
pub const NOT_BEST_EFFORT: &str = "NotBestEffort";
pub const PRIORITY_CLASS: &str = "PriorityClass";
pub const CROSS_NAMESPACE_POD_AFFINITY: &str = "CrossNamespacePodAffinity";

/// One `ScopedResourceSelectorRequirement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    pub scope: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

/// `ScopeSelectorOperator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl Operator {
    pub fn parse(s: &str) -> Option<Operator> {
        Some(match s {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            _ => return None,
        })
    }
}

impl Selector {
    /// Whether a label set holding `key: value` (always present, as upstream's
    /// `podMatchesSelector` builds it) matches: so `DoesNotExist` never does, and `NotIn`
    /// matches an empty value.
    pub fn matches_value(&self, value: &str) -> bool {
        match self.operator {
            Operator::In => self.values.iter().any(|v| v == value),
            Operator::NotIn => !self.values.iter().any(|v| v == value),
            Operator::Exists => true,
            Operator::DoesNotExist => false,
        }
    }
}

/// `GetScopeSelectorsFromQuota`: the quota's scopes, then its selector's expressions. An
/// expression with an unknown operator (validation refuses those) matches nothing.
pub fn selectors(quota: &Value) -> Vec<Selector> {
    let spec = &quota["spec"];
    let scopes = spec["scopes"].as_array().into_iter().flatten();
    let exprs = spec["scopeSelector"]["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten();
    scopes
        .filter_map(Value::as_str)
        .map(|s| Selector {
            scope: s.to_owned(),
            operator: Operator::Exists,
            values: Vec::new(),
        })
        .chain(exprs.map(|e| {
            Selector {
                scope: e["scopeName"].as_str().unwrap_or_default().to_owned(),
                operator: e["operator"]
                    .as_str()
                    .and_then(Operator::parse)
                    .unwrap_or(Operator::DoesNotExist),
                values: e["values"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
            }
        }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_then_expressions() {
        let q = json!({"spec": {"scopes": ["BestEffort"], "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}});
        let s = selectors(&q);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].scope, BEST_EFFORT);
        assert_eq!(s[0].operator, Operator::Exists);
        assert!(s[1].matches_value("high"));
        assert!(!s[1].matches_value(""));
        let not_in = Selector {
            scope: PRIORITY_CLASS.into(),
            operator: Operator::NotIn,
            values: vec!["high".into()],
        };
        assert!(not_in.matches_value(""));
    }
}
