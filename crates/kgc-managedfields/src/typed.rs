//! Schema-aware walks over JSON objects (structured-merge-diff `typed/`: `tofieldset.go`,
//! `merge.go`, `compare.go`, `remove.go`).

use crate::fieldpath::values_equal;
use crate::{Error, FieldSet, ListType, PathElement, Schema};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

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
                    node.push(pe, true, FieldSet::new());
                } else {
                    let mut sub = FieldSet::new();
                    tfs(child, &mut sub, spath, schema, strict, all)?;
                    node.push(pe, all, sub);
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
                let mut sub = FieldSet::new();
                if !duplicated {
                    tfs(item, &mut sub, spath, schema, strict, all)?;
                }
                node.push(pe.clone(), true, sub);
            }
        }
    }
    node.sort();
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

/// What changed between two objects (`typed.Comparison`); while comparing, what changed below
/// one node, as paths relative to it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) added: FieldSet,
    pub(crate) modified: FieldSet,
    pub(crate) removed: FieldSet,
}

/// How a node itself changed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Change {
    Added,
    Modified,
    Removed,
}

impl Comparison {
    /// Drops every change at or below a member of `ignored`.
    pub(crate) fn exclude(&mut self, ignored: &FieldSet) {
        if ignored.is_empty() {
            return;
        }
        for set in [&mut self.added, &mut self.modified, &mut self.removed] {
            set.recursive_difference_in_place(ignored);
        }
    }

    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// Records the child `pe`: its own change and the changes below it. The levels are put in
    /// order by [`Comparison::sort`] once every child is recorded.
    fn put(&mut self, pe: PathElement, own: Option<Change>, below: Comparison) {
        if below.is_empty() {
            // A leaf (or an emptied container): one set, nothing below.
            if let Some(change) = own {
                self.set_mut(change).push(pe, true, FieldSet::new());
            }
            return;
        }
        let parts = [
            (Change::Added, below.added),
            (Change::Modified, below.modified),
            (Change::Removed, below.removed),
        ];
        let mut uses = parts
            .iter()
            .filter(|(change, children)| own == Some(*change) || !children.is_empty())
            .count();
        let mut pe = Some(pe);
        for (change, children) in parts {
            let member = own == Some(change);
            if !member && children.is_empty() {
                continue;
            }
            uses -= 1;
            // The element is moved into the last set that needs it.
            let element = if uses == 0 { pe.take() } else { pe.clone() };
            if let Some(element) = element {
                self.set_mut(change).push(element, member, children);
            }
        }
    }

    fn sort(&mut self) {
        for set in [&mut self.added, &mut self.modified, &mut self.removed] {
            set.sort();
        }
    }

    fn set_mut(&mut self, change: Change) -> &mut FieldSet {
        match change {
            Change::Added => &mut self.added,
            Change::Modified => &mut self.modified,
            Change::Removed => &mut self.removed,
        }
    }
}

/// Compares `lhs` (old) with `rhs` (new). Leaves that appear are added, leaves that disappear
/// removed, leaves that differ modified; objects and list items that appear or disappear whole
/// are themselves added or removed. With `null_is_absent`, a `null` leaf on one side and nothing
/// on the other is no change. `metadata.managedFields` is not compared: it is never part of
/// the objects upstream compares.
pub(crate) fn compare<'a>(
    lhs: &'a Value,
    rhs: &'a Value,
    null_is_absent: bool,
    schema: &dyn Schema,
) -> Result<Comparison, Error> {
    let metadata = |v: &'a Value| match v.get("metadata") {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    };
    let cx = Cx {
        schema,
        null_is_absent,
        metadata: [metadata(lhs), metadata(rhs)],
    };
    let mut c = Comparison::default();
    let mut spath = Vec::new();
    cmp(Some(lhs), Some(rhs), &mut spath, &cx, &mut c)?;
    c.sort();
    Ok(c)
}

