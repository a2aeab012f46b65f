//! Field paths and field sets, and their `FieldsV1` wire form
//! (structured-merge-diff `fieldpath/`: `element.go`, `path.go`, `set.go`, `serialize.go`,
//! `serialize-pe.go`).

use crate::Error;
use kgc_meta::gojson;
use serde_json::{Map, Number, Value};
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;

/// One step from a value to one of its children.
///
/// The order (`Ord`) is upstream's: field names first, then list-map keys, then set values,
/// then indices; it is the order in which `FieldsV1` is written and conflicts are listed.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// `f:<name>`: a field of an object.
    Field(String),
    /// `k:{...}`: the item of a list map whose key fields have these values, sorted by name.
    Key(Vec<(String, Value)>),
    /// `v:<json>`: the item of a set list equal to this value.
    Value(Value),
    /// `i:<n>`: an item by position (only for lists that are neither sets nor maps).
    Index(usize),
}

impl PathElement {
    /// A field element.
    pub fn field(name: impl Into<String>) -> Self {
        PathElement::Field(name.into())
    }

    /// A list-map key element; the fields are sorted by name as upstream requires.
    pub fn key(fields: impl IntoIterator<Item = (String, Value)>) -> Self {
        let mut fields: Vec<(String, Value)> = fields.into_iter().collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The `FieldsV1` key for this element (`f:name`, `k:{"name":"c"}`, `v:"x"`, `i:0`).
    pub fn to_fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(name) => {
                let mut out = String::with_capacity(name.len() + 2);
                out.push_str("f:");
                out.push_str(name);
                out
            }
            PathElement::Key(fields) => {
                let mut out = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    gojson::write_json_string(&mut out, name);
                    out.push(':');
                    gojson::write_go_json(&mut out, value);
                }
                out.push('}');
                out
            }
            PathElement::Value(value) => format!("v:{}", gojson::go_json(value)),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `FieldsV1` key. `Ok(None)` for a well-formed key of a type this version does not
    /// know (upstream drops those silently).
    pub fn from_fields_v1_key(s: &str) -> Result<Option<Self>, Error> {
        let bytes = s.as_bytes();
        if bytes.len() < 2 {
            return Err(Error::InvalidFieldsV1(format!(
                "key must be 2 characters long: {s:?}"
            )));
        }
        if bytes[1] != b':' {
            return Err(Error::InvalidFieldsV1(format!("missing colon: {s}")));
        }
        let rest = &s[2..];
        let parse_json = |text: &str| -> Result<Value, Error> {
            serde_json::from_str(text).map_err(|e| {
                Error::InvalidFieldsV1(format!("parsing key as path element {s:?}: {e}"))
            })
        };
        Ok(Some(match bytes[0] {
            b'f' => PathElement::Field(rest.to_string()),
            b'v' => PathElement::Value(parse_json(rest)?),
            b'k' => match parse_json(rest)? {
                Value::Object(map) => PathElement::key(map),
                _ => {
                    return Err(Error::InvalidFieldsV1(format!(
                        "parsing key as path element {s:?}: not an object"
                    )));
                }
            },
            b'i' => PathElement::Index(rest.parse().map_err(|e| {
                Error::InvalidFieldsV1(format!("parsing key as path element {s:?}: {e}"))
            })?),
            _ => return Ok(None),
        }))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_field_lists(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// Upstream's human-readable form: `.name`, `[name="c"]`, `[="x"]`, `[0]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_str("[")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{name}={}", value_to_string(value))?;
                }
                f.write_str("]")
            }
            PathElement::Value(value) => write!(f, "[={}]", value_to_string(value)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// `value.ToString` of structured-merge-diff.
fn value_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => gojson::go_quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(value_to_string).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{k}={}", value_to_string(&map[k.as_str()])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
    }
}

fn compare_field_lists(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((an, av), (bn, bv)) in a.iter().zip(b) {
        let c = an.cmp(bn).then_with(|| compare_values(av, bv));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

fn compare_numbers(a: &Number, b: &Number) -> Ordering {
    let int = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(a), int(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => {
            let x = a.as_f64().unwrap_or(0.0);
            let y = b.as_f64().unwrap_or(0.0);
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }
}

/// The total order of structured-merge-diff's `value.Compare`: numbers (compared numerically),
/// then strings, booleans, lists, maps and finally null.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y) {
                let c = compare_values(l, r);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => compare_maps(x, y),
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => rank(a).cmp(&rank(b)),
    }
}

fn compare_maps(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    let mut xk: Vec<&String> = x.keys().collect();
    let mut yk: Vec<&String> = y.keys().collect();
    xk.sort();
    yk.sort();
    for (a, b) in xk.iter().zip(&yk) {
        let c = a
            .cmp(b)
            .then_with(|| compare_values(&x[a.as_str()], &y[b.as_str()]));
        if c != Ordering::Equal {
            return c;
        }
    }
    xk.len().cmp(&yk.len())
}

/// Deep equality with numbers compared numerically (`1` equals `1.0`), as upstream's
/// `value.Equals`.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| values_equal(v, w))
        }
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Ordering::Equal,
        _ => a == b,
    }
}

