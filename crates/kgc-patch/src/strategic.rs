//! Strategic merge patch (`application/strategic-merge-patch+json`), server side.
//!
//! Behaviour follows kubernetes/apimachinery `pkg/util/strategicpatch/patch.go`
//! (`StrategicMergeMapPatchUsingLookupPatchMeta` with `MergeParallelList=true` and
//! `IgnoreUnmatchedNulls=true`, i.e. `mergeMap`, `mergePatchIntoOriginal`, `mergeSlice`,
//! `normalizeElementOrder` and friends), re-implemented over `serde_json::Value` from the
//! description of that code rather than translated from it. The patch metadata that upstream reads
//! from Go struct tags (`patchStrategy`, `patchMergeKey`, see `meta.go`/`types.go`) lives in a
//! static table here ([`Fields`], [`FieldMeta`]); the built-in kinds are in `strategic/table.rs`.
//!
//! Deliberate differences from upstream, all on inputs kubectl never produces:
//! - fields missing from the table merge like JSON merge patch (maps recurse, lists replace)
//!   where upstream's struct lookup fails with "unable to find api field";
//! - values taken verbatim from the patch (new fields, new list items, replaced lists) are
//!   stripped of every directive (`$patch` items, `$retainKeys`, `$setElementOrder/…`,
//!   `$deleteFromPrimitiveList/…`) and of `null` map entries; a `{"$patch":"replace",…}` map
//!   whose field is absent from the object keeps its content (upstream drops the field);
//! - `$deleteFromPrimitiveList/<f>` always removes values from a list of scalars (upstream
//!   replaces the list when `<f>` has no merge strategy), and is refused on lists of maps;
//! - an unknown `$patch` value is refused everywhere (upstream silently drops it inside values
//!   it takes verbatim);
//! - a list absent from the object whose patch items are all directives (e.g. the garbage
//!   collector's `ownerReferences: [{"$patch":"delete",…}]`) is not added as `[]`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::{Map, Number, Value};

mod table;

pub use table::schema_for;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER_PREFIX: &str = "$setElementOrder";
const DELETE_PRIMITIVE_PREFIX: &str = "$deleteFromPrimitiveList";

/// The `patchStrategy` of a field (upstream struct tag `patchStrategy:"…"`), minus `retainKeys`,
/// which [`FieldMeta`] carries separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// No tag: maps merge recursively, lists are replaced by the patch's list.
    Default,
    /// `merge`: lists merge (by `patchMergeKey` for lists of maps, as an ordered set for lists of
    /// scalars); maps merge recursively.
    Merge,
    /// `replace`: the patch's value replaces the object's value, maps included.
    Replace,
}

/// Patch metadata of one field: how lists/maps under it merge, and the metadata of the struct
/// it holds (the struct of its items, for lists).
#[derive(Clone, Copy, Debug)]
pub struct FieldMeta {
    strategy: Strategy,
    merge_key: Option<&'static str>,
    retain_keys: bool,
    child: &'static Fields,
}

impl FieldMeta {
    /// A field without strategy whose value is a struct described by `child`.
    pub const fn object(child: &'static Fields) -> Self {
        FieldMeta {
            strategy: Strategy::Default,
            merge_key: None,
            retain_keys: false,
            child,
        }
    }

    /// `patchStrategy:"merge" patchMergeKey:"<key>"`: a list of structs (described by `child`)
    /// merged by the value of `key`.
    pub const fn merge_list(key: &'static str, child: &'static Fields) -> Self {
        FieldMeta {
            strategy: Strategy::Merge,
            merge_key: Some(key),
            retain_keys: false,
            child,
        }
    }

    /// `patchStrategy:"merge"` on a list of scalars: an ordered, de-duplicated union.
    pub const fn merge_set() -> Self {
        FieldMeta {
            strategy: Strategy::Merge,
            merge_key: None,
            retain_keys: false,
            child: &EMPTY,
        }
    }

    /// `patchStrategy:"replace"`: the patch's value replaces the whole value, maps included.
    pub const fn replace() -> Self {
        FieldMeta {
            strategy: Strategy::Replace,
            merge_key: None,
            retain_keys: false,
            child: &EMPTY,
        }
    }

