//! Taints and tolerations (kubernetes/kubernetes pkg/apis/core/v1/helper/helpers.go
//! `TolerationsTolerateTaint`, staging/src/k8s.io/api/core/v1/toleration.go `ToleratesTaint`).

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toleration {
    pub key: String,
    pub operator: String,
    pub value: String,
    pub effect: String,
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

impl Taint {
    pub fn new(key: &str, effect: &str) -> Self {
        Self {
            key: key.to_owned(),
            value: String::new(),
            effect: effect.to_owned(),
        }
    }

    pub fn list(v: &Value) -> Vec<Taint> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|t| Taint {
                key: s(&t["key"]),
                value: s(&t["value"]),
                effect: s(&t["effect"]),
            })
            .collect()
    }

    /// Whether a pod must tolerate the taint to be placed (PreferNoSchedule only weighs).
    pub fn blocks_scheduling(&self) -> bool {
        matches!(self.effect.as_str(), "NoSchedule" | "NoExecute")
    }
}

impl Toleration {
    pub fn list(v: &Value) -> Vec<Toleration> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|t| Toleration {
                key: s(&t["key"]),
                operator: s(&t["operator"]),
                value: s(&t["value"]),
                effect: s(&t["effect"]),
            })
            .collect()
    }

    /// `ToleratesTaint`: an empty effect or key matches any; `Exists` ignores the value;
    /// `Equal` (the default) compares it.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator.as_str() {
            "Exists" => true,
            "" | "Equal" => self.value == taint.value,
            _ => false,
        }
    }
}

/// The first taint of `taints` that blocks scheduling and that no toleration tolerates
/// (`FindMatchingUntoleratedTaint` with the NoSchedule/NoExecute filter).
pub fn untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| t.blocks_scheduling())
        .find(|t| !tolerations.iter().any(|tol| tol.tolerates(t)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tolerations_match_as_upstream() {
        let taint = Taint {
            key: "k".into(),
            value: "v".into(),
            effect: "NoSchedule".into(),
        };
        let tol = |v: Value| Toleration::list(&json!([v])).remove(0);
        assert!(tol(json!({"key": "k", "value": "v"})).tolerates(&taint));
        assert!(tol(json!({"key": "k", "operator": "Exists"})).tolerates(&taint));
        assert!(tol(json!({"operator": "Exists"})).tolerates(&taint));
        assert!(!tol(json!({"key": "k", "value": "w"})).tolerates(&taint));
        assert!(
            !tol(json!({"key": "k", "operator": "Exists", "effect": "NoExecute"}))
                .tolerates(&taint)
        );
        let prefer = Taint::new("p", "PreferNoSchedule");
        assert_eq!(
            untolerated(&[prefer.clone(), taint.clone()], &[]),
            Some(&taint)
        );
        assert_eq!(untolerated(&[prefer], &[]), None);
    }
}