/// A path from the object root, printed as upstream prints it in conflict messages:
/// `.spec.replicas`, `.metadata.labels.app`, `.spec.containers[name="c"].image`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Path(pub Vec<PathElement>);

impl Path {
    /// A path of field names only.
    pub fn fields<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        Path(names.into_iter().map(PathElement::field).collect())
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

/// A set of field paths stored as a tree, as structured-merge-diff's `fieldpath.Set`.
///
/// A path is a *member* when it is owned itself; a node has *children* when paths below it are
/// members. Both can hold at once (`"."` in `FieldsV1`). Set operations are on member paths:
/// [`FieldSet::difference`] removes exact paths only, [`FieldSet::recursive_difference`] removes
/// whole subtrees.
///
/// Each level is one vector sorted by element (upstream keeps sorted slices too,
/// `PathElementSet` and `SetNodeMap`): every write builds, combines and drops sets, and a level
/// then costs one allocation, not the nodes of two B-trees.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    /// Sorted by element, without duplicates; every node is a member or has children.
    nodes: Vec<Node>,
}

/// One element of a level: a member, the parent of members, or both.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Node {
    pe: PathElement,
    member: bool,
    children: FieldSet,
}

impl Node {
    fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }
}

/// Where an element of two sorted levels walked side by side is.
enum Pair<A, B> {
    Left(A),
    Right(B),
    Both(A, B),
}

/// The nodes of two levels, merged in element order.
struct Join<I: Iterator, J: Iterator> {
    left: std::iter::Peekable<I>,
    right: std::iter::Peekable<J>,
}

fn join<A: Borrow<Node>, B: Borrow<Node>>(
    left: impl IntoIterator<Item = A>,
    right: impl IntoIterator<Item = B>,
) -> Join<impl Iterator<Item = A>, impl Iterator<Item = B>> {
    Join {
        left: left.into_iter().peekable(),
        right: right.into_iter().peekable(),
    }
}

