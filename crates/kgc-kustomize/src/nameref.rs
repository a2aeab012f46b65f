//! Name references (kustomize's `api/filters/nameref` through its name-reference
//! transformer): after prefixes, suffixes, namespaces and generator hashes renamed resources,
//! every field the `nameReference` table lists (a Deployment's `configMapRef.name`, a
//! RoleBinding's subjects, …) that still names a renamed resource by one of its previous
//! names is rewritten to its current name (and namespace, for `{name, namespace}` maps).

use serde_json::Value;

use crate::builtinconfig::NameBackReference;
use crate::fieldspec::FieldSpec;
use crate::resource::{PREFIXES, ResId, Resource, SUFFIXES};

/// What the choice of a referral needs of a resource, taken before any is rewritten.
struct Snapshot {
    id: ResId,
    /// `id`'s scope and effective namespace, looked up once (they are compared n² times).
    cluster_scoped: bool,
    namespace: String,
    original: ResId,
    previous: Vec<ResId>,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
}

impl Snapshot {
    fn of(r: &Resource) -> Snapshot {
        let id = r.id();
        Snapshot {
            cluster_scoped: id.is_cluster_scoped(),
            namespace: id.effective_namespace().to_owned(),
            id,
            original: r.original_id(),
            previous: r.previous.clone(),
            prefixes: r.csv_annotation(PREFIXES),
            suffixes: r.csv_annotation(SUFFIXES),
        }
    }
}

pub fn apply(resources: &mut [Resource], backrefs: &[NameBackReference]) -> Result<(), String> {
    let all: Vec<Snapshot> = resources.iter().map(Snapshot::of).collect();
    for (i, r) in resources.iter_mut().enumerate() {
        let referrer = &all[i];
        let candidates = could_be_referenced_by(&all, referrer, &r.object);
        let role_ref = role_ref(&r.object);
        for backref in backrefs {
            for spec in &backref.field_specs {
                if !referrer
                    .original
                    .is_selected(&spec.group, &spec.version, &spec.kind)
                {
                    continue;
                }
                let choice = Choice {
                    referrer,
                    target: backref,
                    role_ref: spec
                        .path
                        .ends_with("roleRef/name")
                        .then_some(role_ref.as_ref())
                        .flatten(),
                    candidates: &candidates,
                };
                let walk = FieldSpec {
                    path: spec.path.clone(),
                    ..FieldSpec::default()
                };
                walk.apply(&mut r.object, None, &mut |v| choice.set(v))
                    .map_err(|e| {
                        format!(
                            "updating name reference in '{}' field of '{}': {e}",
                            spec.path,
                            referrer.id.display()
                        )
                    })?;
            }
        }
    }
    Ok(())
}

/// kustomize's `SubsetThatCouldBeReferencedByResource`: a namespaced referrer sees its own
/// namespace, cluster-scoped resources, and (a RoleBinding) its ServiceAccount subjects'
/// namespaces.
fn could_be_referenced_by<'a>(
    all: &'a [Snapshot],
    referrer: &Snapshot,
    object: &Value,
) -> Vec<&'a Snapshot> {
    if referrer.cluster_scoped {
        return all.iter().collect();
    }
    let mut binding_namespaces = Vec::new();
    if referrer.id.kind == "RoleBinding"
        && let Some(Value::Array(subjects)) = object.get("subjects")
    {
        for s in subjects {
            if s.get("kind").and_then(Value::as_str) == Some("ServiceAccount")
                && let Some(ns) = s.get("namespace").and_then(Value::as_str)
            {
                binding_namespaces.push(ns);
            }
        }
    }
    all.iter()
        .filter(|c| {
            c.cluster_scoped
                || c.namespace == referrer.namespace
                || binding_namespaces.contains(&c.id.namespace.as_str())
        })
        .collect()
}

/// A RoleBinding's `roleRef` group and kind.
fn role_ref(object: &Value) -> Option<(String, String)> {
    let r = object.get("roleRef")?;
    Some((
        r.get("apiGroup")?.as_str()?.to_owned(),
        r.get("kind")?.as_str()?.to_owned(),
    ))
}

struct Choice<'a> {
    referrer: &'a Snapshot,
    target: &'a NameBackReference,
    role_ref: Option<&'a (String, String)>,
    candidates: &'a [&'a Snapshot],
}