    /// Adds `retainKeys` to the strategy (`patchStrategy:"retainKeys"` or `"merge,retainKeys"`).
    /// Server side this changes nothing by itself: clients send `$retainKeys` for such fields.
    pub const fn retain_keys(self) -> Self {
        FieldMeta {
            retain_keys: true,
            ..self
        }
    }

    /// The field's strategy.
    pub const fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The field's `patchMergeKey`, if any.
    pub const fn merge_key(&self) -> Option<&'static str> {
        self.merge_key
    }

    /// Whether the field's strategy includes `retainKeys`.
    pub const fn has_retain_keys(&self) -> bool {
        self.retain_keys
    }

    /// The metadata of the struct this field holds (of its items, for lists), so callers can
    /// walk a kind's table by path (server-side apply derives list types from it).
    pub const fn child(&self) -> Schema {
        Schema(self.child)
    }

    const NONE: FieldMeta = FieldMeta::object(&EMPTY);
}

/// The patch metadata of one struct: its fields that have a strategy or lead to one. Fields not
/// listed have no strategy and no metadata below them.
#[derive(Debug)]
pub struct Fields {
    fields: &'static [(&'static str, FieldMeta)],
}

impl Fields {
    /// Builds a struct's metadata from `(json field name, metadata)` pairs.
    pub const fn new(fields: &'static [(&'static str, FieldMeta)]) -> Self {
        Fields { fields }
    }

    fn get(&self, name: &str) -> FieldMeta {
        self.fields
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(FieldMeta::NONE, |(_, m)| *m)
    }
}

/// A struct with no metadata at all (every field merges like JSON merge patch).
pub static EMPTY: Fields = Fields::new(&[]);