impl<I, J> Iterator for Join<I, J>
where
    I: Iterator,
    J: Iterator,
    I::Item: Borrow<Node>,
    J::Item: Borrow<Node>,
{
    type Item = Pair<I::Item, J::Item>;

    fn next(&mut self) -> Option<Self::Item> {
        let order = match (self.left.peek(), self.right.peek()) {
            (None, None) => return None,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(l), Some(r)) => l.borrow().pe.cmp(&r.borrow().pe),
        };
        Some(match order {
            Ordering::Less => Pair::Left(self.left.next()?),
            Ordering::Greater => Pair::Right(self.right.next()?),
            Ordering::Equal => Pair::Both(self.left.next()?, self.right.next()?),
        })
    }
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when no path is a member.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Makes room for `n` more elements at this level.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.nodes.reserve(n);
    }

    /// The position of `pe`, or where it would go. Sets are mostly built in order, so the end
    /// is tried first.
    fn find(&self, pe: &PathElement) -> Result<usize, usize> {
        match self.nodes.last() {
            None => Err(0),
            Some(last) if last.pe < *pe => Err(self.nodes.len()),
            Some(_) => self.nodes.binary_search_by(|n| n.pe.cmp(pe)),
        }
    }

    fn get(&self, pe: &PathElement) -> Option<&Node> {
        self.find(pe).ok().map(|i| &self.nodes[i])
    }

    /// Adds `path` (ignored when empty: the root is never a member).
    pub fn insert(&mut self, path: &[PathElement]) {
        let Some((pe, rest)) = path.split_first() else {
            return;
        };
        let i = match self.find(pe) {
            Ok(i) => i,
            Err(i) => {
                self.nodes.insert(
                    i,
                    Node {
                        pe: pe.clone(),
                        member: false,
                        children: FieldSet::new(),
                    },
                );
                i
            }
        };
        let node = &mut self.nodes[i];
        if rest.is_empty() {
            node.member = true;
        } else {
            node.children.insert(rest);
        }
    }

    /// True when `path` is a member.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [pe] => self.has_member(pe),
            [pe, rest @ ..] => self.with_prefix(pe).is_some_and(|c| c.has(rest)),
        }
    }

    /// Appends `pe` (as a member when `member`) with the paths `children` below it; nothing
    /// when neither. Elements may come in any order and more than once: a level built this way
    /// is put in order by [`FieldSet::sort`] once it is complete, which keeps building it
    /// linear whatever the order of the input (a list's items, a map's keys).
    pub(crate) fn push(&mut self, pe: PathElement, member: bool, children: FieldSet) {
        if member || !children.is_empty() {
            self.nodes.push(Node {
                pe,
                member,
                children,
            });
        }
    }

    /// Orders a level built with [`FieldSet::push`] and merges its repeated elements (the first
    /// one's element is kept). The levels below must be in order already.
    pub(crate) fn sort(&mut self) {
        if self.nodes.is_sorted_by(|a, b| a.pe < b.pe) {
            return;
        }
        self.nodes.sort_by(|a, b| a.pe.cmp(&b.pe));
        self.nodes.dedup_by(|later, first| {
            let same = later.pe == first.pe;
            if same {
                first.member |= later.member;
                first.children.absorb(std::mem::take(&mut later.children));
            }
            same
        });
    }

    pub(crate) fn has_member(&self, pe: &PathElement) -> bool {
        self.get(pe).is_some_and(|n| n.member)
    }

    /// The subset below `pe`, with `pe` stripped from the paths.
    pub fn with_prefix(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.get(pe).map(|n| &n.children).filter(|c| !c.is_empty())
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        // Copy the larger side once, then merge the smaller one in.
        let (big, small) = if self.len() >= other.len() {
            (self, other)
        } else {
            (other, self)
        };
        let mut out = big.clone();
        out.union_in_place(small);
        out
    }

    /// [`FieldSet::union`] of two sets the caller gives away (no copy).
    pub(crate) fn union_owned(self, other: FieldSet) -> FieldSet {
        if other.is_empty() {
            return self;
        }
        if self.is_empty() {
            return other;
        }
        let (mut big, small) = if self.len() >= other.len() {
            (self, other)
        } else {
            (other, self)
        };
        big.absorb(small);
        big
    }

    /// Adds the paths of `other`; where both have an element, this set's is kept.
    pub(crate) fn union_in_place(&mut self, other: &FieldSet) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            self.clone_from(other);
            return;
        }
        let mine = std::mem::take(&mut self.nodes);
        self.nodes.reserve(mine.len() + other.nodes.len());
        for pair in join(mine, &other.nodes) {
            self.nodes.push(match pair {
                Pair::Left(n) => n,
                Pair::Right(n) => n.clone(),
                Pair::Both(mut n, o) => {
                    n.member |= o.member;
                    n.children.union_in_place(&o.children);
                    n
                }
            });
        }
    }

    /// [`FieldSet::union_in_place`] that moves `other`'s nodes instead of copying them.
    pub(crate) fn absorb(&mut self, other: FieldSet) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other;
            return;
        }
        let mine = std::mem::take(&mut self.nodes);
        self.nodes.reserve(mine.len() + other.nodes.len());
        for pair in join(mine, other.nodes) {
            self.nodes.push(match pair {
                Pair::Left(n) | Pair::Right(n) => n,
                Pair::Both(mut n, o) => {
                    n.member |= o.member;
                    n.children.absorb(o.children);
                    n
                }
            });
        }
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for pair in join(&self.nodes, &other.nodes) {
            if let Pair::Both(n, o) = pair {
                let children = n.children.intersection(&o.children);
                let member = n.member && o.member;
                if member || !children.is_empty() {
                    out.nodes.push(Node {
                        pe: n.pe.clone(),
                        member,
                        children,
                    });
                }
            }
        }
        out
    }

    /// Paths of `self` that are not paths of `other` (exact paths: a member of `other` does not
    /// remove the paths below it).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.difference_in_place(other);
        out
    }

    /// [`FieldSet::difference`] in place: only the nodes `other` reaches are visited.
    pub(crate) fn difference_in_place(&mut self, other: &FieldSet) {
        self.remove(other, false);
    }

    /// Like [`FieldSet::difference`], but a member of `other` also removes every path below it.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.recursive_difference_in_place(other);
        out
    }

    /// [`FieldSet::recursive_difference`] in place.
    pub(crate) fn recursive_difference_in_place(&mut self, other: &FieldSet) {
        self.remove(other, true);
    }

    fn remove(&mut self, other: &FieldSet, subtrees: bool) {
        if self.is_empty() {
            return;
        }
        let mut emptied = false;
        for o in &other.nodes {
            let Ok(i) = self.find(&o.pe) else {
                continue;
            };
            let n = &mut self.nodes[i];
            if o.member {
                n.member = false;
                if subtrees {
                    n.children = FieldSet::new();
                }
            }
            n.children.remove(&o.children, subtrees);
            emptied |= n.is_empty();
        }
        if emptied {
            self.nodes.retain(|n| !n.is_empty());
        }
    }

    /// Adds as members the object fields that only have members below them (upstream's
    /// `EnsureNamedFieldsAreMembers`, with every object treated as a struct). Pruning uses it so
    /// that a field is removed whole once nothing below it is owned.
    pub(crate) fn with_named_fields_as_members(&self) -> FieldSet {
        let mut out = self.clone();
        out.name_fields_as_members();
        out
    }

    fn name_fields_as_members(&mut self) {
        for n in &mut self.nodes {
            if !n.children.is_empty() {
                n.member |= matches!(n.pe, PathElement::Field(_));
                n.children.name_fields_as_members();
            }
        }
    }

    /// Every member path, in upstream's iteration order (at each level the members, then the
    /// children, both sorted).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect_paths(&mut prefix, &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for n in self.nodes.iter().filter(|n| n.member) {
            prefix.push(n.pe.clone());
            out.push(Path(prefix.clone()));
            prefix.pop();
        }
        for n in self.nodes.iter().filter(|n| !n.children.is_empty()) {
            prefix.push(n.pe.clone());
            n.children.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Number of member paths.
    pub fn len(&self) -> usize {
        self.nodes
            .iter()
            .map(|n| usize::from(n.member) + n.children.len())
            .sum()
    }

    /// Parses the `fieldsV1` of a managedFields entry.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, Error> {
        match v {
            Value::Object(map) => Ok(read_node(map)?.0.unwrap_or_default()),
            Value::Null => Ok(FieldSet::new()),
            _ => Err(Error::InvalidFieldsV1("fieldsV1 must be an object".into())),
        }
    }

    /// The `fieldsV1` value. Keys are inserted in upstream's order (`.` last); with serde_json's
    /// default sorted maps they come out sorted instead, which parses to the same set.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.node_to_map(false))
    }

    fn node_to_map(&self, include_self: bool) -> Map<String, Value> {
        let mut map = Map::new();
        for n in &self.nodes {
            map.insert(
                n.pe.to_fields_v1_key(),
                Value::Object(n.children.node_to_map(n.member)),
            );
        }
        if include_self && !map.is_empty() {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        map
    }

    /// The exact bytes upstream writes for this set.
    pub fn to_fields_v1_string(&self) -> String {
        let mut out = String::new();
        self.write_node(&mut out, false);
        out
    }

    fn write_node(&self, out: &mut String, include_self: bool) {
        out.push('{');
        for (i, n) in self.nodes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            gojson::write_json_string(out, &n.pe.to_fields_v1_key());
            out.push(':');
            n.children.write_node(out, n.member);
        }
        if include_self && !self.nodes.is_empty() {
            out.push_str(",\".\":{}");
        }
        out.push('}');
    }
}

