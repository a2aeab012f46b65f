//! `replacements` (kustomize v5.5's `kubernetes-sigs/kustomize api/filters/replacement/
//! replacement.go`, `api/types/replacement.go`, and the path walkers it uses, kyaml's
//! `PathGetter` for the source and `PathMatcher` for the targets): copy one field of one
//! object into fields of others.
//!
//! In v5.5 the source and target selectors compare group, version, kind, name and namespace
//! exactly (regular expressions came later), against the current id and every previous one;
//! only the label and annotation selectors go through [`Selector`]. In a target path,
//! `[key=value]` is an *unanchored* regular expression (so `[name=nginx]` also picks
//! `nginx-sidecar`), `*` is every element of a list and a number is an index; the source path
//! takes `[key=value]` literally and the first match.
//!
//! Unknown fields are refused, in `path:` files too (kustomize ignores them there, so a typo
//! such as `fieldPath` for `fieldPaths` would silently retarget `metadata.name`).

use std::path::{Path, PathBuf};

use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::Error;
use crate::fs::Loader;
use crate::resource::{ResId, Resource};
use crate::selector::Selector;

/// One replacement: a source and the targets its value is written to.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Replacement {
    #[serde(default)]
    pub source: Option<SourceSelector>,
    #[serde(default)]
    pub targets: Option<Vec<TargetSelector>>,
    /// Where it was written, for errors.
    #[serde(skip)]
    origin: Origin,
}

#[derive(Debug, Clone, PartialEq, Default)]
struct Origin {
    file: PathBuf,
    field: String,
}

/// The object the value comes from (an id, every part optional) and the field.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceSelector {
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
    /// `metadata.name` when empty.
    #[serde(default, alias = "fieldpath")]
    pub field_path: String,
    #[serde(default)]
    pub options: Option<FieldOptions>,
}

/// The objects written to, and where.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TargetSelector {
    #[serde(default)]
    pub select: Option<Selector>,
    #[serde(default)]
    pub reject: Vec<Selector>,
    /// `[metadata.name]` when empty.
    #[serde(default, alias = "fieldpaths")]
    pub field_paths: Vec<String>,
    #[serde(default)]
    pub options: Option<FieldOptions>,
}

/// kustomize's `FieldOptions` (`encoding` is accepted and, as upstream, ignored).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FieldOptions {
    #[serde(default)]
    pub delimiter: String,
    #[serde(default)]
    pub index: i64,
    #[serde(default)]
    pub encoding: String,
    #[serde(default)]
    pub create: bool,
}

const DEFAULT_FIELD_PATH: &str = "metadata.name";

/// The kustomization's `replacements` entries (`file` is the kustomization), each inline or a
/// `path:` to a file holding one replacement or a list of them (kustomize's
/// `ReplacementTransformer.Config`).
pub fn load(
    loader: &Loader<'_>,
    file: &Path,
    entries: &[Value],
) -> Result<Vec<Replacement>, Error> {
    let mut out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let field = format!("replacements[{i}]");
        let invalid = |message: String| Error::Invalid {
            file: file.to_owned(),
            field: field.clone(),
            message,
        };
        let path = entry.get("path").and_then(Value::as_str).unwrap_or("");
        if path.is_empty() {
            let mut inline = entry.clone();
            if let Some(m) = inline.as_object_mut() {
                m.remove("path");
            }
            out.push(parse(&inline, file, field.clone())?);
            continue;
        }
        let inline = entry.get("source").is_some_and(|s| !s.is_null())
            || entry
                .get("targets")
                .and_then(Value::as_array)
                .is_some_and(|t| !t.is_empty());
        if inline {
            return Err(invalid(
                "cannot specify both path and inline replacement".into(),
            ));
        }
        let text = loader.read_to_string(path)?;
        let included = loader.resolve(path)?;
        let value: Value = serde_saphyr::from_str(&text).map_err(|e| Error::Invalid {
            file: included.clone(),
            field: String::new(),
            message: e.to_string(),
        })?;
        match value {
            Value::Array(items) => {
                for (j, item) in items.iter().enumerate() {
                    out.push(parse(item, &included, format!("[{j}]"))?);
                }
            }
            Value::Object(_) => out.push(parse(&value, &included, String::new())?),
            _ => {
                return Err(invalid(format!(
                    "unsupported replacement type encountered within replacement path {path}"
                )));
            }
        }
    }
    Ok(out)
}

fn parse(value: &Value, file: &Path, field: String) -> Result<Replacement, Error> {
    let mut r: Replacement = serde_json::from_value(value.clone()).map_err(|e| Error::Invalid {
        file: file.to_owned(),
        field: field.clone(),
        message: e.to_string(),
    })?;
    r.origin = Origin {
        file: file.to_owned(),
        field,
    };
    Ok(r)
}

