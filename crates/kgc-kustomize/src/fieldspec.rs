//! Field specs (kustomize's `types.FieldSpec`): which field of which kinds a transformer
//! touches. The built-in tables are kustomize's own (`builtinpluginconsts`), kept as data in
//! `builtin/`.

use serde::Deserialize;
use serde_json::{Map, Value};

/// One field spec: the kinds it applies to (empty matches any) and the path, `/`-separated
/// (`spec/template/metadata/labels`; `[]` steps into every item of a list).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct FieldSpec {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    pub path: String,
    /// Create the field where it is missing.
    #[serde(default)]
    pub create: bool,
}

impl FieldSpec {
    /// Whether the spec applies to `object`'s kind (kustomize's `isMatchGVK`: an empty group,
    /// version or kind matches any).
    pub fn selects(&self, object: &Value) -> bool {
        let s = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
        let (group, version) = split_api_version(s("/apiVersion"));
        (self.kind.is_empty() || self.kind == s("/kind"))
            && (self.group.is_empty() || self.group == group)
            && (self.version.is_empty() || self.version == version)
    }

    /// Calls `set` on every node the path reaches in `object` (kustomize's
    /// `api/filters/fieldspec`): a list met on the way is stepped into item by item, a missing
    /// field ends the walk unless the spec says `create` and `created` is given (the value a
    /// missing last step gets; missing steps before it become maps). The error says why the
    /// walk could not go on (a scalar where the path needs a map).
    pub fn apply(
        &self,
        object: &mut Value,
        created: Option<&Value>,
        set: &mut dyn FnMut(&mut Value) -> Result<(), String>,
    ) -> Result<(), String> {
        if !self.selects(object) {
            return Ok(());
        }
        let steps = split_path(&self.path);
        let created = if self.create { created } else { None };
        walk(object, &steps, created, set)
            .map_err(|e| format!("considering field '{}': {e}", self.path))
    }
}

/// `group/version` split as kustomize's `resid.ParseGroupVersion`: no slash is the core group.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// A path's steps, split on `/` outside brackets (kustomize's `utils.PathSplitter`, so that
/// `metadata/annotations/[a/b]` keeps its key).
fn split_path(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in path.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            '/' if depth == 0 => {
                out.push(&path[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&path[start..]);
    out.retain(|s| !s.is_empty());
    out
}

fn walk(
    node: &mut Value,
    steps: &[&str],
    created: Option<&Value>,
    set: &mut dyn FnMut(&mut Value) -> Result<(), String>,
) -> Result<(), String> {
    let Some((step, rest)) = steps.split_first() else {
        return set(node);
    };
    match node {
        Value::Null => Ok(()),
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|item| walk(item, steps, created, set)),
        Value::Object(map) => {
            let (name, is_seq) = match step.strip_suffix("[]") {
                Some(name) => (name, true),
                None => (*step, false),
            };
            let make = match created {
                Some(_) if is_seq => None,
                Some(last) if rest.is_empty() => Some(last.clone()),
                Some(_) => Some(Value::Object(Map::new())),
                None => None,
            };
            let field = match (map.get_mut(name), make) {
                (Some(field), Some(make)) if field.is_null() => {
                    *field = make;
                    field
                }
                (Some(field), _) => field,
                (None, Some(make)) => map.entry(name).or_insert(make),
                (None, None) => return Ok(()),
            };
            walk(field, rest, created, set)
        }
        _ => Err("expected sequence or mapping node".to_owned()),
    }
}

/// Field specs merged as kustomize's `FsSlice.MergeAll`: a spec is left out when one
/// already present has its path and is selected by its kind (kustomize's
/// `effectivelyEquals`, which is not symmetric: a kind-less spec arriving after a kinded one
/// with its path is dropped, not the other way round); the two differing in `create` is
/// kustomize's error.
pub fn merge(into: &mut Vec<FieldSpec>, more: &[FieldSpec]) -> Result<(), String> {
    for spec in more {
        let same = into.iter().find(|s| {
            s.path == spec.path
                && (spec.group.is_empty() || spec.group == s.group)
                && (spec.version.is_empty() || spec.version == s.version)
                && (spec.kind.is_empty() || spec.kind == s.kind)
        });
        match same {
            Some(s) if s.create != spec.create => {
                return Err(format!("conflicting fieldspecs for path '{}'", spec.path));
            }
            Some(_) => {}
            None => into.push(spec.clone()),
        }
    }
    Ok(())
}

/// kustomize's `Gvk.IsLessThan` order (the legacy kind order, then
/// `group_version_kind`), by which it sorts field-spec tables after each merge.
pub fn gvk_order(
    (g1, v1, k1): (&str, &str, &str),
    (g2, v2, k2): (&str, &str, &str),
) -> std::cmp::Ordering {
    let key = |g: &str, v: &str, k: &str| {
        let or = |s: &str, d: &str| {
            if s.is_empty() {
                d.to_owned()
            } else {
                s.to_owned()
            }
        };
        (
            crate::sortorder::kind_rank(k, None),
            format!("{}_{}_{}", or(g, "~G"), or(v, "~V"), or(k, "~K")),
        )
    };
    key(g1, v1, k1).cmp(&key(g2, v2, k2))
}

/// A table sorted as kustomize's `sort.Sort(FsSlice)`.
pub fn sort(specs: &mut [FieldSpec]) {
    specs.sort_by(|a, b| {
        gvk_order(
            (&a.group, &a.version, &a.kind),
            (&b.group, &b.version, &b.kind),
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(kind: &str, path: &str, create: bool) -> FieldSpec {
        FieldSpec {
            kind: kind.into(),
            path: path.into(),
            create,
            ..FieldSpec::default()
        }
    }

    #[test]
    fn walks_lists_and_creates_missing_maps() {
        let mut obj = json!({"kind": "Deployment", "spec": {"template": {"spec": {
            "containers": [{"image": "a"}, {"image": "b"}]}}}});
        let mut seen = Vec::new();
        spec("", "spec/template/spec/containers/image", false)
            .apply(&mut obj, None, &mut |v| {
                seen.push(v.clone());
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, vec![json!("a"), json!("b")]);

        spec("Deployment", "spec/selector/matchLabels", true)
            .apply(&mut obj, Some(&json!({})), &mut |v| {
                v["app"] = json!("x");
                Ok(())
            })
            .unwrap();
        assert_eq!(
            obj["spec"]["selector"],
            json!({"matchLabels": {"app": "x"}})
        );
    }

    #[test]
    fn kind_mismatch_and_scalar_in_the_way() {
        let mut obj = json!({"kind": "Service", "spec": "x"});
        let mut never = |_: &mut Value| -> Result<(), String> { panic!("not selected") };
        spec("Deployment", "spec/a", true)
            .apply(&mut obj, Some(&json!({})), &mut never)
            .unwrap();
        let err = spec("", "spec/a", false)
            .apply(&mut obj, None, &mut |_| Ok(()))
            .unwrap_err();
        assert!(err.contains("expected sequence or mapping node"), "{err}");
    }
}
