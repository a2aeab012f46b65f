//! `vars` (kustomize's deprecated `$(VAR)` substitution: `kubernetes-sigs/kustomize
//! api/types/var.go`, `api/internal/accumulator/resaccumulator.go` `MergeVars`/`ResolveVars`,
//! `refvartransformer.go` and `api/filters/refvar`).
//!
//! Two steps, as upstream. Each kustomization, after its transformers, *marks* the one object
//! each of its vars refers to ([`mark`]) and adds its vars to the build's ([`declare`], which
//! also merges a base's vars into the overlay's); kustomize keeps the mark on the object, so it
//! follows renames, merges and patches — here an internal annotation, [`REF_VAR_NAMES`].
//! Once, at the top, after the name hashes and name references, [`resolve`] reads each var's
//! field from its marked object and substitutes `$(NAME)` in the `varReference` fields of every
//! object (`builtin/varreference.yaml` plus `configurations:`). A reference to an unknown var
//! is left as written; `$$` escapes a `$`; a var never used is only a warning.

use serde::Deserialize;
use serde_json::{Number, Value};

use crate::fieldspec::FieldSpec;
use crate::resource::{ResId, Resource};

/// The internal annotation listing the vars an object is the source of (kustomize keeps them
/// in `Resource.refVarNames`); removed with the other internal annotations before output.
pub const REF_VAR_NAMES: &str = "internal.config.kubernetes.io/refVarNames";

/// The field a var reads when it names none.
const DEFAULT_FIELD_PATH: &str = "metadata.name";

/// One var. Field names are matched as Go's JSON decoder matches them, ignoring case, for the
/// spellings found in the wild (`fieldpath`, `objRef`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Var {
    pub name: String,
    #[serde(default, alias = "objRef", alias = "ObjRef")]
    pub objref: ObjRef,
    #[serde(default, alias = "fieldRef", alias = "FieldRef")]
    pub fieldref: FieldRef,
}

/// The object a var reads (kustomize's `types.Target`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ObjRef {
    #[serde(default, rename = "apiVersion", alias = "apiversion")]
    pub api_version: String,
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
}

/// The field a var reads (kustomize's `types.FieldSelector`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FieldRef {
    #[serde(default, rename = "fieldPath", alias = "fieldpath")]
    pub field_path: String,
}

impl Var {
    /// kustomize's `Var.Defaulting`: the field path defaults to `metadata.name`, and
    /// `apiVersion` sets the group and version.
    fn defaulted(&self) -> Var {
        let mut v = self.clone();
        if v.fieldref.field_path.is_empty() {
            v.fieldref.field_path = DEFAULT_FIELD_PATH.into();
        }
        if !v.objref.api_version.is_empty() {
            match v
                .objref
                .api_version
                .split('/')
                .collect::<Vec<_>>()
                .as_slice()
            {
                [group, version] => {
                    v.objref.group = (*group).to_owned();
                    v.objref.version = (*version).to_owned();
                }
                [version] => v.objref.version = (*version).to_owned(),
                _ => {}
            }
        }
        v
    }

    fn target_id(&self) -> ResId {
        ResId {
            group: self.objref.group.clone(),
            version: self.objref.version.clone(),
            kind: self.objref.kind.clone(),
            name: self.objref.name.clone(),
            namespace: self.objref.namespace.clone(),
        }
    }

    /// The var as messages show it.
    fn describe(&self) -> String {
        format!(
            "{} ({} {}, field {})",
            self.name,
            self.target_id().display(),
            self.objref.api_version,
            self.fieldref.field_path
        )
    }
}