/// Applies the replacements in order, each seeing the objects as the previous ones left them.
pub fn apply(resources: &mut [Resource], replacements: &[Replacement]) -> Result<(), Error> {
    for r in replacements {
        let invalid = |field: String, message: String| Error::Invalid {
            file: r.origin.file.clone(),
            field: join(&r.origin.field, &field),
            message,
        };
        // kustomize re-encodes its config with `omitempty`: an empty list of targets is none.
        let targets = r.targets.as_ref().filter(|t| !t.is_empty());
        let (Some(source), Some(targets)) = (&r.source, targets) else {
            return Err(invalid(
                String::new(),
                "replacements must specify a source and at least one target".into(),
            ));
        };
        let value = source_value(resources, source).map_err(|m| invalid("source".into(), m))?;
        for (t, target) in targets.iter().enumerate() {
            let field = format!("targets[{t}]");
            let Some(select) = &target.select else {
                return Err(invalid(
                    field,
                    "target must specify resources to select".into(),
                ));
            };
            let default_paths = [DEFAULT_FIELD_PATH.to_owned()];
            let paths = if target.field_paths.is_empty() {
                &default_paths[..]
            } else {
                &target.field_paths[..]
            };
            for resource in resources.iter_mut() {
                if !is_target(resource, select, &target.reject)
                    .map_err(|m| invalid(field.clone(), m))?
                {
                    continue;
                }
                for (p, path) in paths.iter().enumerate() {
                    write_target(&mut resource.object, path, &value, target.options.as_ref())
                        .map_err(|m| invalid(format!("{field}.fieldPaths[{p}]"), m))?;
                }
            }
        }
    }
    Ok(())
}

fn join(prefix: &str, field: &str) -> String {
    match (prefix.is_empty(), field.is_empty()) {
        (true, _) => field.to_owned(),
        (_, true) => prefix.to_owned(),
        _ => format!("{prefix}.{field}"),
    }
}

/// The resource's current id and every previous one (kustomize's `MakeResIds`).
fn ids(r: &Resource) -> impl Iterator<Item = ResId> + '_ {
    std::iter::once(r.id()).chain(r.previous.iter().cloned())
}

/// kustomize's `ResId.IsSelectedBy`: every part the selector sets is equal, the namespace in
/// its effective form.
fn is_selected_by(
    id: &ResId,
    group: &str,
    version: &str,
    kind: &str,
    name: &str,
    namespace: &str,
) -> bool {
    let selector = ResId {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        name: name.into(),
        namespace: namespace.into(),
    };
    (name.is_empty() || name == id.name)
        && (namespace.is_empty() || selector.effective_namespace() == id.effective_namespace())
        && id.is_selected(group, version, kind)
}

fn selected_by(id: &ResId, s: &Selector) -> bool {
    is_selected_by(id, &s.group, &s.version, &s.kind, &s.name, &s.namespace)
}

/// The label and annotation parts of a selector, matched through [`Selector`].
fn labels_match(r: &Resource, s: &Selector) -> Result<bool, String> {
    let labels_only = Selector {
        label_selector: s.label_selector.clone(),
        annotation_selector: s.annotation_selector.clone(),
        ..Selector::default()
    };
    labels_only.matches(r).map_err(|e| e.to_string())
}

/// kustomize's target choice: the select's labels and annotations match and no reject's do;
/// some id is selected by the select's id parts, and no id by any reject's.
fn is_target(r: &Resource, select: &Selector, rejects: &[Selector]) -> Result<bool, String> {
    if !labels_match(r, select)? {
        return Ok(false);
    }
    for reject in rejects {
        let has_labels =
            !reject.label_selector.is_empty() || !reject.annotation_selector.is_empty();
        if has_labels && labels_match(r, reject)? {
            return Ok(false);
        }
    }
    let rejected = rejects.iter().any(|reject| {
        let id_empty = reject.group.is_empty()
            && reject.version.is_empty()
            && reject.kind.is_empty()
            && reject.name.is_empty()
            && reject.namespace.is_empty();
        !id_empty && ids(r).any(|id| selected_by(&id, reject))
    });
    Ok(!rejected && ids(r).any(|id| selected_by(&id, select)))
}

