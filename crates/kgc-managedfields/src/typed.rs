//! Schema-aware walks over JSON objects (structured-merge-diff `typed/`: `tofieldset.go`,
//! `merge.go`, `compare.go`, `remove.go`).

use crate::fieldpath::values_equal;
use crate::{Error, FieldSet, ListType, PathElement, Schema};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug)]
enum Assoc {
    Set,
    Map(Vec<String>),
}

enum Node<'a> {
    Map(&'a Map<String, Value>),
    List(&'a [Value], Assoc),
    Leaf,
}

impl Node<'_> {
    fn is_empty_container(&self) -> bool {
        match self {
            Node::Map(m) => m.is_empty(),
            Node::List(items, _) => items.is_empty(),
            Node::Leaf => false,
        }
    }
}

fn classify<'a>(v: &'a Value, spath: &[&str], schema: &dyn Schema) -> Node<'a> {
    match v {
        Value::Object(m) if !schema.map_is_atomic(spath) => Node::Map(m),
        Value::Array(items) => match list_assoc(spath, schema) {
            Some(assoc) => Node::List(items, assoc),
            None => Node::Leaf,
        },
        _ => Node::Leaf,
    }
}

fn list_assoc(spath: &[&str], schema: &dyn Schema) -> Option<Assoc> {
    match schema.list_type(spath) {
        ListType::Atomic => None,
        ListType::Set => Some(Assoc::Set),
        ListType::Map(keys) if keys.is_empty() => Some(Assoc::Set),
        ListType::Map(keys) => Some(Assoc::Map(keys)),
    }
}

fn display_spath(spath: &[&str]) -> String {
    spath.join(".")
}

/// The path element of a list item (`listItemToPathElement`).
fn item_pe(
    item: &Value,
    assoc: &Assoc,
    spath: &[&str],
    schema: &dyn Schema,
) -> Result<PathElement, Error> {
    match assoc {
        Assoc::Set => Ok(PathElement::Value(item.clone())),
        Assoc::Map(keys) => {
            let Value::Object(m) = item else {
                return Err(Error::Invalid(format!(
                    ".{}: associative list with keys has an element that is not a map type",
                    display_spath(spath)
                )));
            };
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                match m.get(key) {
                    Some(v) => fields.push((key.clone(), v.clone())),
                    None => match schema.list_map_key_default(spath, key) {
                        Some(d) => fields.push((key.clone(), d)),
                        None => {
                            return Err(Error::Invalid(format!(
                                ".{}: associative list with keys has an element that omits key \
                                 field {key:?} (and doesn't have default value)",
                                display_spath(spath)
                            )));
                        }
                    },
                }
            }
            Ok(PathElement::key(fields))
        }
    }
}

