//! kustomize's `types.Selector` (a patch's `target`, a replacement's `select`/`reject`), as
//! `kubernetes-sigs/kustomize api/types/selector.go` and `api/resmap/reswrangler.go` (`Select`)
//! match it: group, version, kind, name and namespace are regular expressions anchored at both
//! ends (Go's RE2 syntax, which the `regex` crate implements), labels and annotations are
//! Kubernetes label selectors.
//!
//! A resource's name and namespace match if either its original id (as read or generated) or its
//! current id matches, so that a patch written against the name in the base still finds the
//! resource after a `namePrefix`; the ids in between (other previous ids) are not considered,
//! as upstream. The namespace is compared in its effective form: `default` for a namespaced
//! object that names none, so `namespace: default` selects those too.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kgc_meta::selector::LabelSelector;
use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use crate::Error;
use crate::resource::Resource;

/// As written; unknown fields are refused, as kustomize reads kustomizations strictly.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Selector {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub label_selector: String,
    #[serde(default)]
    pub annotation_selector: String,
}

impl Selector {
    /// Whether `r` is selected. Compiles the selector each time: callers matching many
    /// resources use [`Selector::compile`] once.
    pub fn matches(&self, r: &Resource) -> Result<bool, Error> {
        Ok(self.compile()?.matches(r))
    }

    /// The selector with its regular expressions and label selectors parsed. A bad one is an
    /// [`Error::Invalid`] naming the selector's field (`name`, `labelSelector`, …) with no file:
    /// the caller knows which file and adds it ([`Error::Invalid`]'s `file` is empty here).
    pub fn compile(&self) -> Result<CompiledSelector, Error> {
        let regex = |field: &str, pattern: &str| -> Result<Option<Regex>, Error> {
            if pattern.is_empty() {
                return Ok(None);
            }
            Regex::new(&format!("^(?:{pattern})$"))
                .map(Some)
                .map_err(|e| invalid(field, e.to_string()))
        };
        let labels = |field: &str, s: &str| -> Result<Option<LabelSelector>, Error> {
            if s.is_empty() {
                return Ok(None);
            }
            LabelSelector::parse(s)
                .map(Some)
                .map_err(|e| invalid(field, e.to_string()))
        };
        Ok(CompiledSelector {
            group: regex("group", &self.group)?,
            version: regex("version", &self.version)?,
            kind: regex("kind", &self.kind)?,
            name: regex("name", &self.name)?,
            namespace: regex("namespace", &self.namespace)?,
            labels: labels("labelSelector", &self.label_selector)?,
            annotations: labels("annotationSelector", &self.annotation_selector)?,
        })
    }
}

fn invalid(field: &str, message: String) -> Error {
    Error::Invalid {
        file: PathBuf::new(),
        field: field.to_owned(),
        message,
    }
}

/// A [`Selector`] ready to match.
#[derive(Debug, Clone)]
pub struct CompiledSelector {
    group: Option<Regex>,
    version: Option<Regex>,
    kind: Option<Regex>,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: Option<LabelSelector>,
    annotations: Option<LabelSelector>,
}

impl CompiledSelector {
    /// Whether `r` is selected (`reswrangler.go` `Select`): name and namespace against the
    /// original or the current id, group/version/kind, labels and annotations against the
    /// current object.
    pub fn matches(&self, r: &Resource) -> bool {
        let is = |re: &Option<Regex>, s: &str| re.as_ref().is_none_or(|re| re.is_match(s));
        let (cur, org) = (r.id(), r.original_id());
        (is(&self.namespace, org.effective_namespace())
            || is(&self.namespace, cur.effective_namespace()))
            && (is(&self.name, &org.name) || is(&self.name, &cur.name))
            && is(&self.group, &cur.group)
            && is(&self.version, &cur.version)
            && is(&self.kind, &cur.kind)
            && self
                .labels
                .as_ref()
                .is_none_or(|s| s.matches(&string_map(&r.object, "labels")))
            && self
                .annotations
                .as_ref()
                .is_none_or(|s| s.matches(&string_map(&r.object, "annotations")))
    }
}