/// The source's value: its object (exactly one), the field, refined by the options.
fn source_value(resources: &[Resource], source: &SourceSelector) -> Result<Value, String> {
    let describe = || {
        let id = ResId {
            group: source.group.clone(),
            version: source.version.clone(),
            kind: source.kind.clone(),
            name: source.name.clone(),
            namespace: source.namespace.clone(),
        };
        let mut parts = vec![id.display()];
        if !source.field_path.is_empty() {
            parts.push(source.field_path.clone());
        }
        if let Some(o) = source
            .options
            .as_ref()
            .filter(|o| !o.delimiter.is_empty() || o.create)
        {
            parts.push(format!("{}({}), create={}", o.delimiter, o.index, o.create));
        }
        (id, parts.join(":"))
    };
    let mut matches = resources.iter().filter(|r| {
        ids(r).any(|id| {
            is_selected_by(
                &id,
                &source.group,
                &source.version,
                &source.kind,
                &source.name,
                &source.namespace,
            )
        })
    });
    let Some(object) = matches.next() else {
        return Err(format!("nothing selected by {}", describe().1));
    };
    if matches.next().is_some() {
        return Err(format!("multiple matches for selector {}", describe().1));
    }
    let field_path = if source.field_path.is_empty() {
        DEFAULT_FIELD_PATH
    } else {
        &source.field_path
    };
    let found = lookup(&object.object, &split_path(field_path))
        .map_err(|e| format!("error looking up replacement source: {e}"))?;
    let value = match found {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) if m.is_empty() => None,
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(v) => Some(v.clone()),
    }
    .ok_or_else(|| {
        format!(
            "fieldPath `{field_path}` is missing for replacement source {}",
            describe().0.display()
        )
    })?;
    let Some(options) = source.options.as_ref().filter(|o| !o.delimiter.is_empty()) else {
        return Ok(value);
    };
    if !is_scalar(&value) {
        return Err("delimiter option can only be used with scalar nodes".into());
    }
    let text = scalar_text(&value);
    let parts: Vec<&str> = text.split(options.delimiter.as_str()).collect();
    let part = usize::try_from(options.index)
        .ok()
        .and_then(|i| parts.get(i))
        .ok_or_else(|| {
            format!(
                "options.index {} is out of bounds for value {text}",
                options.index
            )
        })?;
    Ok(with_text(&value, part))
}

/// kustomize's `SmarterPathSplitter` on `.`: `\.` escapes a dot, a leading `.` is dropped,
/// and brackets keep their dots (`[a.b]` is the field `a.b`, `[name=a.b]` a list match).
pub(crate) fn split_path(path: &str) -> Vec<String> {
    let mut raw: Vec<&str> = path.split('.').collect();
    if raw.len() > 1 && raw[0].is_empty() {
        raw.remove(0);
    }
    let mut unescaped: Vec<String> = Vec::new();
    for part in raw {
        match unescaped.last_mut() {
            Some(last) if last.ends_with('\\') => {
                last.pop();
                last.push('.');
                last.push_str(part);
            }
            _ => unescaped.push(part.to_owned()),
        }
    }
    let mut out = Vec::new();
    let mut parts = unescaped.into_iter();
    while let Some(part) = parts.next() {
        if part.starts_with('[') && !part.ends_with(']') {
            let mut bracketed = vec![part];
            for next in parts.by_ref() {
                let done = next.ends_with(']');
                bracketed.push(next);
                if done {
                    break;
                }
            }
            let joined = bracketed.join(".");
            if joined.contains('=') {
                out.push(joined);
            } else {
                out.push(joined.trim_matches(['[', ']']).to_owned());
            }
        } else {
            out.push(part);
        }
    }
    out
}

/// Go's `strconv.Atoi` on a path part: optional sign, decimal digits.
fn atoi(part: &str) -> Option<i64> {
    let digits = part.strip_prefix(['+', '-']).unwrap_or(part);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    part.parse().ok()
}

fn is_list_match(part: &str) -> bool {
    part.starts_with('[') && part.ends_with(']')
}

/// `[key=value]` split (kyaml's `SplitIndexNameValue`); the key is empty for a list of
/// scalars.
fn list_match(part: &str) -> Result<(&str, &str), String> {
    let inner = part.strip_suffix(']').unwrap_or(part);
    let inner = inner.strip_prefix('[').unwrap_or(inner);
    inner.split_once('=').ok_or_else(|| {
        "list path element must contain fieldName=fieldValue for element to match".to_owned()
    })
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "MappingNode",
        Value::Array(_) => "SequenceNode",
        _ => "ScalarNode",
    }
}

fn wrong_kind(expected: &str, got: &Value) -> String {
    format!(
        "wrong node kind: expected {expected} but got {}",
        kind_name(got)
    )
}