/// Reads one `FieldsV1` node: its children (None when it has none) and whether the node itself
/// is a member (`"."`, or no children at all).
fn read_node(map: &Map<String, Value>) -> Result<(Option<FieldSet>, bool), Error> {
    let mut children: Option<FieldSet> = None;
    let mut is_member = false;
    for (key, value) in map {
        if key == "." {
            is_member = true;
            continue;
        }
        let Some(pe) = PathElement::from_fields_v1_key(key)? else {
            continue;
        };
        let Value::Object(child_map) = value else {
            return Err(Error::InvalidFieldsV1(format!(
                "the value of {key:?} must be an object"
            )));
        };
        let (grandchildren, child_is_member) = read_node(child_map)?;
        children
            .get_or_insert_with(|| FieldSet {
                nodes: Vec::with_capacity(map.len()),
            })
            .push(pe, child_is_member, grandchildren.unwrap_or_default());
    }
    match &mut children {
        // Keys are in text order, which is not the elements' order (`i:10` and `i:9`).
        Some(c) => c.sort(),
        None => is_member = true,
    }
    Ok((children, is_member))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(s: &str) -> PathElement {
        PathElement::field(s)
    }

    #[test]
    fn round_trips_upstream_bytes() {
        let text = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{}}}}}"#;
        let set = FieldSet::from_fields_v1(&serde_json::from_str(text).unwrap()).unwrap();
        // Upstream writes "." after the other keys of a node.
        assert_eq!(
            set.to_fields_v1_string(),
            r#"{"f:metadata":{"f:labels":{"f:app":{},".":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{"f:image":{},"f:name":{},".":{}}}}}"#
        );
        assert!(set.has(&[f("metadata"), f("labels")]));
        assert!(!set.has(&[f("metadata")]));
        let again =
            FieldSet::from_fields_v1(&serde_json::from_str(&set.to_fields_v1_string()).unwrap())
                .unwrap();
        assert_eq!(again, set);
        assert_eq!(FieldSet::from_fields_v1(&set.to_fields_v1()).unwrap(), set);
    }

    #[test]
    fn element_order_and_printing() {
        let k = PathElement::key([("name".to_string(), json!("c"))]);
        let v = PathElement::Value(json!("x"));
        let i = PathElement::Index(2);
        let mut all = vec![i.clone(), v.clone(), k.clone(), f("z"), f("a")];
        all.sort();
        assert_eq!(all, vec![f("a"), f("z"), k.clone(), v.clone(), i.clone()]);
        let p = Path(vec![f("spec"), f("containers"), k, f("image")]);
        assert_eq!(p.to_string(), r#".spec.containers[name="c"].image"#);
        assert_eq!(
            Path(vec![f("metadata"), f("finalizers"), v]).to_string(),
            r#".metadata.finalizers[="x"]"#
        );
        assert_eq!(Path(vec![f("a"), i]).to_string(), ".a[2]");
    }

    #[test]
    fn key_fields_are_sorted_and_serialized_compactly() {
        let k = PathElement::key([
            ("protocol".to_string(), json!("TCP")),
            ("containerPort".to_string(), json!(80)),
        ]);
        assert_eq!(
            k.to_fields_v1_key(),
            r#"k:{"containerPort":80,"protocol":"TCP"}"#
        );
        assert_eq!(
            PathElement::from_fields_v1_key(r#"k:{"protocol":"TCP","containerPort":80}"#)
                .unwrap()
                .unwrap(),
            k
        );
        assert_eq!(k.to_string(), r#"[containerPort=80,protocol="TCP"]"#);
    }

    #[test]
    fn set_operations() {
        let mut a = FieldSet::new();
        a.insert(&[f("a")]);
        a.insert(&[f("b"), f("c")]);
        a.insert(&[f("b"), f("d")]);
        let mut b = FieldSet::new();
        b.insert(&[f("b")]);
        b.insert(&[f("b"), f("c")]);
        assert_eq!(a.difference(&b).paths().len(), 2);
        assert_eq!(
            a.recursive_difference(&b).paths(),
            vec![Path::fields(["a"])]
        );
        assert_eq!(a.intersection(&b).paths(), vec![Path::fields(["b", "c"])]);
        assert_eq!(a.union(&b).len(), 4);
        let named = a.with_named_fields_as_members();
        assert!(named.has(&[f("b")]));
        assert!(a.difference(&a).is_empty());
    }

    #[test]
    fn keys_out_of_element_order_are_ordered_and_merged() {
        // Text order puts i:10 before i:9 and v:-1 before v:-3; the same element twice merges.
        let v = json!({"i:10": {}, "i:9": {"f:a": {}}, "v:-1": {}, "v:-3": {},
                       "k:{\"b\":1,\"a\":2}": {"f:x": {}}, "k:{\"a\":2,\"b\":1}": {".": {}, "f:y": {}}});
        let set = FieldSet::from_fields_v1(&v).unwrap();
        assert_eq!(
            set.paths().iter().map(Path::to_string).collect::<Vec<_>>(),
            [
                "[a=2,b=1]",
                "[=-3]",
                "[=-1]",
                "[10]",
                "[a=2,b=1].x",
                "[a=2,b=1].y",
                "[9].a"
            ]
        );
        assert_eq!(
            set.to_fields_v1_string(),
            r#"{"k:{\"a\":2,\"b\":1}":{"f:x":{},"f:y":{},".":{}},"v:-3":{},"v:-1":{},"i:9":{"f:a":{}},"i:10":{}}"#
        );
    }

    #[test]
    fn rejects_malformed_keys_and_skips_unknown_ones() {
        assert!(FieldSet::from_fields_v1(&json!({"x": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"fo": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"k:[1]": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
        let s = FieldSet::from_fields_v1(&json!({"z:whatever": {}, "f:a": {}})).unwrap();
        assert_eq!(s.paths(), vec![Path::fields(["a"])]);
    }
}