/// Path elements of a list's items, in order.
fn index_items(
    items: &[Value],
    assoc: &Assoc,
    spath: &[&str],
    schema: &dyn Schema,
) -> Result<Vec<PathElement>, Error> {
    items
        .iter()
        .map(|item| item_pe(item, assoc, spath, schema))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// ToFieldSet

/// Every leaf field and list item mentioned by `v` (`TypedValue.ToFieldSet`). With `strict`,
/// duplicate list items are an error (apply configurations); otherwise a duplicated item is owned
/// as a whole.
pub(crate) fn to_field_set(
    v: &Value,
    schema: &dyn Schema,
    strict: bool,
) -> Result<FieldSet, Error> {
    let mut out = FieldSet::new();
    let mut spath = Vec::new();
    tfs(v, &mut out, &mut spath, schema, strict, false)?;
    Ok(out)
}

/// Every path `v` mentions, objects and lists included (even empty ones).
pub(crate) fn mentioned_paths(v: &Value, schema: &dyn Schema) -> Result<FieldSet, Error> {
    let mut out = FieldSet::new();
    let mut spath = Vec::new();
    tfs(v, &mut out, &mut spath, schema, true, true)?;
    Ok(out)
}

/// Fills `node` with the paths below `v` (built bottom-up, one node per level).
fn tfs<'a>(
    v: &'a Value,
    node: &mut FieldSet,
    spath: &mut Vec<&'a str>,
    schema: &dyn Schema,
    strict: bool,
    all: bool,
) -> Result<(), Error> {
    match classify(v, spath, schema) {
        Node::Leaf => {}
        Node::Map(m) => {
            for (k, child) in m {
                spath.push(k);
                let kind = classify(child, spath, schema);
                let pe = PathElement::Field(k.clone());
                if matches!(kind, Node::Leaf) {
                    node.insert_member(pe);
                } else {
                    let mut sub = FieldSet::new();
                    tfs(child, &mut sub, spath, schema, strict, all)?;
                    if all {
                        node.insert_member(pe.clone());
                    }
                    node.insert_child(pe, sub);
                }
                spath.pop();
            }
        }
        Node::List(items, assoc) => {
            let pes = index_items(items, &assoc, spath, schema)?;
            let mut counts: BTreeMap<&PathElement, usize> = BTreeMap::new();
            for pe in &pes {
                *counts.entry(pe).or_default() += 1;
            }
            for (item, pe) in items.iter().zip(&pes) {
                let duplicated = counts[pe] > 1;
                if duplicated && strict {
                    return Err(Error::Invalid(format!(
                        ".{}: duplicate entries for key {pe}",
                        display_spath(spath)
                    )));
                }
                node.insert_member(pe.clone());
                if !duplicated {
                    let mut sub = FieldSet::new();
                    tfs(item, &mut sub, spath, schema, strict, all)?;
                    if !sub.is_empty() {
                        node.insert_child(pe.clone(), sub);
                    }
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Merge

/// Merges the applied configuration `rhs` into `lhs` (`TypedValue.Merge` with `ruleKeepRHS`):
/// objects merge field by field, set and map lists merge item by item, everything else (scalars,
/// atomic lists and maps) is replaced. An explicit `null` in `rhs` is kept (it is a change other
/// managers can conflict on); [`drop_applied_nulls`] removes it afterwards. The caller has
/// validated `rhs` with [`to_field_set`] (strict).
pub(crate) fn merge(lhs: &Value, rhs: &Value, schema: &dyn Schema) -> Result<Value, Error> {
    let mut spath = Vec::new();
    Ok(merge_values(Some(lhs), Some(rhs), &mut spath, schema)?.unwrap_or(Value::Null))
}

fn merge_values<'a>(
    lhs: Option<&'a Value>,
    rhs: Option<&'a Value>,
    spath: &mut Vec<&'a str>,
    schema: &dyn Schema,
) -> Result<Option<Value>, Error> {
    let (l, r) = match (lhs, rhs) {
        (None, None) => return Ok(None),
        (Some(l), None) => return Ok(Some(l.clone())),
        (None, Some(r)) => return Ok(Some(r.clone())),
        (Some(l), Some(r)) => (l, r),
    };
    match (classify(l, spath, schema), classify(r, spath, schema)) {
        (Node::Map(lm), Node::Map(rm)) if !(lm.is_empty() && rm.is_empty()) => {
            let mut out = Map::new();
            for (k, lv) in lm {
                match rm.get(k) {
                    Some(rv) => {
                        spath.push(k);
                        let merged = merge_values(Some(lv), Some(rv), spath, schema)?;
                        spath.pop();
                        if let Some(m) = merged {
                            out.insert(k.clone(), m);
                        }
                    }
                    None => {
                        out.insert(k.clone(), lv.clone());
                    }
                }
            }
            for (k, rv) in rm {
                if lm.contains_key(k) {
                    continue;
                }
                spath.push(k);
                let merged = merge_values(None, Some(rv), spath, schema)?;
                spath.pop();
                if let Some(m) = merged {
                    out.insert(k.clone(), m);
                }
            }
            Ok(Some(Value::Object(out)))
        }
        (Node::List(ll, assoc), Node::List(rl, _)) if !(ll.is_empty() && rl.is_empty()) => {
            merge_lists(ll, rl, &assoc, spath, schema).map(|items| Some(Value::Array(items)))
        }
        _ => Ok(Some(r.clone())),
    }
}

fn merge_lists<'a>(
    lhs: &'a [Value],
    rhs: &'a [Value],
    assoc: &Assoc,
    spath: &mut Vec<&'a str>,
    schema: &dyn Schema,
) -> Result<Vec<Value>, Error> {
    let rpes = index_items(rhs, assoc, spath, schema)?;
    let mut observed_rhs: BTreeMap<&PathElement, &'a Value> = BTreeMap::new();
    for (pe, item) in rpes.iter().zip(rhs) {
        if observed_rhs.insert(pe, item).is_some() {
            return Err(Error::Invalid(format!(
                ".{}: duplicate entries for key {pe}",
                display_spath(spath)
            )));
        }
    }
    let lpes = index_items(lhs, assoc, spath, schema)?;
    // Live objects may hold duplicates (validation let them in once). The first occurrence
    // stands for the key; when the configuration sets that key, the duplicates collapse into
    // the merged item; otherwise all of them are kept as they are.
    let mut observed_lhs: BTreeMap<&PathElement, &'a Value> = BTreeMap::new();
    let mut lhs_order: Vec<(&PathElement, &'a Value, bool)> = Vec::new();
    for (pe, item) in lpes.iter().zip(lhs) {
        let first = !observed_lhs.contains_key(pe);
        if first {
            observed_lhs.insert(pe, item);
        }
        lhs_order.push((pe, item, first));
    }

    let shared: Vec<&PathElement> = rpes
        .iter()
        .filter(|pe| observed_lhs.contains_key(pe))
        .collect();
    let mut shared = shared.into_iter();
    let mut next_shared = shared.next();

    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    while li < lhs_order.len() || ri < rpes.len() {
        if li < lhs_order.len() {
            let (pe, item, first) = lhs_order[li];
            if !first {
                // A later duplicate: kept only when the configuration leaves the key alone.
                if !observed_rhs.contains_key(pe) {
                    out.push(item.clone());
                }
                li += 1;
                continue;
            }
            if ri < rpes.len() {
                if *pe == rpes[ri] {
                    push_merged(&mut out, Some(item), Some(&rhs[ri]), spath, schema)?;
                    li += 1;
                    ri += 1;
                    next_shared = shared.next();
                    continue;
                }
                if observed_rhs.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                    // Shared, but not the next one in the configuration's order.
                    li += 1;
                    continue;
                }
            }
            if !observed_rhs.contains_key(pe) {
                push_merged(&mut out, Some(item), None, spath, schema)?;
                li += 1;
                continue;
            }
        }
        if ri < rpes.len() {
            let pe = &rpes[ri];
            push_merged(
                &mut out,
                observed_lhs.get(pe).copied(),
                Some(&rhs[ri]),
                spath,
                schema,
            )?;
            ri += 1;
            if next_shared.is_some_and(|n| n == pe) {
                next_shared = shared.next();
            }
        } else {
            // Only shared items already merged remain on the left.
            li += 1;
        }
    }
    Ok(out)
}

fn push_merged<'a>(
    out: &mut Vec<Value>,
    l: Option<&'a Value>,
    r: Option<&'a Value>,
    spath: &mut Vec<&'a str>,
    schema: &dyn Schema,
) -> Result<(), Error> {
    if let Some(v) = merge_values(l, r, spath, schema)? {
        out.push(v);
    }
    Ok(())
}

/// Removes the object fields the configuration set to `null`: an applied `null` means "unset"
/// (upstream keeps it in the merged value and the typed conversion drops it).
pub(crate) fn drop_applied_nulls(merged: &mut Value, config: &Value, schema: &dyn Schema) {
    let mut spath = Vec::new();
    drop_nulls(merged, config, &mut spath, schema);
}

fn contains_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.values().any(contains_null),
        Value::Array(items) => items.iter().any(contains_null),
        _ => false,
    }
}