/// kyaml's `PathGetter` without creation, for the source.
pub(crate) fn lookup<'a>(node: &'a Value, parts: &[String]) -> Result<Option<&'a Value>, String> {
    let Some((part, rest)) = parts.split_first() else {
        return Ok(Some(node));
    };
    if node.is_null() {
        return Ok(None);
    }
    let next = if let Some(idx) = atoi(part) {
        if idx < 0 {
            return Err(format!("array index {idx} cannot be negative"));
        }
        let items = node
            .as_array()
            .ok_or_else(|| wrong_kind("SequenceNode", node))?;
        usize::try_from(idx).ok().and_then(|i| items.get(i))
    } else if part == "-" {
        node.as_array()
            .ok_or_else(|| wrong_kind("SequenceNode", node))?
            .last()
    } else if part == "*" {
        return Err("wildcard is not supported in PathGetter".into());
    } else if is_list_match(part) {
        let (key, value) = list_match(part)?;
        let items = node
            .as_array()
            .ok_or_else(|| wrong_kind("SequenceNode", node))?;
        items.iter().find(|item| {
            if key.is_empty() {
                is_scalar(item) && scalar_text(item) == value
            } else {
                item.get(key).is_some_and(|v| scalar_text(v) == value)
            }
        })
    } else {
        node.as_object()
            .ok_or_else(|| wrong_kind("MappingNode", node))?
            .get(part.as_str())
    };
    match next {
        Some(next) => lookup(next, rest),
        None => Ok(None),
    }
}

/// A step of a location inside an object.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// A field a target path found: where, and whether kyaml created it as an untagged scalar
/// (its type then comes from the text written to it).
struct Found {
    at: Vec<Step>,
    fresh: bool,
}

/// What kind of node a missing path part is created as (kyaml's `getPathPartKind`): a list
/// before an index or a `[key=value]`, the value's own kind at the end, a map otherwise.
fn created_for(next: Option<&String>, last: &Value) -> Value {
    match next {
        Some(n) if is_list_match(n) || atoi(n).is_some_and(|i| i >= 0) => Value::Array(Vec::new()),
        Some(_) => Value::Object(Map::new()),
        None => match last {
            Value::Object(_) => Value::Object(Map::new()),
            Value::Array(_) => Value::Array(Vec::new()),
            _ => Value::Null,
        },
    }
}

/// kyaml's `PathMatcher`: every field `parts` reaches from `node`, created along the way when
/// `create` holds the value to be written (its kind decides the last node's).
fn find(
    node: &mut Value,
    parts: &[String],
    create: Option<&Value>,
    at: &mut Vec<Step>,
    fresh: bool,
    out: &mut Vec<Found>,
) -> Result<(), String> {
    let Some((part, rest)) = parts.split_first() else {
        out.push(Found {
            at: at.clone(),
            fresh,
        });
        return Ok(());
    };
    let new_node = |create: &Value| created_for(rest.first(), create);
    if let Some(idx) = atoi(part).filter(|i| *i >= 0) {
        let idx = usize::try_from(idx).map_err(|e| e.to_string())?;
        if node.is_null() && create.is_some() && idx == 0 {
            *node = Value::Array(Vec::new());
        }
        let items = match node {
            Value::Array(items) => items,
            Value::Null => {
                return Err(format!("index {idx} specified but only 0 elements found"));
            }
            other => return Err(wrong_kind("SequenceNode", other)),
        };
        let mut created = false;
        if let Some(c) = create
            && items.len() == idx
        {
            items.push(new_node(c));
            created = true;
        }
        let len = items.len();
        let item = items
            .get_mut(idx)
            .ok_or_else(|| format!("index {idx} specified but only {len} elements found"))?;
        at.push(Step::Index(idx));
        let r = find(item, rest, create, at, created && rest.is_empty(), out);
        at.pop();
        return r;
    }
    if is_list_match(part) {
        let (key, pattern) = list_match(part)?;
        let re = Regex::new(pattern).map_err(|e| e.to_string())?;
        let matched = |item: &Value| {
            if key.is_empty() {
                re.is_match(scalar_text(item).trim())
            } else {
                item.as_object()
                    .and_then(|m| m.get(key))
                    .is_some_and(|v| re.is_match(scalar_text(v).trim()))
            }
        };
        if node.is_null() {
            return Ok(());
        }
        let Some(items) = node.as_array_mut() else {
            return Err(wrong_kind("SequenceNode", node));
        };
        let before = out.len();
        for (i, item) in items.iter_mut().enumerate() {
            if !matched(item) {
                continue;
            }
            at.push(Step::Index(i));
            // A list of scalars: the element itself, whatever follows.
            if key.is_empty() {
                out.push(Found {
                    at: at.clone(),
                    fresh: false,
                });
            } else {
                find(item, rest, create, at, false, out)?;
            }
            at.pop();
        }
        if out.len() > before || create.is_none() {
            return Ok(());
        }
        let value = crate::yaml::plain_value(pattern);
        items.push(if key.is_empty() {
            value
        } else {
            Value::Object(Map::from_iter([(key.to_owned(), value)]))
        });
        return find(node, parts, create, at, fresh, out);
    }
    if part == "*" {
        if node.is_null() {
            return Ok(());
        }
        let Some(items) = node.as_array_mut() else {
            return Err(wrong_kind("SequenceNode", node));
        };
        for (i, item) in items.iter_mut().enumerate() {
            at.push(Step::Index(i));
            find(item, rest, create, at, false, out)?;
            at.pop();
        }
        return Ok(());
    }
    if node.is_null() {
        return Ok(());
    }
    let Some(map) = node.as_object_mut() else {
        return Err(wrong_kind("MappingNode", node));
    };
    let mut created = false;
    if !map.contains_key(part.as_str()) {
        let Some(c) = create else {
            return Ok(());
        };
        map.insert(part.clone(), new_node(c));
        created = true;
    }
    let Some(field) = map.get_mut(part.as_str()) else {
        return Ok(());
    };
    at.push(Step::Key(part.clone()));
    let r = find(field, rest, create, at, created && rest.is_empty(), out);
    at.pop();
    r
}