/// What stays the same during one comparison.
struct Cx<'s> {
    schema: &'s dyn Schema,
    null_is_absent: bool,
    /// The `metadata` maps of the two objects, whose `managedFields` are skipped.
    metadata: [Option<&'s Map<String, Value>>; 2],
}

impl Cx<'_> {
    /// The value of `k` in `m`, unless it is the skipped `metadata.managedFields`.
    fn field<'a>(&self, m: &'a Map<String, Value>, k: &str) -> Option<&'a Value> {
        if self.hides_in(m) == Some(k) {
            return None;
        }
        m.get(k)
    }

    /// The field of `m` that is skipped: `managedFields` when `m` is an object's `metadata`.
    fn hides_in(&self, m: &Map<String, Value>) -> Option<&'static str> {
        self.metadata
            .iter()
            .any(|p| p.is_some_and(|p| std::ptr::eq(p, m)))
            .then_some("managedFields")
    }
}

fn leaf_rule(l: Option<&Value>, r: Option<&Value>, null_is_absent: bool) -> Option<Change> {
    match (l, r) {
        (None, Some(Value::Null)) | (Some(Value::Null), None) if null_is_absent => None,
        (None, Some(_)) => Some(Change::Added),
        (Some(_), None) => Some(Change::Removed),
        (Some(a), Some(b)) if !values_equal(a, b) => Some(Change::Modified),
        _ => None,
    }
}

/// Compares one node: records the changes below it in `below` and returns its own.
fn cmp<'a>(
    l: Option<&'a Value>,
    r: Option<&'a Value>,
    spath: &mut Vec<&'a str>,
    cx: &Cx,
    below: &mut Comparison,
) -> Result<Option<Change>, Error> {
    let nl = l.map(|v| classify(v, spath, cx.schema));
    let nr = r.map(|v| classify(v, spath, cx.schema));
    Ok(match (nl, nr) {
        (None, None) => None,
        (Some(Node::Map(lm)), Some(Node::Map(rm))) => {
            if lm.is_empty() && rm.is_empty() {
                leaf_rule(l, r, cx.null_is_absent)
            } else {
                cmp_children(Some(Node::Map(lm)), Some(Node::Map(rm)), spath, cx, below)?;
                None
            }
        }
        (Some(Node::List(ll, la)), Some(Node::List(rl, ra))) => {
            if ll.is_empty() && rl.is_empty() {
                leaf_rule(l, r, cx.null_is_absent)
            } else {
                cmp_children(
                    Some(Node::List(ll, la)),
                    Some(Node::List(rl, ra)),
                    spath,
                    cx,
                    below,
                )?;
                None
            }
        }
        (Some(Node::Leaf), None)
        | (None, Some(Node::Leaf))
        | (Some(Node::Leaf), Some(Node::Leaf)) => leaf_rule(l, r, cx.null_is_absent),
        (Some(node), None) => {
            if !node.is_empty_container() {
                cmp_children(Some(node), None, spath, cx, below)?;
            }
            Some(Change::Removed)
        }
        (None, Some(node)) => {
            if !node.is_empty_container() {
                cmp_children(None, Some(node), spath, cx, below)?;
            }
            Some(Change::Added)
        }
        (Some(ln), Some(rn)) => {
            // Different kinds: the value changed; what was below the old one went away and what
            // is below the new one arrived.
            if !matches!(ln, Node::Leaf) {
                cmp_children(Some(ln), None, spath, cx, below)?;
            }
            if !matches!(rn, Node::Leaf) {
                cmp_children(None, Some(rn), spath, cx, below)?;
            }
            Some(Change::Modified)
        }
    })
}