/// The patch metadata of a whole kind: a cheap handle into a static table.
#[derive(Clone, Copy, Debug)]
pub struct Schema(&'static Fields);

impl Schema {
    /// A schema rooted at `root`. The built-in kinds come from [`schema_for`]; tests and other
    /// callers can describe their own types with [`Fields`] and [`FieldMeta`].
    pub const fn new(root: &'static Fields) -> Self {
        Schema(root)
    }

    /// The metadata of a top-level field.
    pub fn field(&self, name: &str) -> FieldMeta {
        self.0.get(name)
    }
}

/// Applies a strategic merge patch to `original`, returning the merged object.
///
/// This is upstream's `StrategicMergeMapPatchUsingLookupPatchMeta` with `MergeParallelList=true`
/// and `IgnoreUnmatchedNulls=true`. The patch must be a JSON object; so must `original` (`null`
/// counts as `{}`).
pub fn apply(original: &Value, patch: &Value, schema: Schema) -> Result<Value, crate::Error> {
    if !patch.is_object() {
        return Err(crate::Error::NotAnObject(crate::type_name(patch)));
    }
    apply_owned(original.clone(), patch, schema)
}

/// [`apply`] on an object the caller owns, saving the copy of `original` (on a large object
/// the copy costs more than the merge itself).
pub fn apply_owned(original: Value, patch: &Value, schema: Schema) -> Result<Value, crate::Error> {
    let Value::Object(patch) = patch else {
        return Err(crate::Error::NotAnObject(crate::type_name(patch)));
    };
    let mut out = match original {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => {
            return Err(crate::Error::StrategicInapplicable {
                field: ".".to_owned(),
                reason: format!(
                    "the object is {}, not a JSON object",
                    crate::type_name(&other)
                ),
            });
        }
    };
    merge_map(&mut out, patch, schema.0).map_err(SmpError::into_error)?;
    Ok(Value::Object(out))
}

// ---------------------------------------------------------------------------------------------
// Errors. The path is collected while unwinding, so the success path never builds it.

#[derive(Debug)]
struct SmpError {
    malformed: bool,
    reason: String,
    /// Path segments, innermost first.
    path: Vec<String>,
}

type R<T> = Result<T, SmpError>;

fn malformed(reason: impl Into<String>) -> SmpError {
    SmpError {
        malformed: true,
        reason: reason.into(),
        path: Vec::new(),
    }
}

fn inapplicable(reason: impl Into<String>) -> SmpError {
    SmpError {
        malformed: false,
        reason: reason.into(),
        path: Vec::new(),
    }
}

impl SmpError {
    fn into_error(self) -> crate::Error {
        let mut field = String::new();
        for seg in self.path.iter().rev() {
            if !field.is_empty() && !seg.starts_with('[') {
                field.push('.');
            }
            field.push_str(seg);
        }
        if field.is_empty() {
            field.push('.');
        }
        if self.malformed {
            crate::Error::StrategicMalformed {
                field,
                reason: self.reason,
            }
        } else {
            crate::Error::StrategicInapplicable {
                field,
                reason: self.reason,
            }
        }
    }
}

trait At<T> {
    fn at(self, seg: impl FnOnce() -> String) -> R<T>;
}

impl<T> At<T> for R<T> {
    fn at(self, seg: impl FnOnce() -> String) -> R<T> {
        self.map_err(|mut e| {
            e.path.push(seg());
            e
        })
    }
}

/// upstream `mergepatch.ErrNoMergeKey`: "map: %v does not contain declared merge key: %s".
fn no_merge_key(m: &Map<String, Value>, key: &str, is_patch: bool) -> SmpError {
    let reason = format!(
        "map: {} does not contain declared merge key: {key}",
        Value::Object(m.clone())
    );
    if is_patch {
        malformed(reason)
    } else {
        inapplicable(reason)
    }
}

fn bad_patch_type(directive: &Value) -> SmpError {
    malformed(format!(
        "unknown patch type: {directive} (expected \"replace\" or \"delete\")"
    ))
}

// ---------------------------------------------------------------------------------------------
// mergeMap

/// Merges `patch` into `orig` in place (upstream `mergeMap`).
fn merge_map(orig: &mut Map<String, Value>, patch: &Map<String, Value>, fields: &Fields) -> R<()> {
    // 1. `$patch` on a map: replace or delete the whole map.
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                *orig = clean_map(patch)?;
                Ok(())
            }
            Some("delete") => {
                orig.clear();
                Ok(())
            }
            _ => Err(bad_patch_type(directive)).at(|| DIRECTIVE.to_owned()),
        };
    }

    // 2. `$retainKeys`: clear the object's keys missing from the list (applyRetainKeysDirective).
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let Value::Array(list) = retain else {
            return Err(malformed("invalid patch format of retainKeys: not a list"))
                .at(|| RETAIN_KEYS.to_owned());
        };
        let keep = |k: &str| list.iter().any(|x| x.as_str() == Some(k));
        for (k, v) in patch {
            if k == RETAIN_KEYS
                || v.is_null()
                || k.starts_with(DELETE_PRIMITIVE_PREFIX)
                || k.starts_with(SET_ORDER_PREFIX)
            {
                continue;
            }
            if !keep(k) {
                return Err(malformed(format!(
                    "invalid patch format of retainKeys: the patch sets {k:?}, which is not in the $retainKeys list"
                )))
                .at(|| k.clone());
            }
        }
        orig.retain(|k, _| keep(k));
    }

    // 3. `$setElementOrder/<list>`: merge that list now, then enforce the order
    //    (mergePatchIntoOriginal).
    let mut ordered: Vec<&str> = Vec::new();
    for (key, order) in patch {
        if !key.starts_with(SET_ORDER_PREFIX) {
            continue;
        }
        let field = extract_key(key, SET_ORDER_PREFIX)?;
        let Value::Array(order) = order else {
            return Err(malformed(
                "invalid patch format of setElementOrder list: not a list",
            ))
            .at(|| key.clone());
        };
        merge_with_element_order(orig, patch, field, order, fields.get(field))
            .at(|| field.to_owned())?;
        ordered.push(field);
    }

    // 4. Every other key. Parallel deletion lists go last, after the lists they apply to.
    for deletions in [false, true] {
        for (key, patch_v) in patch {
            if key == RETAIN_KEYS || key.starts_with(SET_ORDER_PREFIX) {
                continue;
            }
            let is_delete_list = key.starts_with(DELETE_PRIMITIVE_PREFIX);
            if is_delete_list != deletions {
                continue;
            }
            let field = if is_delete_list {
                extract_key(key, DELETE_PRIMITIVE_PREFIX)?
            } else {
                key.as_str()
            };
            if !is_delete_list && ordered.contains(&field) {
                continue;
            }
            merge_field(orig, field, patch_v, fields.get(field), is_delete_list)
                .at(|| field.to_owned())?;
        }
    }
    Ok(())
}