/// kustomize's `ResAccumulator.MergeVars` for one kustomization's `vars`: each var's object
/// among `resources` (by any of its ids; with no namespace in the var, any namespace) is
/// marked as its source; more than one is an error, none is left for [`resolve`] to report.
/// Then the vars join `declared`.
pub fn mark(
    resources: &mut [Resource],
    declared: &mut Vec<Var>,
    incoming: &[Var],
) -> Result<(), String> {
    for v in incoming {
        let v = v.defaulted();
        let target = v.target_id();
        let wildcard_namespace = target.namespace.is_empty() && !target.is_cluster_scoped();
        let matches_id = |id: &ResId| {
            if wildcard_namespace {
                id.group == target.group
                    && id.version == target.version
                    && id.kind == target.kind
                    && id.name == target.name
            } else {
                target.same(id)
            }
        };
        let matched: Vec<usize> = resources
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                std::iter::once(r.id())
                    .chain(r.previous.iter().cloned())
                    .any(|id| matches_id(&id))
            })
            .map(|(i, _)| i)
            .collect();
        match matched.as_slice() {
            [] => {}
            [i] => resources[*i].append_csv_annotation(REF_VAR_NAMES, &v.name),
            many => {
                return Err(format!(
                    "found {} resId matches for var {} (unable to disambiguate)",
                    many.len(),
                    v.describe()
                ));
            }
        }
    }
    declare(declared, incoming)
}

/// Adds vars to the build's (kustomize's `VarSet.MergeSlice`, also how a base's vars join the
/// overlay's): a name already declared is an error.
pub fn declare(declared: &mut Vec<Var>, incoming: &[Var]) -> Result<(), String> {
    for v in incoming {
        if declared.iter().any(|d| d.name == v.name) {
            return Err(format!("var '{}' already encountered", v.name));
        }
        declared.push(v.defaulted());
    }
    Ok(())
}

/// kustomize's `ResolveVars`: every declared var's value read from its marked object, then
/// `$(NAME)` substituted in the fields `specs` name (the `varReference` table) of every object.
/// Returns the names of vars nothing referred to, for a warning (kustomize logs
/// `well-defined vars that were never replaced: …`).
pub fn resolve(
    resources: &mut [Resource],
    declared: &[Var],
    specs: &[FieldSpec],
) -> Result<Vec<String>, String> {
    let mut vars: Vec<&Var> = declared.iter().collect();
    vars.sort_by(|a, b| a.name.cmp(&b.name));
    let mut values = Vec::new();
    for v in vars {
        values.push((v.name.clone(), value_of(resources, v)?, 0usize));
    }
    if values.is_empty() {
        return Ok(Vec::new());
    }
    for r in resources.iter_mut() {
        let id = r.id();
        for spec in specs {
            spec.apply(&mut r.object, None, &mut |node| {
                substitute(node, &mut values)
            })
            .map_err(|e| format!("object {}: {e}", id.display()))?;
        }
    }
    Ok(values
        .into_iter()
        .filter(|(_, _, used)| *used == 0)
        .map(|(name, _, _)| name)
        .collect())
}

/// The var's value (kustomize's `findVarValueFromResources` and kyaml's `GetFieldValue`): the
/// field of the first object marked with its name, `ports[0]` read as `ports.0`.
fn value_of(resources: &[Resource], v: &Var) -> Result<Value, String> {
    let Some(source) = resources
        .iter()
        .find(|r| r.csv_annotation(REF_VAR_NAMES).contains(&v.name))
    else {
        return Err(format!(
            "var '{}' cannot be mapped to a field in the set of known resources",
            v.describe()
        ));
    };
    let parts: Vec<String> = crate::replacement::split_path(&v.fieldref.field_path)
        .into_iter()
        .flat_map(slice_index)
        .collect();
    match crate::replacement::lookup(&source.object, &parts) {
        Ok(Some(value)) => Ok(value.clone()),
        _ => Err(format!(
            "field specified in var '{}' not found in corresponding resource",
            v.describe()
        )),
    }
}