/// `metadata.<field>` as a map of strings (values that are not strings are skipped: the API
/// server would refuse them anyway).
fn string_map(object: &Value, field: &str) -> BTreeMap<String, String> {
    object
        .pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ResId;
    use serde_json::json;

    fn res(kind: &str, name: &str, ns: Option<&str>) -> Resource {
        let mut o = json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name,
            "labels": {"app": "web", "tier": "front"}, "annotations": {"team": "a"}}});
        if let Some(ns) = ns {
            o["metadata"]["namespace"] = json!(ns);
        }
        Resource::new(o)
    }

    fn sel(y: &str) -> Selector {
        serde_saphyr::from_str(y).unwrap()
    }

    #[test]
    fn fields_are_anchored_regexes() {
        let r = res("Deployment", "web-1", None);
        assert!(sel("name: web-.*").matches(&r).unwrap());
        assert!(!sel("name: web").matches(&r).unwrap());
        assert!(!sel("name: eb-1").matches(&r).unwrap());
        assert!(sel("name: web-1|db").matches(&r).unwrap());
        assert!(
            sel("kind: Deploy.*\ngroup: apps\nversion: v1")
                .matches(&r)
                .unwrap()
        );
        assert!(!sel("group: ''\nkind: Service").matches(&r).unwrap());
        assert!(sel("{}").matches(&r).unwrap());
        assert!(serde_saphyr::from_str::<Selector>("foo: 1").is_err());
    }

    #[test]
    fn namespace_is_effective() {
        let r = res("Deployment", "a", None);
        assert!(sel("namespace: default").matches(&r).unwrap());
        assert!(!sel("namespace: prod").matches(&r).unwrap());
        assert!(
            sel("namespace: prod")
                .matches(&res("Deployment", "a", Some("prod")))
                .unwrap()
        );
        // Cluster-scoped kinds have no namespace, not even `default`.
        let mut role = res("ClusterRole", "a", None);
        role.object["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
        assert!(!sel("namespace: default").matches(&role).unwrap());
    }

    #[test]
    fn labels_and_annotations() {
        let r = res("Deployment", "a", None);
        assert!(
            sel("labelSelector: app=web,tier in (front)")
                .matches(&r)
                .unwrap()
        );
        assert!(!sel("labelSelector: app!=web").matches(&r).unwrap());
        assert!(sel("annotationSelector: team=a").matches(&r).unwrap());
        assert!(sel("annotationSelector: team").matches(&r).unwrap());
        assert!(!sel("annotationSelector: owner").matches(&r).unwrap());
    }

    /// A resource renamed by `namePrefix` is found by its original name and its current one,
    /// but not by a name it had in between.
    #[test]
    fn original_and_current_names_match() {
        let mut r = res("Deployment", "p-q-web", Some("prod"));
        r.previous = vec![
            ResId::of(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web"}})),
            ResId::of(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "q-web", "namespace": "prod"}})),
        ];
        assert!(sel("name: web").matches(&r).unwrap());
        assert!(sel("name: p-q-web").matches(&r).unwrap());
        assert!(!sel("name: q-web").matches(&r).unwrap());
        // The original namespace (none, so default) or the current one.
        assert!(sel("namespace: default").matches(&r).unwrap());
        assert!(sel("namespace: prod").matches(&r).unwrap());
    }

    #[test]
    fn bad_selectors_name_their_field() {
        let e = sel("name: '(['").compile().unwrap_err();
        assert!(
            matches!(&e, Error::Invalid { field, .. } if field == "name"),
            "{e}"
        );
        let e = sel("labelSelector: 'a in (('").compile().unwrap_err();
        assert!(
            matches!(&e, Error::Invalid { field, .. } if field == "labelSelector"),
            "{e}"
        );
    }
}