fn cmp_children<'a>(
    l: Option<Node<'a>>,
    r: Option<Node<'a>>,
    spath: &mut Vec<&'a str>,
    cx: &Cx,
    below: &mut Comparison,
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
        // A side that is gone or new whole puts all its fields in one set.
        match (lm, rm) {
            (Some(lm), None) => below.removed.reserve(lm.len()),
            (None, Some(rm)) => below.added.reserve(rm.len()),
            _ => {}
        }
        // The old object's fields first, then the new object's other ones.
        if let Some(lm) = lm {
            let hidden = cx.hides_in(lm);
            for (k, lv) in lm {
                if hidden != Some(k) {
                    let rv = rm.and_then(|m| cx.field(m, k));
                    cmp_child(Child::Field(k), Some(lv), rv, spath, cx, below)?;
                }
            }
        }
        if let Some(rm) = rm {
            let hidden = cx.hides_in(rm);
            for (k, rv) in rm {
                if hidden != Some(k) && lm.and_then(|m| cx.field(m, k)).is_none() {
                    cmp_child(Child::Field(k), None, Some(rv), spath, cx, below)?;
                }
            }
        }
        return Ok(());
    }
    let litems = ListIndex::new(l.as_ref(), spath, cx.schema)?;
    let mut ritems = ListIndex::new(r.as_ref(), spath, cx.schema)?;
    // The old list's items first (with their new version), then the new list's other ones.
    for (pe, _, first) in &mut ritems.items {
        *first = *first && litems.get(pe).is_none();
    }
    for (pe, item, first) in litems.items {
        if first {
            let r = ritems.get(&pe);
            cmp_child(Child::Item(pe), Some(item), r, spath, cx, below)?;
        }
    }
    for (pe, item, first) in ritems.items {
        if first {
            cmp_child(Child::Item(pe), None, Some(item), spath, cx, below)?;
        }
    }
    Ok(())
}

/// A child of a compared node.
enum Child<'a> {
    /// An object field: a step of the schema path; its element is made only when it changed.
    Field(&'a str),
    /// A list item.
    Item(PathElement),
}

/// Compares one child and records its changes in `below`.
fn cmp_child<'a>(
    child: Child<'a>,
    l: Option<&'a Value>,
    r: Option<&'a Value>,
    spath: &mut Vec<&'a str>,
    cx: &Cx,
    below: &mut Comparison,
) -> Result<(), Error> {
    let mut sub = Comparison::default();
    let own = match child {
        Child::Field(k) => {
            spath.push(k);
            let own = cmp(l, r, spath, cx, &mut sub)?;
            spath.pop();
            own
        }
        Child::Item(_) => cmp(l, r, spath, cx, &mut sub)?,
    };
    sub.sort();
    if own.is_some() || !sub.is_empty() {
        let pe = match child {
            Child::Field(k) => PathElement::field(k),
            Child::Item(pe) => pe,
        };
        below.put(pe, own, sub);
    }
    Ok(())
}

/// The items of a list by path element, with a sorted index to look elements up. Only the
/// first item of an element counts: later duplicates are skipped.
struct ListIndex<'a> {
    /// In list order: the element, the item, and whether it is the first of its element.
    items: Vec<(PathElement, &'a Value, bool)>,
    /// Positions of the first items, sorted by element.
    sorted: Vec<usize>,
}

impl<'a> ListIndex<'a> {
    fn new(node: Option<&Node<'a>>, spath: &[&str], schema: &dyn Schema) -> Result<Self, Error> {
        let mut index = ListIndex {
            items: Vec::new(),
            sorted: Vec::new(),
        };
        let Some(Node::List(items, assoc)) = node else {
            return Ok(index);
        };
        index.items.reserve(items.len());
        for item in *items {
            index
                .items
                .push((item_pe(item, assoc, spath, schema)?, item, true));
        }
        // A stable sort keeps equal elements in list order: all but the first are duplicates.
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by(|&a, &b| index.items[a].0.cmp(&index.items[b].0));
        let mut last: Option<usize> = None;
        for i in order {
            if last.is_some_and(|l| index.items[l].0 == index.items[i].0) {
                index.items[i].2 = false;
            } else {
                index.sorted.push(i);
                last = Some(i);
            }
        }
        Ok(index)
    }

    fn get(&self, pe: &PathElement) -> Option<&'a Value> {
        let i = self
            .sorted
            .binary_search_by(|&i| self.items[i].0.cmp(pe))
            .ok()?;
        Some(self.items[self.sorted[i]].1)
    }
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