/// The body of upstream `mergeMap`'s loop for one key.
fn merge_field(
    orig: &mut Map<String, Value>,
    field: &str,
    patch_v: &Value,
    meta: FieldMeta,
    is_delete_list: bool,
) -> R<()> {
    // `null` deletes the key.
    if patch_v.is_null() {
        orig.remove(field);
        return Ok(());
    }
    if is_delete_list && !patch_v.is_array() {
        return Err(malformed(
            "invalid patch format of primitive list: $deleteFromPrimitiveList needs a list",
        ));
    }
    let Some(orig_v) = orig.get_mut(field) else {
        if !is_delete_list {
            match clean(patch_v)? {
                // A list made only of directives (the garbage collector's
                // `ownerReferences: [{"$patch":"delete",…}]` on an object without owners) adds
                // nothing, rather than an empty list.
                Some(Value::Array(a))
                    if a.is_empty() && patch_v.as_array().is_some_and(|p| !p.is_empty()) => {}
                Some(v) => {
                    orig.insert(field.to_owned(), v);
                }
                None => {}
            }
        }
        return Ok(());
    };
    match (orig_v, patch_v) {
        (Value::Object(om), Value::Object(pm)) => {
            if meta.strategy == Strategy::Replace {
                *om = clean_map(pm)?;
                Ok(())
            } else {
                merge_map(om, pm, meta.child)
            }
        }
        (Value::Array(ol), Value::Array(pl)) => {
            if is_delete_list {
                delete_from_list(ol, pl)
            } else if meta.strategy == Strategy::Merge {
                let current = std::mem::take(ol);
                *ol = merge_list(current, pl, meta, false)?.items;
                Ok(())
            } else {
                *ol = clean_list(pl)?;
                Ok(())
            }
        }
        (orig_v, patch_v) => {
            if !is_delete_list {
                match clean(patch_v)? {
                    Some(v) => *orig_v = v,
                    None => {
                        orig.remove(field);
                    }
                }
            }
            Ok(())
        }
    }
}

/// upstream `extractKey`: `$prefix/<field>` → `<field>`.
fn extract_key<'a>(key: &'a str, prefix: &str) -> R<&'a str> {
    match key.split_once('/') {
        Some((p, field)) if p == prefix => Ok(field),
        _ => Err(if prefix == SET_ORDER_PREFIX {
            malformed(
                "invalid patch format of setElementOrder list: expected $setElementOrder/<field>",
            )
        } else {
            malformed(
                "invalid patch format of primitive list: expected $deleteFromPrimitiveList/<field>",
            )
        })
        .at(|| key.to_owned()),
    }
}