fn at_mut<'a>(mut node: &'a mut Value, at: &[Step]) -> Option<&'a mut Value> {
    for step in at {
        node = match step {
            Step::Key(k) => node.get_mut(k.as_str())?,
            Step::Index(i) => node.get_mut(*i)?,
        };
    }
    Some(node)
}

/// Writes `value` at every field `path` reaches in `object` (kustomize's
/// `copyValueToTarget`); none is an error.
fn write_target(
    object: &mut Value,
    path: &str,
    value: &Value,
    options: Option<&FieldOptions>,
) -> Result<(), String> {
    let create = options.is_some_and(|o| o.create);
    let unable = if create {
        format!("unable to find or create field {path:?} in replacement target")
    } else {
        format!("unable to find field {path:?} in replacement target")
    };
    let mut found = Vec::new();
    find(
        object,
        &split_path(path),
        create.then_some(value),
        &mut Vec::new(),
        false,
        &mut found,
    )
    .map_err(|e| format!("{unable}: {e}"))?;
    if found.is_empty() {
        return Err(unable);
    }
    for f in found {
        if let Some(target) = at_mut(object, &f.at) {
            set_field(target, f.fresh, value, options)?;
        }
    }
    Ok(())
}

/// kustomize's `setFieldValue`: a scalar target takes the value's text and keeps its own type
/// (an untagged scalar kyaml just created takes the type the text reads as); a map or list
/// target is replaced by the value.
fn set_field(
    target: &mut Value,
    fresh: bool,
    value: &Value,
    options: Option<&FieldOptions>,
) -> Result<(), String> {
    let mut value = value.clone();
    if let Some(o) = options.filter(|o| !o.delimiter.is_empty()) {
        if !is_scalar(target) {
            return Err("delimiter option can only be used with scalar nodes".into());
        }
        let current = scalar_text(target);
        let mut parts: Vec<&str> = current.split(o.delimiter.as_str()).collect();
        let v = scalar_text(&value);
        match usize::try_from(o.index) {
            Err(_) => parts.insert(0, &v),
            Ok(i) if i >= parts.len() => parts.push(&v),
            Ok(i) => parts[i] = &v,
        }
        value = with_text(&value, &parts.join(&o.delimiter));
    }
    if !is_scalar(target) {
        *target = value;
        return Ok(());
    }
    let text = scalar_text(&value);
    if fresh {
        *target = crate::yaml::plain_value(&text);
        return Ok(());
    }
    *target = retyped(target, &text)?;
    Ok(())
}

/// `text` in the type of the scalar it replaces, as go-yaml decodes a node whose value changed
/// but whose tag did not: a number stays a number only if the text is one (an integer field
/// takes no fraction), and so on, else go-yaml's error.
fn retyped(target: &Value, text: &str) -> Result<Value, String> {
    use crate::yaml::Plain;
    let resolved = crate::yaml::resolve(text, false);
    let (tag, ok) = match (target, &resolved) {
        (Value::String(_), _) => return Ok(Value::String(text.to_owned())),
        (Value::Null, Plain::Null) => return Ok(Value::Null),
        (Value::Bool(_), Plain::Bool(b)) => return Ok(Value::Bool(*b)),
        (Value::Number(n), Plain::Int(i)) if n.is_f64() => ("!!float", i.as_f64()),
        (Value::Number(n), Plain::Int(i)) if !n.is_f64() => return Ok(Value::Number(i.clone())),
        (Value::Number(n), Plain::Float(f)) if n.is_f64() => ("!!float", Some(*f)),
        (Value::Null, _) => ("!!null", None),
        (Value::Bool(_), _) => ("!!bool", None),
        (Value::Number(n), _) if n.is_f64() => ("!!float", None),
        _ => ("!!int", None),
    };
    ok.and_then(serde_json::Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| format!("cannot decode {} `{text}` as a {tag}", resolved.tag()))
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Object(_) | Value::Array(_))
}

