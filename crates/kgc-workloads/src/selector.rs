//! A `metav1.LabelSelector` as a matcher (upstream `metav1.LabelSelectorAsSelector`), by way of
//! the label-selector syntax kgc-meta parses for `?labelSelector=`, so both agree on every
//! operator.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as Typed;
use kgc_meta::selector::LabelSelector;

use crate::{Error, Result};

/// The selector `s` as a matcher. An empty selector matches everything, a missing one nothing
/// (upstream: `nil` selects nothing, `{}` everything).
pub fn matcher(s: Option<&Typed>) -> Result<Option<LabelSelector>> {
    let Some(s) = s else {
        return Ok(None);
    };
    let mut parts: Vec<String> = s
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in s.match_expressions.iter().flatten() {
        let values = e.values.clone().unwrap_or_default().join(",");
        parts.push(match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            "DoesNotExist" => format!("!{}", e.key),
            op => {
                return Err(Error::Invalid(format!(
                    "{op:?} is not a valid label selector operator"
                )));
            }
        });
    }
    LabelSelector::parse(&parts.join(","))
        .map(Some)
        .map_err(|e| Error::Invalid(format!("invalid label selector: {e}")))
}

/// Whether `labels` match `selector` (`None` matches nothing).
pub fn matches(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    selector.is_some_and(|s| s.matches(labels))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn labels_and_expressions() {
        let s = Typed {
            match_labels: Some(labels(&[("app", "web")]).into_iter().collect()),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "In".into(),
                    values: Some(vec!["a".into(), "b".into()]),
                },
                LabelSelectorRequirement {
                    key: "canary".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                },
            ]),
        };
        let m = matcher(Some(&s)).unwrap();
        assert!(matches(
            m.as_ref(),
            &labels(&[("app", "web"), ("tier", "b")])
        ));
        assert!(!matches(
            m.as_ref(),
            &labels(&[("app", "web"), ("tier", "c")])
        ));
        assert!(!matches(
            m.as_ref(),
            &labels(&[("app", "web"), ("tier", "a"), ("canary", "")])
        ));
    }

    #[test]
    fn empty_selects_everything_and_missing_nothing() {
        let all = matcher(Some(&Typed::default())).unwrap();
        assert!(matches(all.as_ref(), &labels(&[("x", "y")])));
        assert!(!matches(matcher(None).unwrap().as_ref(), &labels(&[])));
    }
}