impl Choice<'_> {
    fn set(&self, v: &mut Value) -> Result<(), String> {
        match v {
            Value::Null => Ok(()),
            Value::String(_) => self.set_scalar(v),
            Value::Object(_) => self.set_mapping(v),
            Value::Array(items) => items.iter_mut().try_for_each(|item| match item {
                Value::Object(_) => self.set_mapping(item),
                _ => self.set_scalar(item),
            }),
            _ => Err("node must be a scalar, sequence or map".to_owned()),
        }
    }

    fn set_scalar(&self, v: &mut Value) -> Result<(), String> {
        let Some(old) = v.as_str() else {
            return Ok(());
        };
        if let Some(referral) = self.select(old, self.candidates.to_vec(), false)? {
            *v = Value::String(referral.id.name.clone());
        }
        Ok(())
    }

    fn set_mapping(&self, v: &mut Value) -> Result<(), String> {
        let Some(map) = v.as_object_mut() else {
            return Err("expect a mapping node".to_owned());
        };
        let Some(old) = map.get("name").and_then(Value::as_str) else {
            return Err("path config error; no 'name' field in node".to_owned());
        };
        let candidates: Vec<&Snapshot> = match map.get("namespace").and_then(Value::as_str) {
            None => self.candidates.to_vec(),
            Some(ns) => {
                let by = |f: fn(&Snapshot) -> &ResId| -> Vec<&Snapshot> {
                    self.candidates
                        .iter()
                        .copied()
                        .filter(|c| !f(c).is_cluster_scoped() && f(c).effective_namespace() == ns)
                        .collect()
                };
                let original = by(|c| &c.original);
                if original.is_empty() {
                    by(|c| &c.id)
                } else {
                    original
                }
            }
        };
        let Some(referral) = self.select(old, candidates, true)? else {
            return Ok(());
        };
        if referral.id.name == old && referral.id.namespace.is_empty() {
            return Ok(());
        }
        map.insert("name".into(), Value::String(referral.id.name.clone()));
        if !referral.id.namespace.is_empty() {
            map.insert(
                "namespace".into(),
                Value::String(referral.id.namespace.clone()),
            );
        }
        Ok(())
    }

    /// kustomize's `selectReferral`: the candidates that once had `old` as name and the
    /// target's kind, narrowed by roleRef kind, namespace, then name prefixes and suffixes.
    fn select<'s>(
        &self,
        old: &str,
        mut c: Vec<&'s Snapshot>,
        with_namespace: bool,
    ) -> Result<Option<&'s Snapshot>, String> {
        let t = self.target;
        c.retain(|r| r.previous.iter().any(|id| id.name == old));
        c.retain(|r| {
            r.previous
                .iter()
                .any(|id| id.is_selected(&t.group, &t.version, &t.kind))
        });
        if let Some((group, kind)) = self.role_ref {
            c.retain(|r| r.previous.iter().any(|id| id.is_selected(group, "", kind)));
        }
        let referrer = self.referrer;
        if !referrer.cluster_scoped {
            c.retain(|r| {
                r.cluster_scoped
                    || r.id.kind == "ServiceAccount"
                    || r.namespace == referrer.namespace
            });
        }
        if c.len() == 1 {
            return Ok(c.pop());
        }
        c.retain(|r| affixes_equal(r, referrer, true));
        if c.len() > 1 {
            c.retain(|r| affixes_equal(r, referrer, false));
        }
        match c.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one)),
            [first, rest @ ..]
                if rest.iter().all(|r| {
                    r.id.name == first.id.name
                        && (!with_namespace || r.id.namespace == first.id.namespace)
                }) =>
            {
                Ok(Some(first))
            }
            _ => {
                let ids: Vec<String> = c.iter().map(|r| r.id.display()).collect();
                Err(format!(
                    "found multiple possible referrals: {}",
                    ids.join(", ")
                ))
            }
        }
    }
}

/// kustomize's `PrefixesSuffixesEquals`.
fn affixes_equal(a: &Snapshot, b: &Snapshot, allow_empty: bool) -> bool {
    let fits = |x: &[String], y: &[String]| {
        (allow_empty && (x.is_empty() || y.is_empty())) || same_ending(x, y)
    };
    fits(&a.prefixes, &b.prefixes) && fits(&a.suffixes, &b.suffixes)
}

/// kustomize's `utils.SameEndingSubSlice`: the shorter list ends the longer one; an empty
/// list only matches another empty one.
fn same_ending(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return long.is_empty();
    }
    long.ends_with(short)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtinconfig::TransformerConfig;
    use crate::nameprefix::{self, Affix};
    use serde_json::json;

    #[test]
    fn renamed_config_map_and_service_account_are_followed() {
        let mut rs: Vec<Resource> = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}}),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"template": {"spec": {"serviceAccountName": "sa",
                    "volumes": [{"name": "v", "configMap": {"name": "cfg"}}],
                    "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "cfg"}}]}]}}}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "rb"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}),
        ]
        .into_iter()
        .map(Resource::new)
        .collect();
        let config = TransformerConfig::builtin();
        nameprefix::apply(&mut rs, Affix::Prefix, "p-", &config.name_prefix).unwrap();
        apply(&mut rs, &config.name_reference).unwrap();
        let spec = &rs[2].object["spec"]["template"]["spec"];
        assert_eq!(spec["serviceAccountName"], "p-sa");
        assert_eq!(spec["volumes"][0]["configMap"]["name"], "p-cfg");
        assert_eq!(
            spec["containers"][0]["envFrom"][0]["configMapRef"]["name"],
            "p-cfg"
        );
        assert_eq!(rs[3].object["subjects"][0]["name"], "p-sa");
        // The Role is not in the build: its reference stays.
        assert_eq!(rs[3].object["roleRef"]["name"], "r");
    }

    #[test]
    fn same_ending_lists() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(same_ending(&s(&["a", "b"]), &s(&["b"])));
        assert!(!same_ending(&s(&["a", "b"]), &s(&["a"])));
        assert!(same_ending(&s(&[]), &s(&[])));
        assert!(!same_ending(&s(&[]), &s(&["a"])));
    }
}