/// A scalar's text as YAML holds it (a map's or list's is empty, as a YAML node's value).
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::Object(_) | Value::Array(_) => String::new(),
    }
}

/// `value` with its text changed and its type kept, as a YAML scalar whose value is set.
fn with_text(value: &Value, text: &str) -> Value {
    retyped(value, text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESOURCES: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: src
data:
  image: newimg:2
  num: \"7\"
  csv: a,b,c
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: dep
  labels:
    keep: x
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: nginx
        image: nginx:1
        args: [\"x\", \"y\"]
      - name: nginx-sidecar
        image: side:1
      - name: other
        image: other:1
        env:
        - name: A
          value: a
";

    fn resources(yaml: &str) -> Vec<Resource> {
        let objects: Vec<Value> = serde_saphyr::from_multiple(yaml).expect("resources");
        objects.into_iter().map(Resource::new).collect()
    }

    fn replacements(yaml: &str) -> Vec<Replacement> {
        let entries: Vec<Value> = serde_saphyr::from_str(yaml).expect("replacements");
        let loader = Loader::new(&crate::fs::Disk, Path::new("/nonexistent"));
        load(&loader, Path::new("k.yaml"), &entries).expect("load")
    }

    fn run(resources_yaml: &str, replacements_yaml: &str) -> Result<String, Error> {
        let mut rs = resources(resources_yaml);
        apply(&mut rs, &replacements(replacements_yaml))?;
        let objects: Vec<Value> = rs.into_iter().map(|r| r.object).collect();
        Ok(crate::yaml::to_string(&objects))
    }

    fn error(replacements_yaml: &str) -> String {
        run(RESOURCES, replacements_yaml)
            .expect_err("an error")
            .to_string()
    }

    /// The expected text is `kubectl kustomize` (v5.5) of the same resources and replacements.
    #[test]
    fn paths_options_and_creation_as_kubectl_kustomize() {
        let out = run(
            RESOURCES,
            "- source: {kind: ConfigMap, name: src, fieldPath: data.image}
  targets:
  - select: {kind: Deployment}
    fieldPaths:
    - spec.template.spec.containers.[name=nginx].image
- source: {kind: ConfigMap, fieldPath: data.num}
  targets:
  - select: {kind: Deployment}
    fieldPaths:
    - spec.replicas
    - metadata.labels.keep
    - spec.template.spec.containers.2.env.[name=A].value
    - spec.template.spec.containers.*.args.1
- source: {kind: Deployment, fieldPath: spec.replicas}
  targets:
  - select: {kind: ConfigMap}
    fieldPaths: [data.fromint, data.nested.deep]
    options: {create: true}
- source:
    kind: ConfigMap
    fieldPath: data.csv
    options: {delimiter: ',', index: 1}
  targets:
  - select: {kind: Deployment}
    fieldPaths:
    - spec.template.spec.containers.[name=other].image
    options: {delimiter: ':', index: 5}
- source:
    kind: Deployment
    fieldPath: spec.template.spec.containers.[name=other]
  targets:
  - select: {kind: ConfigMap}
    fieldPaths: [data.obj]
    options: {create: true}
- source: {kind: ConfigMap, fieldPath: data.image}
  targets:
  - select: {kind: Deployment}
    fieldPaths:
    - spec.template.spec.containers.[name=zzz].image
    - spec.template.spec.containers.0.args.2
    options: {create: true}
  - select: {name: dep}
    reject: [{kind: Deployment}]
    fieldPaths: [metadata.labels.never]
",
        )
        .expect("applied");
        assert_eq!(
            out,
            "apiVersion: v1
data:
  csv: a,b,c
  fromint: 7
  image: newimg:2
  nested:
    deep: 7
  num: \"7\"
  obj:
    env:
    - name: A
      value: \"7\"
    image: other:1:b
    name: other
kind: ConfigMap
metadata:
  name: src
---
apiVersion: apps/v1
kind: Deployment
metadata:
  labels:
    keep: \"7\"
  name: dep
spec:
  replicas: 7
  template:
    spec:
      containers:
      - args:
        - x
        - \"7\"
        - newimg:2
        image: newimg:2
        name: nginx
      - image: newimg:2
        name: nginx-sidecar
      - env:
        - name: A
          value: \"7\"
        image: other:1:b
        name: other
      - image: newimg:2
        name: zzz
"
        );
    }

    /// Created fields take the type their text reads as; existing ones keep theirs
    /// (`kubectl kustomize` of the same).
    #[test]
    fn created_fields_are_typed_by_their_text() {
        let out = run(
            "apiVersion: v1
kind: ConfigMap
metadata:
  name: src
data: {abc: abc, t: 'true', f: '1.5', h: '0x10', e: '', o: '0o17', n: '~', y: 'yes'}
---
apiVersion: v1
kind: Pod
metadata:
  name: tgt
spec:
  floatt: 1.5
",
            "- source: {kind: ConfigMap, fieldPath: data.abc}
  targets: [{select: {kind: Pod}, fieldPaths: [spec.c_abc], options: {create: true}}]
- source: {kind: ConfigMap, fieldPath: data.t}
  targets: [{select: {kind: Pod}, fieldPaths: [spec.c_t], options: {create: true}}]
- source: {kind: ConfigMap, fieldPath: data.f}
  targets: [{select: {kind: Pod}, fieldPaths: [spec.c_f], options: {create: true}}]
- source: {kind: ConfigMap, fieldPath: data.h}
  targets: [{select: {kind: Pod}, fieldPaths: [spec.c_h, spec.floatt], options: {create: true}}]
- source: {kind: ConfigMap, fieldPath: data.e}
  targets: [{select: {kind: Pod}, fieldPaths: [spec.c_e], options: {create: true}}]
- source: {kind: ConfigMap, fieldPath: data.o}
  targets: [{select: {kind: Pod}, fieldPaths: [spec.c_o], options: {create: true}}]
- source: {kind: ConfigMap, fieldPath: data.n}
  targets: [{select: {kind: Pod}, fieldPaths: [spec.c_n], options: {create: true}}]
- source: {kind: ConfigMap, fieldPath: data.y}
  targets: [{select: {kind: Pod}, fieldPaths: [spec.c_y], options: {create: true}}]
",
        )
        .expect("applied");
        assert!(
            out.ends_with(
                "spec:
  c_abc: abc
  c_e: null
  c_f: 1.5
  c_h: 16
  c_n: null
  c_o: 15
  c_t: true
  c_y: \"yes\"
  floatt: 16
"
            ),
            "{out}"
        );
    }

    #[test]
    fn typed_targets_refuse_text_of_another_type() {
        let resources = "apiVersion: v1
kind: Pod
metadata:
  name: tgt
spec: {intt: 1, boolt: true, nullt: null}
";
        for (path, message) in [
            ("spec.intt", "cannot decode !!str `tgt` as a !!int"),
            ("spec.boolt", "cannot decode !!str `tgt` as a !!bool"),
            ("spec.nullt", "cannot decode !!str `tgt` as a !!null"),
        ] {
            let err = run(
                resources,
                &format!("- source: {{kind: Pod}}\n  targets: [{{select: {{kind: Pod}}, fieldPaths: [{path}]}}]\n"),
            )
            .expect_err("an error")
            .to_string();
            assert_eq!(
                err,
                format!("k.yaml: replacements[0].targets[0].fieldPaths[0]: {message}")
            );
        }
    }

    #[test]
    fn kustomize_errors() {
        assert_eq!(
            error("- source: {kind: Nope}\n  targets: [{select: {kind: Deployment}}]\n"),
            "k.yaml: replacements[0].source: nothing selected by \
             Nope.[noVer].[noGrp]/[noName].[noNs]"
        );
        assert_eq!(
            error("- source: {version: v1}\n  targets: [{select: {kind: Deployment}}]\n"),
            "k.yaml: replacements[0].source: multiple matches for selector \
             [noKind].v1.[noGrp]/[noName].[noNs]"
        );
        assert_eq!(
            error(
                "- source: {kind: ConfigMap, fieldPath: data.missing}\n  \
                 targets: [{select: {kind: Deployment}}]\n"
            ),
            "k.yaml: replacements[0].source: fieldPath `data.missing` is missing for \
             replacement source ConfigMap.[noVer].[noGrp]/[noName].[noNs]"
        );
        assert_eq!(
            error(
                "- source: {kind: ConfigMap, fieldPath: data.image}\n  \
                 targets: [{select: {kind: Deployment}, fieldPaths: [spec.nope.x]}]\n"
            ),
            "k.yaml: replacements[0].targets[0].fieldPaths[0]: unable to find field \
             \"spec.nope.x\" in replacement target"
        );
        assert_eq!(
            error(
                "- source: {kind: ConfigMap, fieldPath: data.image}\n  \
                 targets: [{select: {kind: Deployment}, fieldPaths: [metadata.name.x]}]\n"
            ),
            "k.yaml: replacements[0].targets[0].fieldPaths[0]: unable to find field \
             \"metadata.name.x\" in replacement target: wrong node kind: expected MappingNode \
             but got ScalarNode"
        );
        for no_targets in ["", "  targets: []\n"] {
            assert_eq!(
                error(&format!(
                    "- source: {{kind: ConfigMap, fieldPath: data.image}}\n{no_targets}"
                )),
                "k.yaml: replacements[0]: replacements must specify a source and at least one \
                 target"
            );
        }
        assert_eq!(
            error(
                "- source: {kind: ConfigMap, fieldPath: data.image}\n  \
                 targets: [{fieldPaths: [x]}]\n"
            ),
            "k.yaml: replacements[0].targets[0]: target must specify resources to select"
        );
        assert_eq!(
            error(
                "- source: {kind: ConfigMap, fieldPath: data.csv, options: {delimiter: ',', \
                 index: 7}}\n  targets: [{select: {kind: Deployment}}]\n"
            ),
            "k.yaml: replacements[0].source: options.index 7 is out of bounds for value a,b,c"
        );
    }

    #[test]
    fn unknown_fields_are_refused() {
        let entries: Vec<Value> = serde_saphyr::from_str(
            "- source: {kind: ConfigMap}\n  targets:\n  - select: {kind: Deployment}\n    \
             fieldPath: spec.x\n",
        )
        .expect("entries");
        let loader = Loader::new(&crate::fs::Disk, Path::new("/nonexistent"));
        let err = load(&loader, Path::new("k.yaml"), &entries)
            .expect_err("unknown field")
            .to_string();
        assert!(
            err.starts_with("k.yaml: replacements[0]: unknown field `fieldPath`"),
            "{err}"
        );
    }

    #[test]
    fn previous_ids_select_and_labels_filter() {
        let mut rs = resources(RESOURCES);
        // As after `namePrefix: p-`: the source is still found by its old name.
        rs[0].store_previous_id();
        rs[0].object["metadata"]["name"] = Value::String("p-src".into());
        rs[1].object["metadata"]["labels"]["tier"] = Value::String("web".into());
        apply(
            &mut rs,
            &replacements(
                "- source: {kind: ConfigMap, name: src, fieldPath: data.num}
  targets:
  - select: {labelSelector: tier=web}
    fieldPaths: [metadata.labels.a]
    options: {create: true}
  - select: {kind: Deployment}
    reject: [{labelSelector: tier=web}]
    fieldPaths: [metadata.labels.b]
    options: {create: true}
",
            ),
        )
        .expect("applied");
        let labels = &rs[1].object["metadata"]["labels"];
        assert_eq!(labels["a"], Value::from(7));
        assert!(labels.get("b").is_none());
    }

    #[test]
    fn paths_split_as_kustomize() {
        assert_eq!(
            split_path("metadata.annotations.[a.b/c].x"),
            ["metadata", "annotations", "a.b/c", "x"]
        );
        assert_eq!(
            split_path("spec.[name=a.b].image"),
            ["spec", "[name=a.b]", "image"]
        );
        assert_eq!(split_path("a\\.b.c"), ["a.b", "c"]);
        assert_eq!(split_path(".a.b"), ["a", "b"]);
    }

    #[test]
    fn replacement_files_hold_one_or_many() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("one.yaml"),
            "source: {kind: ConfigMap}\ntargets: []\n",
        )
        .expect("write");
        std::fs::write(
            dir.path().join("many.yaml"),
            "- source: {kind: A}\n  targets: []\n- source: {kind: B}\n  targets: []\n",
        )
        .expect("write");
        let loader = Loader::new(&crate::fs::Disk, dir.path());
        let entries: Vec<Value> = serde_saphyr::from_str(
            "- path: one.yaml\n- path: many.yaml\n- source: {kind: C}\n  targets: []\n",
        )
        .expect("entries");
        let loaded = load(&loader, Path::new("k.yaml"), &entries).expect("load");
        let kinds: Vec<&str> = loaded
            .iter()
            .filter_map(|r| r.source.as_ref().map(|s| s.kind.as_str()))
            .collect();
        assert_eq!(kinds, ["ConfigMap", "A", "B", "C"]);
        let both: Vec<Value> =
            serde_saphyr::from_str("- path: one.yaml\n  source: {kind: C}\n").expect("entries");
        assert_eq!(
            load(&loader, Path::new("k.yaml"), &both)
                .expect_err("both")
                .to_string(),
            "k.yaml: replacements[0]: cannot specify both path and inline replacement"
        );
    }
}