/// kyaml's `convertSliceIndex`: `name[3]` is the field `name`, then index 3.
fn slice_index(part: String) -> Vec<String> {
    let Some(open) = part.rfind('[') else {
        return vec![part];
    };
    let index = &part[open + 1..part.len().saturating_sub(1)];
    if !part.ends_with(']') || index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return vec![part];
    }
    let mut out = Vec::new();
    if open > 0 {
        out.push(part[..open].to_owned());
    }
    out.push(index.to_owned());
    out
}

/// kustomize's `refvar.Filter.set` on one field: a string, every string value of a map, or
/// every item of a list (which must all be strings).
fn substitute(node: &mut Value, values: &mut [(String, Value, usize)]) -> Result<(), String> {
    match node {
        Value::String(s) => {
            *node = expand(s, values);
            Ok(())
        }
        Value::Object(map) => {
            for v in map.values_mut() {
                if let Value::String(s) = v {
                    *v = expand(s, values);
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            for item in items {
                let Value::String(s) = item else {
                    return Err("invalid value type expect a string".into());
                };
                *item = expand(s, values);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// kustomize's `DoReplacements`: `$(NAME)` of a known var with a scalar value is replaced
/// (the whole string being one reference takes the value with its type: `$(PORT)` becomes
/// the number 80), `$$` is a `$`, anything else stays as written.
fn expand(input: &str, values: &mut [(String, Value, usize)]) -> Value {
    let mut mapping = |name: &str| -> Option<Value> {
        let (_, value, used) = values.iter_mut().find(|(n, _, _)| n == name)?;
        if value.is_object() || value.is_array() {
            return None;
        }
        *used += 1;
        Some(value.clone())
    };
    let b = input.as_bytes();
    let mut out = String::new();
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < b.len() {
        if b[cursor] == b'$' && cursor + 1 < b.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            let advance = match rest.as_bytes()[0] {
                b'$' => {
                    out.push('$');
                    1
                }
                b'(' => match rest.find(')') {
                    Some(close) => {
                        let name = &rest[1..close];
                        let mapped = mapping(name);
                        if input.len() == name.len() + 3 {
                            return mapped.unwrap_or_else(|| Value::String(input.to_owned()));
                        }
                        match mapped {
                            Some(v) => out.push_str(&go_format(&v)),
                            None => {
                                out.push_str("$(");
                                out.push_str(name);
                                out.push(')');
                            }
                        }
                        close + 1
                    }
                    None => {
                        out.push_str("$(");
                        1
                    }
                },
                _ => {
                    let c = rest.chars().next().map_or(1, char::len_utf8);
                    out.push('$');
                    out.push_str(&rest[..c]);
                    c
                }
            };
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    out.push_str(&input[checkpoint.min(input.len())..]);
    Value::String(out)
}

/// Go's `%v` of a var's value inside a longer string.
fn go_format(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => format_number(n),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

fn format_number(n: &Number) -> String {
    match (n.as_i64(), n.as_u64(), n.as_f64()) {
        (Some(i), _, _) => i.to_string(),
        (_, Some(u), _) => u.to_string(),
        (_, _, Some(f)) => crate::yaml::go_format_g(f),
        _ => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn specs() -> Vec<FieldSpec> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Table {
            var_reference: Vec<FieldSpec>,
        }
        let table: Table =
            serde_saphyr::from_str(include_str!("builtin/varreference.yaml")).expect("table");
        table.var_reference
    }

    fn vars(yaml: &str) -> Vec<Var> {
        serde_saphyr::from_str(yaml).expect("vars")
    }

    fn parse(yaml: &str) -> Vec<Resource> {
        let objects: Vec<Value> = serde_saphyr::from_multiple(yaml).expect("resources");
        objects.into_iter().map(Resource::new).collect()
    }

    /// A transformer's rename, as kustomize's keep the id before it.
    fn rename(r: &mut Resource, f: impl FnOnce(&mut Value)) {
        r.store_previous_id();
        f(&mut r.object["metadata"]);
    }

    fn printed(resources: Vec<Resource>) -> String {
        let objects: Vec<Value> = resources
            .into_iter()
            .map(|mut r| {
                if let Some(a) = r
                    .object
                    .pointer_mut("/metadata/annotations")
                    .and_then(Value::as_object_mut)
                {
                    a.remove(REF_VAR_NAMES);
                }
                if r.object.pointer("/metadata/annotations") == Some(&json!({}))
                    && let Some(m) = r.object["metadata"].as_object_mut()
                {
                    m.remove("annotations");
                }
                r.object
            })
            .collect();
        crate::yaml::to_string(&objects)
    }

    const BASE: &str = "apiVersion: v1
kind: Service
metadata:
  name: svc
spec:
  ports:
  - port: 80
    targetPort: $(PORT)
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: dep
  annotations:
    a: \"$(SVC)-x\"
spec:
  template:
    metadata:
      annotations:
        t: $(SVC)
    spec:
      containers:
      - name: c
        image: i
        command: [\"run\", \"$(SVC).$(NS):$(PORT)\", \"$$(SVC)\", \"$(NOPE)\", \"$(\", \"a$b\"]
        env:
        - name: A
          value: $(PORT)
        - name: B
          value: \"$(FLT)\"
        - name: C
          value: \"$(BOOL)x\"
";

    const BASE_VARS: &str = "- name: SVC
  objref: {kind: Service, name: svc, apiVersion: v1}
- name: PORT
  objref: {kind: Service, name: svc, apiVersion: v1}
  fieldref: {fieldpath: 'spec.ports[0].port'}
- name: UNUSED
  objref: {kind: Service, name: svc, apiVersion: v1}
";

    const OVERLAY_VARS: &str = "- name: NS
  objref: {kind: Deployment, name: dep, apiVersion: apps/v1}
  fieldref: {fieldpath: metadata.namespace}
- name: FLT
  objref: {kind: ConfigMap, name: cm, apiVersion: v1}
  fieldref: {fieldpath: data.f}
- name: BOOL
  objref: {kind: ConfigMap, name: cm, apiVersion: v1}
  fieldref: {fieldpath: data.b}
";

    /// A base with `namePrefix: p-` and vars, an overlay with `namespace: ns1`, another
    /// resource and vars: `kubectl kustomize` prints the expected text (it warns about
    /// `UNUSED`).
    #[test]
    fn vars_resolve_across_levels_as_kubectl_kustomize() {
        // The base: its transformers, then its vars.
        let mut base = parse(BASE);
        for r in &mut base {
            rename(r, |m| {
                let name = format!("p-{}", m["name"].as_str().unwrap_or(""));
                m["name"] = json!(name);
            });
        }
        let mut base_declared = Vec::new();
        mark(&mut base, &mut base_declared, &vars(BASE_VARS)).expect("base vars");
        // The overlay: the base's resources and vars, its own, its transformers, its vars.
        let mut resources = parse(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  f: \"1.5\"\n  b: \"true\"\n",
        );
        resources.extend(base);
        let mut declared = Vec::new();
        declare(&mut declared, &base_declared).expect("merged");
        for r in &mut resources {
            rename(r, |m| m["namespace"] = json!("ns1"));
        }
        mark(&mut resources, &mut declared, &vars(OVERLAY_VARS)).expect("overlay vars");
        let unused = resolve(&mut resources, &declared, &specs()).expect("resolved");
        assert_eq!(unused, ["UNUSED"]);
        assert_eq!(
            printed(resources),
            "apiVersion: v1
data:
  b: \"true\"
  f: \"1.5\"
kind: ConfigMap
metadata:
  name: cm
  namespace: ns1
---
apiVersion: v1
kind: Service
metadata:
  name: p-svc
  namespace: ns1
spec:
  ports:
  - port: 80
    targetPort: 80
---
apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    a: p-svc-x
  name: p-dep
  namespace: ns1
spec:
  template:
    metadata:
      annotations:
        t: p-svc
    spec:
      containers:
      - command:
        - run
        - p-svc.ns1:80
        - $(SVC)
        - $(NOPE)
        - $(
        - a$b
        env:
        - name: A
          value: 80
        - name: B
          value: \"1.5\"
        - name: C
          value: truex
        image: i
        name: c
"
        );
    }

    #[test]
    fn only_strings_are_substituted_and_lists_must_hold_strings() {
        let mut rs = parse(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {a: $(SVC), n: 1}\n\
             spec:\n  containers:\n  - name: c\n    args: [$(SVC), 1]\n",
        );
        let mut declared = Vec::new();
        let mut svc = parse("apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n");
        mark(
            &mut svc,
            &mut declared,
            &vars("- name: SVC\n  objref: {kind: Service, name: s, apiVersion: v1}\n"),
        )
        .expect("marked");
        rs.extend(svc);
        assert_eq!(
            resolve(&mut rs, &declared, &specs()).expect_err("a number in args"),
            "object Pod.v1.[noGrp]/p.[noNs]: considering field 'spec/containers/args': invalid \
             value type expect a string"
        );
        // Without the number, maps take only their string values.
        rs[0].object["spec"]["containers"][0]["args"] = json!(["$(SVC)"]);
        resolve(&mut rs, &declared, &specs()).expect("resolved");
        assert_eq!(
            rs[0].object["metadata"]["labels"],
            json!({"a": "s", "n": 1})
        );
        assert_eq!(rs[0].object["spec"]["containers"][0]["args"], json!(["s"]));
    }

    #[test]
    fn field_paths_take_go_style_indices() {
        let parts: Vec<String> = crate::replacement::split_path(
            "spec.template.spec.containers[0].ports[1].containerPort",
        )
        .into_iter()
        .flat_map(slice_index)
        .collect();
        assert_eq!(
            parts,
            [
                "spec",
                "template",
                "spec",
                "containers",
                "0",
                "ports",
                "1",
                "containerPort"
            ]
        );
        assert_eq!(slice_index("[2]".into()), ["2"]);
        assert_eq!(slice_index("a[x]".into()), ["a[x]"]);
    }

    #[test]
    fn var_errors() {
        let mut rs = parse(BASE);
        let mut declared = Vec::new();
        mark(&mut rs, &mut declared, &vars(BASE_VARS)).expect("marked");
        assert_eq!(
            declare(
                &mut declared,
                &vars("- name: SVC\n  objref: {kind: Service, name: x}\n")
            )
            .expect_err("duplicate"),
            "var 'SVC' already encountered"
        );
        let mut missing = Vec::new();
        mark(
            &mut rs,
            &mut missing,
            &vars("- name: X\n  objref: {kind: Service, name: nope, apiVersion: v1}\n"),
        )
        .expect("nothing to mark is no error yet");
        assert_eq!(
            resolve(&mut rs, &missing, &specs()).expect_err("unmapped"),
            "var 'X (Service.v1.[noGrp]/nope.[noNs] v1, field metadata.name)' cannot be \
             mapped to a field in the set of known resources"
        );
        let mut bad_field = Vec::new();
        mark(
            &mut rs,
            &mut bad_field,
            &vars(
                "- name: Y\n  objref: {kind: Service, name: svc, apiVersion: v1}\n  \
                 fieldref: {fieldPath: spec.nope}\n",
            ),
        )
        .expect("marked");
        assert_eq!(
            resolve(&mut rs, &bad_field, &specs()).expect_err("no field"),
            "field specified in var 'Y (Service.v1.[noGrp]/svc.[noNs] v1, field spec.nope)' \
             not found in corresponding resource"
        );
        let mut twice = parse(BASE);
        twice.extend(parse(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n  namespace: other\n",
        ));
        assert_eq!(
            mark(&mut twice, &mut Vec::new(), &vars(BASE_VARS)).expect_err("ambiguous"),
            "found 2 resId matches for var SVC (Service.v1.[noGrp]/svc.[noNs] v1, field \
             metadata.name) (unable to disambiguate)"
        );
    }

    /// The cases of kustomize's `api/filters/refvar/expand_test.go` `TestMapping`.
    #[test]
    fn expansion_matches_kustomizes_cases() {
        let vars = [
            ("VAR_A", "A"),
            ("VAR_B", "B"),
            ("VAR_C", "C"),
            ("VAR_REF", "$(VAR_A)"),
            ("VAR_EMPTY", ""),
        ];
        for (input, expected) in [
            ("$(VAR_A)", "A"),
            ("$(VAR_A)-$(VAR_A)", "A-A"),
            ("$(VAR_A)-$(VAR_B)-$(VAR_B)-$(VAR_B)-$(VAR_A)", "A-B-B-B-A"),
            ("$(VAR_A)-1", "A-1"),
            ("___$(VAR_B)___", "___B___"),
            ("___$(VAR_C)", "___C"),
            ("$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"),
            ("$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"),
            ("$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"),
            ("f000-$$VAR_A", "f000-$VAR_A"),
            ("foo\\$(VAR_C)bar", "foo\\Cbar"),
            ("foo\\\\$(VAR_C)bar", "foo\\\\Cbar"),
            ("foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar"),
            ("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"),
            ("$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"),
            ("$(VAR_REF)", "$(VAR_A)"),
            ("%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%"),
            ("foo$(VAR_EMPTY)bar", "foobar"),
            ("foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"),
            ("f00__(VAR_A)__", "f00__(VAR_A)__"),
            ("$?_boo_$!", "$?_boo_$!"),
            ("$VAR_A", "$VAR_A"),
            ("$(VAR_DNE)", "$(VAR_DNE)"),
            ("$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"),
            ("$$$$$$(VAR_A)", "$$$(VAR_A)"),
            ("$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"),
            ("$$$$$$$(VAR_A)", "$$$A"),
            ("$VAR_A)", "$VAR_A)"),
            ("${VAR_A}", "${VAR_A}"),
            ("$(VAR_B)_______$(A", "B_______$(A"),
            ("$(VAR_C)_______$(", "C_______$("),
            ("$(VAR_A)foobarzab$", "Afoobarzab$"),
            ("foo-\\$(VAR_A", "foo-\\$(VAR_A"),
            ("--$($($($($--", "--$($($($($--"),
            ("$($($($($--foo$(", "$($($($($--foo$("),
            ("foo0--$($($($(", "foo0--$($($($("),
            ("$(foo$$var)", "$(foo$$var)"),
            ("\n", "\n"),
        ] {
            let mut values: Vec<(String, Value, usize)> = vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), json!(v), 0))
                .collect();
            assert_eq!(expand(input, &mut values), json!(expected), "{input:?}");
        }
    }

    #[test]
    fn expansion_follows_kustomize() {
        let mut values = vec![
            ("A".to_owned(), json!("x"), 0),
            ("N".to_owned(), json!(1234567.5), 0),
            ("M".to_owned(), json!({"k": "v"}), 0),
        ];
        assert_eq!(expand("$(A)", &mut values), json!("x"));
        assert_eq!(expand("$(N)", &mut values), json!(1234567.5));
        assert_eq!(expand("n=$(N)", &mut values), json!("n=1.2345675e+06"));
        assert_eq!(expand("$(M)", &mut values), json!("$(M)"));
        assert_eq!(expand("$$(A)$$$(A)$", &mut values), json!("$(A)$x$"));
        assert_eq!(expand("é$é$(A", &mut values), json!("é$é$(A"));
        assert_eq!(values[2].2, 0);
        assert_eq!(values[0].2, 2);
    }
}