fn drop_nulls(merged: &mut Value, config: &Value, spath: &mut Vec<String>, schema: &dyn Schema) {
    match (merged, config) {
        (Value::Object(mm), Value::Object(cm)) => {
            for (k, cv) in cm {
                if cv.is_null() {
                    if mm.get(k).is_some_and(Value::is_null) {
                        mm.remove(k);
                    }
                } else if contains_null(cv)
                    && let Some(mv) = mm.get_mut(k)
                {
                    spath.push(k.clone());
                    drop_nulls(mv, cv, spath, schema);
                    spath.pop();
                }
            }
        }
        (Value::Array(ml), Value::Array(cl)) => {
            // Pair each merged item with the applied item it came from.
            let pairs: Vec<(usize, &Value)> = {
                let sp: Vec<&str> = spath.iter().map(String::as_str).collect();
                match list_assoc(&sp, schema) {
                    Some(assoc) => {
                        let applied: BTreeMap<PathElement, &Value> = cl
                            .iter()
                            .filter(|c| contains_null(c))
                            .filter_map(|c| Some((item_pe(c, &assoc, &sp, schema).ok()?, c)))
                            .collect();
                        if applied.is_empty() {
                            return;
                        }
                        ml.iter()
                            .enumerate()
                            .filter_map(|(i, item)| {
                                let pe = item_pe(item, &assoc, &sp, schema).ok()?;
                                applied.get(&pe).map(|c| (i, *c))
                            })
                            .collect()
                    }
                    // Atomic: the merged list is the applied one.
                    None => cl.iter().enumerate().collect(),
                }
            };
            for (i, c) in pairs {
                if let Some(item) = ml.get_mut(i) {
                    drop_nulls(item, c, spath, schema);
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Compare

/// What changed between two objects (`typed.Comparison`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) added: FieldSet,
    pub(crate) modified: FieldSet,
    pub(crate) removed: FieldSet,
    /// A `null` leaf compares equal to an absent one (an applied `null` where nothing is set
    /// changes nothing).
    null_is_absent: bool,
}

impl Comparison {
    pub(crate) fn exclude(&self, ignored: &FieldSet) -> Comparison {
        if ignored.is_empty() {
            return self.clone();
        }
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
            null_is_absent: self.null_is_absent,
        }
    }
}

/// Compares `lhs` (old) with `rhs` (new). Leaves that appear are added, leaves that disappear
/// removed, leaves that differ modified; objects and list items that appear or disappear whole
/// are themselves added or removed. With `null_is_absent`, a `null` leaf on one side and nothing
/// on the other is no change.
pub(crate) fn compare(
    lhs: &Value,
    rhs: &Value,
    null_is_absent: bool,
    schema: &dyn Schema,
) -> Result<Comparison, Error> {
    let mut c = Comparison {
        null_is_absent,
        ..Comparison::default()
    };
    let mut path = Vec::new();
    let mut spath = Vec::new();
    cmp(Some(lhs), Some(rhs), &mut path, &mut spath, &mut c, schema)?;
    Ok(c)
}

fn leaf_rule(l: Option<&Value>, r: Option<&Value>, path: &[PathElement], c: &mut Comparison) {
    match (l, r) {
        (None, Some(Value::Null)) | (Some(Value::Null), None) if c.null_is_absent => {}
        (None, Some(_)) => c.added.insert(path),
        (Some(_), None) => c.removed.insert(path),
        (Some(a), Some(b)) if !values_equal(a, b) => c.modified.insert(path),
        _ => {}
    }
}

fn cmp<'a>(
    l: Option<&'a Value>,
    r: Option<&'a Value>,
    path: &mut Vec<PathElement>,
    spath: &mut Vec<&'a str>,
    c: &mut Comparison,
    schema: &dyn Schema,
) -> Result<(), Error> {
    let nl = l.map(|v| classify(v, spath, schema));
    let nr = r.map(|v| classify(v, spath, schema));
    match (nl, nr) {
        (None, None) => {}
        (Some(Node::Map(lm)), Some(Node::Map(rm))) => {
            if lm.is_empty() && rm.is_empty() {
                leaf_rule(l, r, path, c);
            } else {
                cmp_children(
                    Some(Node::Map(lm)),
                    Some(Node::Map(rm)),
                    path,
                    spath,
                    c,
                    schema,
                )?;
            }
        }
        (Some(Node::List(ll, la)), Some(Node::List(rl, ra))) => {
            if ll.is_empty() && rl.is_empty() {
                leaf_rule(l, r, path, c);
            } else {
                cmp_children(
                    Some(Node::List(ll, la)),
                    Some(Node::List(rl, ra)),
                    path,
                    spath,
                    c,
                    schema,
                )?;
            }
        }
        (Some(Node::Leaf), None)
        | (None, Some(Node::Leaf))
        | (Some(Node::Leaf), Some(Node::Leaf)) => leaf_rule(l, r, path, c),
        (Some(node), None) => {
            if !node.is_empty_container() {
                cmp_children(Some(node), None, path, spath, c, schema)?;
            }
            c.removed.insert(path);
        }
        (None, Some(node)) => {
            if !node.is_empty_container() {
                cmp_children(None, Some(node), path, spath, c, schema)?;
            }
            c.added.insert(path);
        }
        (Some(ln), Some(rn)) => {
            // Different kinds: the value changed; what was below the old one went away and what
            // is below the new one arrived.
            c.modified.insert(path);
            if !matches!(ln, Node::Leaf) {
                cmp_children(Some(ln), None, path, spath, c, schema)?;
            }
            if !matches!(rn, Node::Leaf) {
                cmp_children(None, Some(rn), path, spath, c, schema)?;
            }
        }
    }
    Ok(())
}

fn cmp_children<'a>(
    l: Option<Node<'a>>,
    r: Option<Node<'a>>,
    path: &mut Vec<PathElement>,
    spath: &mut Vec<&'a str>,
    c: &mut Comparison,
    schema: &dyn Schema,
) -> Result<(), Error> {
    let is_map = matches!(l, Some(Node::Map(_))) || matches!(r, Some(Node::Map(_)));
    if is_map {
        let lm = match l {
            Some(Node::Map(m)) => Some(m),
            _ => None,
        };
        let rm = match r {
            Some(Node::Map(m)) => Some(m),
            _ => None,
        };
        let mut keys: Vec<&'a String> = Vec::new();
        if let Some(lm) = lm {
            keys.extend(lm.keys());
        }
        if let Some(rm) = rm {
            keys.extend(
                rm.keys()
                    .filter(|k| !lm.is_some_and(|lm| lm.contains_key(*k))),
            );
        }
        for k in keys {
            path.push(PathElement::Field(k.clone()));
            spath.push(k);
            cmp(
                lm.and_then(|m| m.get(k)),
                rm.and_then(|m| m.get(k)),
                path,
                spath,
                c,
                schema,
            )?;
            spath.pop();
            path.pop();
        }
        return Ok(());
    }
    let index =
        |node: &Option<Node<'a>>, spath: &[&str]| -> Result<Vec<(PathElement, &'a Value)>, Error> {
            let mut out = Vec::new();
            if let Some(Node::List(items, assoc)) = node {
                let mut seen = BTreeSet::new();
                for item in *items {
                    let pe = item_pe(item, assoc, spath, schema)?;
                    if seen.insert(pe.clone()) {
                        out.push((pe, item));
                    }
                }
            }
            Ok(out)
        };
    let litems = index(&l, spath)?;
    let ritems = index(&r, spath)?;
    let rmap: BTreeMap<&PathElement, &'a Value> = ritems.iter().map(|(p, v)| (p, *v)).collect();
    let lset: BTreeSet<&PathElement> = litems.iter().map(|(p, _)| p).collect();
    for (pe, item) in &litems {
        path.push(pe.clone());
        cmp(Some(item), rmap.get(pe).copied(), path, spath, c, schema)?;
        path.pop();
    }
    for (pe, item) in &ritems {
        if lset.contains(pe) {
            continue;
        }
        path.push(pe.clone());
        cmp(None, Some(item), path, spath, c, schema)?;
        path.pop();
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Prune

/// Removes from `v` the fields and list items that are members of `last` but not of `managed`
/// (both already closed with [`FieldSet::with_named_fields_as_members`]), whole. An object or
/// list emptied by the removal goes too (upstream leaves a null, which typed objects drop).
/// Nothing the applied configuration mentions (`mentioned`) is removed, so an explicit empty
/// value in it stays.
pub(crate) fn prune(
    v: &mut Value,
    last: &FieldSet,
    managed: &FieldSet,
    mentioned: &FieldSet,
    schema: &dyn Schema,
) {
    let mut spath = Vec::new();
    prune_node(v, last, Some(managed), Some(mentioned), &mut spath, schema);
}

fn prune_node(
    v: &mut Value,
    last: &FieldSet,
    managed: Option<&FieldSet>,
    mentioned: Option<&FieldSet>,
    spath: &mut Vec<String>,
    schema: &dyn Schema,
) {
    let assoc = {
        let sp: Vec<&str> = spath.iter().map(String::as_str).collect();
        match &*v {
            Value::Object(_) if !schema.map_is_atomic(&sp) => None,
            Value::Array(_) => match list_assoc(&sp, schema) {
                Some(a) => Some(a),
                None => return,
            },
            _ => return,
        }
    };
    let said = |pe: &PathElement| mentioned.is_some_and(|m| m.has_member(pe));
    let owned = |pe: &PathElement| managed.is_some_and(|m| m.has_member(pe)) || said(pe);
    match (v, assoc) {
        (Value::Object(m), None) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let pe = PathElement::Field(k.clone());
                if last.has_member(&pe) && !owned(&pe) {
                    m.remove(&k);
                    continue;
                }
                let Some(sub_last) = last.with_prefix(&pe) else {
                    continue;
                };
                let Some(child) = m.get_mut(&k) else {
                    continue;
                };
                let was_empty = is_empty_container(child);
                spath.push(k.clone());
                prune_node(
                    child,
                    sub_last,
                    managed.and_then(|s| s.with_prefix(&pe)),
                    mentioned.and_then(|s| s.with_prefix(&pe)),
                    spath,
                    schema,
                );
                spath.pop();
                if !was_empty && is_empty_container(child) && !said(&pe) {
                    m.remove(&k);
                }
            }
        }
        (Value::Array(items), Some(assoc)) => {
            let sp: Vec<&str> = spath.iter().map(String::as_str).collect();
            let pes: Vec<Option<PathElement>> = items
                .iter()
                .map(|item| item_pe(item, &assoc, &sp, schema).ok())
                .collect();
            let old = std::mem::take(items);
            for (mut item, pe) in old.into_iter().zip(pes) {
                if let Some(pe) = pe {
                    if last.has_member(&pe) && !owned(&pe) {
                        continue;
                    }
                    if let Some(sub_last) = last.with_prefix(&pe) {
                        let was_empty = is_empty_container(&item);
                        prune_node(
                            &mut item,
                            sub_last,
                            managed.and_then(|s| s.with_prefix(&pe)),
                            mentioned.and_then(|s| s.with_prefix(&pe)),
                            spath,
                            schema,
                        );
                        if !was_empty && is_empty_container(&item) && !said(&pe) {
                            continue;
                        }
                    }
                }
                items.push(item);
            }
        }
        _ => {}
    }
}

fn is_empty_container(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}