/// `$deleteFromPrimitiveList/<field>`: removes every listed value (upstream `deleteFromSlice`).
fn delete_from_list(list: &mut Vec<Value>, to_delete: &[Value]) -> R<()> {
    if list.iter().chain(to_delete).any(Value::is_object) {
        return Err(malformed(
            "invalid patch format of primitive list: $deleteFromPrimitiveList applies to lists of scalars",
        ));
    }
    let set = KeyIndex::new(to_delete.iter().map(Some));
    list.retain(|v| set.position(Some(v)).is_none());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// $setElementOrder (mergePatchIntoOriginal)

fn merge_with_element_order(
    orig: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    field: &str,
    order: &[Value],
    meta: FieldMeta,
) -> R<()> {
    let patch_list = match patch.get(field) {
        None => None,
        Some(Value::Array(a)) => Some(a.as_slice()),
        Some(other) => {
            return Err(malformed(format!(
                "expected a list next to $setElementOrder/{field}, got {}",
                crate::type_name(other)
            )));
        }
    };
    let orig_list = match orig.remove(field) {
        None => None,
        Some(Value::Array(a)) => Some(a),
        Some(other) => {
            let kind = crate::type_name(&other);
            orig.insert(field.to_owned(), other);
            return Err(inapplicable(format!(
                "the object has {kind} where $setElementOrder expects a list"
            )));
        }
    };
    let key = meta.merge_key;
    validate_order(patch_list.unwrap_or(&[]), order, key)?;

    let (merged, server_order) = match (orig_list, patch_list) {
        (None, None) => return Ok(()),
        (None, Some(p)) => (clean_list(p)?, Vec::new()),
        (Some(o), None) => {
            let keys = project_all(&o, key);
            (o, keys)
        }
        (Some(o), Some(p)) => {
            if meta.strategy == Strategy::Merge {
                let m = merge_list(o, p, meta, true)?;
                (m.items, m.server_order)
            } else {
                let keys = project_all(&o, key);
                (clean_list(p)?, keys)
            }
        }
    };

    let order_index = KeyIndex::new(project_order(order, key)?);
    let (patch_items, server_only) = partition(merged, &order_index, key)?;
    let server_index = KeyIndex::new(server_order.iter().map(Option::as_ref));
    let out = normalize_element_order(patch_items, server_only, &order_index, &server_index, key);
    orig.insert(field.to_owned(), Value::Array(out));
    Ok(())
}

/// upstream `validatePatchWithSetOrderList`: the (non-deleting) items of the patch list must
/// appear in the `$setElementOrder` list, in the same relative order.
fn validate_order(patch_list: &[Value], order: &[Value], key: Option<&str>) -> R<()> {
    if patch_list.is_empty() || order.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = patch_list
        .iter()
        .filter(|v| key.is_none() || !is_directive_item(v))
        .collect();
    let (mut p, mut o) = (0, 0);
    while p < items.len() && o < order.len() {
        if is_directive_item(items[p]) {
            p += 1;
            continue;
        }
        let equal = match key {
            None => items[p] == &order[o],
            Some(k) => {
                let left = map_key(items[p], k, true)?;
                let right = map_key(&order[o], k, true)?;
                left == right
            }
        };
        if equal {
            p += 1;
        }
        o += 1;
    }
    if p < items.len() {
        return Err(malformed(format!(
            "the order in patch list {} doesn't match $setElementOrder list {}",
            Value::Array(patch_list.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

fn is_directive_item(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.contains_key(DIRECTIVE))
}

// ---------------------------------------------------------------------------------------------
// Lists (mergeSliceHandler / mergeSlice)

struct MergedList {
    items: Vec<Value>,
    /// The live order as upstream's `mergePatchIntoOriginal` sees it after the merge (projected
    /// on the merge key). Upstream merges into the live slice in place, so items deleted by
    /// `{"$patch":"delete"}` shift the rest left and appended items fill the freed tail; the
    /// relative order used for server-only items depends on it. Only filled when asked for.
    server_order: Vec<Option<Value>>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Null,
    Bool,
    Number,
    String,
    Map,
}

/// upstream `sliceElementType`: every element of both lists has the same type, not a list.
fn element_kind(a: &[Value], b: &[Value]) -> R<Option<Kind>> {
    let mut kind = None;
    for v in a.iter().chain(b) {
        let k = match v {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::String,
            Value::Object(_) => Kind::Map,
            Value::Array(_) => return Err(inapplicable("lists of lists are not supported")),
        };
        match kind {
            None => kind = Some(k),
            Some(prev) if prev != k => {
                return Err(inapplicable("list element types are not identical"));
            }
            Some(_) => {}
        }
    }
    Ok(kind)
}

/// Merges two lists of a field with strategy `merge` (upstream `mergeSlice`).
fn merge_list(orig: Vec<Value>, patch: &[Value], meta: FieldMeta, track: bool) -> R<MergedList> {
    let Some(kind) = element_kind(&orig, patch)? else {
        return Ok(MergedList {
            items: orig,
            server_order: Vec::new(),
        });
    };
    if kind == Kind::Map {
        let Some(key) = meta.merge_key else {
            return Err(inapplicable(
                "cannot merge lists of maps without a merge key",
            ));
        };
        merge_list_of_maps(orig, patch, key, meta.child, track)
    } else {
        Ok(merge_list_of_scalars(orig, patch, track))
    }
}

/// Lists of scalars: ordered union, then the order rules of `normalizeElementOrder`.
fn merge_list_of_scalars(orig: Vec<Value>, patch: &[Value], track: bool) -> MergedList {
    let server_order: Vec<Option<Value>> = orig.iter().cloned().map(Some).collect();
    let mut merged: Vec<Value> = Vec::with_capacity(orig.len() + patch.len());
    for v in orig.into_iter().chain(patch.iter().cloned()) {
        if !merged.contains(&v) {
            merged.push(v);
        }
    }
    let patch_index = KeyIndex::new(patch.iter().map(Some));
    let server_index = KeyIndex::new(server_order.iter().map(Option::as_ref));
    let (patch_items, server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| patch_index.position(Some(v)).is_some());
    let items =
        normalize_element_order(patch_items, server_only, &patch_index, &server_index, None);
    MergedList {
        items,
        server_order: if track { server_order } else { Vec::new() },
    }
}

/// Lists of maps merged by `key` (mergeSliceWithSpecialElements + mergeSliceWithoutSpecialElements).
fn merge_list_of_maps(
    mut orig: Vec<Value>,
    patch: &[Value],
    key: &'static str,
    child: &'static Fields,
    track: bool,
) -> R<MergedList> {
    let orig_len = orig.len();
    // Special items first: `{"$patch":"delete", key: v}` and `{"$patch":"replace"}`.
    let mut replace = false;
    let mut plain: Vec<&Map<String, Value>> = Vec::with_capacity(patch.len());
    for (i, item) in patch.iter().enumerate() {
        let Value::Object(m) = item else {
            unreachable!("element_kind checked that every item is a map")
        };
        let Some(directive) = m.get(DIRECTIVE) else {
            plain.push(m);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let Some(value) = m.get(key) else {
                    return Err(no_merge_key(m, key, true)).at(|| format!("[{i}]"));
                };
                for o in &orig {
                    if !o.is_object() {
                        return Err(inapplicable(format!("list item {o} is not a map")));
                    }
                }
                orig.retain(|o| o.get(key) != Some(value));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(malformed(
                    "merging lists cannot yet be specified in the patch ($patch: merge on a list)",
                ))
                .at(|| format!("[{i}]"));
            }
            _ => return Err(bad_patch_type(directive)).at(|| format!("[{i}]")),
        }
    }

    if replace {
        let mut items = Vec::with_capacity(plain.len());
        for m in plain {
            if !m.contains_key(key) {
                return Err(no_merge_key(m, key, true));
            }
            items.push(Value::Object(clean_map(m)?));
        }
        // The live slice is left as it is by a replace.
        let server_order = if track {
            project_all(&orig, Some(key))
        } else {
            Vec::new()
        };
        return Ok(MergedList {
            items,
            server_order,
        });
    }

    // The live order after deletions (upstream passes this `original` to normalizeElementOrder).
    let mut live_keys: Vec<Option<Value>> = Vec::with_capacity(orig.len());
    for o in &orig {
        let Value::Object(om) = o else {
            return Err(inapplicable(format!("list item {o} is not a map")));
        };
        let Some(k) = om.get(key) else {
            return Err(no_merge_key(om, key, false));
        };
        live_keys.push(Some(k.clone()));
    }
    let live_len = orig.len();

    // Merge every plain item into the live item with the same key, or append it.
    let mut appended_keys: Vec<Option<Value>> = Vec::new();
    let live_index = KeyIndex::new(live_keys.iter().map(Option::as_ref));
    for m in &plain {
        let Some(value) = m.get(key) else {
            return Err(no_merge_key(m, key, true));
        };
        let found = live_index.position(Some(value)).or_else(|| {
            // An item appended earlier in this patch.
            appended_keys
                .iter()
                .position(|k| k.as_ref() == Some(value))
                .map(|p| live_len + p)
        });
        match found {
            Some(pos) => {
                let Some(Value::Object(target)) = orig.get_mut(pos) else {
                    unreachable!("live items were checked to be maps")
                };
                merge_map(target, m, child).at(|| format!("[{key}={value}]"))?;
            }
            None => {
                orig.push(Value::Object(clean_map(m)?));
                appended_keys.push(Some(value.clone()));
            }
        }
    }

    // Order: patch items by patch order, live-only items by live order, interleaved.
    let patch_index = KeyIndex::new(plain.iter().map(|m| m.get(key)));
    let server_index = live_index;
    let (patch_items, server_only): (Vec<Value>, Vec<Value>) = orig
        .into_iter()
        .partition(|v| patch_index.position(v.get(key)).is_some());
    let items = normalize_element_order(
        patch_items,
        server_only,
        &patch_index,
        &server_index,
        Some(key),
    );
    drop(server_index);

    let server_order = if track {
        // See `MergedList::server_order`.
        let mut keys = live_keys;
        keys.extend(appended_keys);
        keys.truncate(orig_len);
        keys
    } else {
        Vec::new()
    };
    Ok(MergedList {
        items,
        server_order,
    })
}

/// Splits `merged` into the items found in `index` and the others (upstream
/// `partitionPrimitivesByPresentInList` / `partitionMapsByPresentInList`). With a merge key,
/// every item must be a map holding it.
fn partition(
    merged: Vec<Value>,
    index: &KeyIndex<'_>,
    key: Option<&str>,
) -> R<(Vec<Value>, Vec<Value>)> {
    let mut inside = Vec::with_capacity(merged.len());
    let mut outside = Vec::new();
    for v in merged {
        let found = match key {
            None => index.position(Some(&v)),
            Some(k) => index.position(Some(map_key(&v, k, false)?)),
        };
        if found.is_some() {
            inside.push(v);
        } else {
            outside.push(v);
        }
    }
    Ok((inside, outside))
}

/// The merge-key value of a list item that must be a map holding it.
fn map_key<'a>(v: &'a Value, key: &str, is_patch: bool) -> R<&'a Value> {
    let Value::Object(m) = v else {
        let reason = format!("expected a map with merge key {key:?}, got {v}");
        return Err(if is_patch {
            malformed(reason)
        } else {
            inapplicable(reason)
        });
    };
    m.get(key).ok_or_else(|| no_merge_key(m, key, is_patch))
}

/// Projects an order list (`$setElementOrder` or a patch list) on the merge key.
fn project_order<'a>(
    order: &'a [Value],
    key: Option<&str>,
) -> R<impl Iterator<Item = Option<&'a Value>> + 'a> {
    let mut out = Vec::with_capacity(order.len());
    for v in order {
        out.push(match key {
            None => Some(v),
            Some(k) => Some(map_key(v, k, true)?),
        });
    }
    Ok(out.into_iter())
}

fn project_all(list: &[Value], key: Option<&str>) -> Vec<Option<Value>> {
    list.iter()
        .map(|v| match key {
            None => Some(v.clone()),
            Some(k) => v.get(k).cloned(),
        })
        .collect()
}

/// upstream `normalizeElementOrder`: sorts `patch_items` by `patch_order` and `server_only` by
/// `server_order` (stable), then interleaves them with `mergeSortedSlice`.
fn normalize_element_order(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &KeyIndex<'_>,
    server_order: &KeyIndex<'_>,
    key: Option<&str>,
) -> Vec<Value> {
    let pos = |index: &KeyIndex<'_>, v: &Value| -> usize {
        match key {
            None => index.position(Some(v)),
            Some(k) => index.position(v.get(k)),
        }
        .unwrap_or(usize::MAX)
    };
    patch_items.sort_by_cached_key(|v| pos(patch_order, v));
    server_only.sort_by_cached_key(|v| pos(server_order, v));

    // mergeSortedSlice: a server-only item goes before the next patch item only when both are
    // in the live list and it comes first there.
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => out.extend(left.next()),
            (None, Some(_)) => out.extend(right.next()),
            (Some(l), Some(r)) => {
                let li = pos(server_order, l);
                let ri = pos(server_order, r);
                if li != usize::MAX && ri != usize::MAX && li < ri {
                    out.extend(left.next());
                } else {
                    out.extend(right.next());
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Values taken verbatim from the patch (upstream `removeDirectives` + `discardNullValuesFromPatch`)

fn is_directive_key(k: &str) -> bool {
    k == DIRECTIVE
        || k == RETAIN_KEYS
        || k.starts_with(SET_ORDER_PREFIX)
        || k.starts_with(DELETE_PRIMITIVE_PREFIX)
}

/// A patch value with its directives and `null` map entries removed; `None` when the value is
/// itself a `{"$patch":"delete"}`.
fn clean(v: &Value) -> R<Option<Value>> {
    match v {
        Value::Object(m) => {
            if let Some(d) = m.get(DIRECTIVE) {
                match d.as_str() {
                    Some("delete") => return Ok(None),
                    Some("replace") => {}
                    _ => return Err(bad_patch_type(d)).at(|| DIRECTIVE.to_owned()),
                }
            }
            Ok(Some(Value::Object(clean_map(m)?)))
        }
        Value::Array(a) => Ok(Some(Value::Array(clean_list(a)?))),
        other => Ok(Some(other.clone())),
    }
}

fn clean_map(m: &Map<String, Value>) -> R<Map<String, Value>> {
    let mut out = Map::new();
    for (k, v) in m {
        if is_directive_key(k) || v.is_null() {
            continue;
        }
        if let Some(v) = clean(v).at(|| k.clone())? {
            out.insert(k.clone(), v);
        }
    }
    Ok(out)
}

/// List items that are directives (`{"$patch": …}`) are dropped.
fn clean_list(a: &[Value]) -> R<Vec<Value>> {
    let mut out = Vec::with_capacity(a.len());
    for (i, v) in a.iter().enumerate() {
        if let Value::Object(m) = v
            && let Some(d) = m.get(DIRECTIVE)
        {
            match d.as_str() {
                Some("delete") | Some("replace") => continue,
                Some("merge") => {
                    return Err(malformed(
                        "merging lists cannot yet be specified in the patch ($patch: merge on a list)",
                    ))
                    .at(|| format!("[{i}]"));
                }
                _ => return Err(bad_patch_type(d)).at(|| format!("[{i}]")),
            }
        }
        if let Some(v) = clean(v).at(|| format!("[{i}]"))? {
            out.push(v);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Position lookups by (merge-key) value, with Go `==` semantics on JSON scalars.

#[derive(Hash, PartialEq, Eq)]
enum KeyRepr<'a> {
    Null,
    Bool(bool),
    Num(&'a Number),
    Str(&'a str),
}

fn key_repr(v: Option<&Value>) -> Option<KeyRepr<'_>> {
    match v {
        None | Some(Value::Null) => Some(KeyRepr::Null),
        Some(Value::Bool(b)) => Some(KeyRepr::Bool(*b)),
        Some(Value::Number(n)) => Some(KeyRepr::Num(n)),
        Some(Value::String(s)) => Some(KeyRepr::Str(s)),
        Some(_) => None,
    }
}

/// FNV-1a: merge keys are short strings, for which SipHash's setup dominates.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// First position of each value in a list (upstream `index`, which scans linearly).
struct KeyIndex<'a> {
    scalars: HashMap<KeyRepr<'a>, usize, BuildHasherDefault<Fnv>>,
    complex: Vec<(&'a Value, usize)>,
}

impl<'a> KeyIndex<'a> {
    fn new(values: impl Iterator<Item = Option<&'a Value>>) -> Self {
        let values = values.into_iter();
        let mut scalars = HashMap::with_capacity_and_hasher(
            values.size_hint().0,
            BuildHasherDefault::<Fnv>::default(),
        );
        let mut complex = Vec::new();
        for (i, v) in values.enumerate() {
            match key_repr(v) {
                Some(k) => {
                    scalars.entry(k).or_insert(i);
                }
                None => {
                    if let Some(v) = v
                        && !complex.iter().any(|(c, _)| *c == v)
                    {
                        complex.push((v, i));
                    }
                }
            }
        }
        KeyIndex { scalars, complex }
    }

    fn position(&self, v: Option<&Value>) -> Option<usize> {
        match key_repr(v) {
            Some(k) => self.scalars.get(&k).copied(),
            None => {
                let v = v?;
                self.complex.iter().find(|(c, _)| *c == v).map(|(_, i)| *i)
            }
        }
    }
}
