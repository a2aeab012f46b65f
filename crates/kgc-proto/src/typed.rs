//! Typed decoding of JSON objects of built-in kinds, as kube-apiserver decodes them into their Go
//! structs (and stricter where Go stores what typed clients cannot read).
//!
//! kube-apiserver decodes a JSON body into the kind's Go struct with `sigs.k8s.io/json`
//! (kubernetes-sigs/json internal/golang/encoding/json/decode.go, a fork of encoding/json),
//! case-sensitively, then encodes the struct again to store it. This module does the same in one
//! walk over a `serde_json::Value`, driven by the schema generated from the Go types
//! ([`crate::schema`]):
//!
//! - **Types.** Every value must suit its Go type. The first mismatch is encoding/json's
//!   `UnmarshalTypeError` (`json: cannot unmarshal string into Go struct field
//!   DeploymentSpec.spec.replicas of type int32`): the innermost struct, the JSON field names from
//!   the root (no list indices, no map keys: `addErrorContext` joins the decoder's field stack),
//!   and the destination's `reflect.Type.String()`. Integers must be integer literals in range
//!   (`number 1.5`, `number 3000000000` into int32). `literalStore` records such an error and
//!   goes on; an error returned by a type's own `UnmarshalJSON` (a bad time, quantity or
//!   int-or-string) aborts the decode and wins over an earlier recorded one, as in Go.
//! - **Types with their own `UnmarshalJSON`**: `metav1.Time`/`MicroTime` ([`crate::time`]),
//!   `resource.Quantity` ([`crate::quantity`]), `intstr.IntOrString` (an int32 or a string; Go
//!   decodes the number with a nested `json.Unmarshal`, whose type error gets the same context),
//!   `[]byte` (standard base64, [`crate::base64`]), `RawExtension` and `FieldsV1` (embedded JSON).
//! - **Normalization**, as the decode→encode round trip prints values: times in UTC
//!   (`2006-01-02T15:04:05Z`, MicroTime with six fraction digits, the zero time as `null`),
//!   `[]byte` in canonical base64, quantities as `Quantity.String()` (a JSON number becomes a
//!   string). `null` is accepted everywhere (Go leaves the zero value) and printed as Go prints
//!   that zero value: omitted under `omitempty` for scalars, pointers, slices and maps, `""`, `0`
//!   or `false` for scalars without it, `{}` for structs (their zero fields are not spelled out:
//!   fields absent from the body stay absent), `"0"` for a quantity and `0` for an int-or-string.
//! - **Unknown fields** (object keys naming no field of the struct) are dropped and reported with
//!   the strict decoder's paths (`spec.template.spec.containers[0].bogus`, map keys as `.key`).
//! - **Missing required fields**: a field the official Python client's model requires (the
//!   generated `required` flag) that the object lacks or has as `null`, in upstream's
//!   `field.Path` form (`spec.template.spec.containers[0].name`, map keys as `[key]`).
//!
//! Stricter than Go, because Go stores these and typed clients (k8s-openapi, the official Python
//! client) then cannot read the object: `null` as a list item or map value of a type whose zero
//! value prints as `null` (`[]byte`, times, `RawExtension`, named string lists: Secret
//! `data: {"a": null}`), a `RawExtension` or `FieldsV1` that is not a JSON object, and times
//! outside 0001-01-01…9999-12-30 (see [`crate::time`]). The first two are reported as type errors
//! worded like Go's (`json: cannot unmarshal null into Go struct field Secret.data of type
//! []uint8`).
//!
//! JSON numbers arrive parsed (`serde_json` without `arbitrary_precision`): a non-integer is
//! named by its shortest form (`number 1.5`; Go quotes the literal, so `1e3` reads `number
//! 1000.0` here), and a number given for a quantity is canonicalised from that form too.

use std::fmt;
use std::sync::OnceLock;

use serde_json::{Map, Number, Value};

use crate::schema::{KINDS, MESSAGES};
use crate::schema_types::{Elem, Field, Message, Shape};
use crate::{base64, quantity, time};

pub use crate::quantity::QuantityError;
pub use crate::time::ParseError as TimeError;

/// Nesting limit for structs. The schema is not recursive, so real objects stay far below it; it
/// guards the stack regardless.
const MAX_DEPTH: usize = 100;

/// A successfully decoded object: what the walk found besides type errors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decoded {
    /// Unknown fields, dropped from the object: the strict decoder's paths, in walk order
    /// (depth-first, keys in the order `obj`'s maps iterate). kube-apiserver quotes each as
    /// `unknown field "<path>"`.
    pub unknown_fields: Vec<String>,
    /// Required fields (by the official Python client's models) that are absent or `null`, as
    /// `field.Path` strings, in walk order.
    pub missing_required: Vec<String>,
}

/// Why the object cannot be decoded into its Go type: `Display` is the text Go's decoder gives
/// (kube-apiserver answers 400 with `<Kind> in version "<v>" cannot be handled as a <Kind>:
/// <text>`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TypeError {
    /// encoding/json's `UnmarshalTypeError` with its error context.
    #[error(
        "json: cannot unmarshal {found} into Go struct field {go_struct}.{field} of type {go_type}"
    )]
    Field {
        found: Found,
        /// The innermost Go struct, e.g. `DeploymentSpec`.
        go_struct: &'static str,
        /// The JSON field names from the root, joined with `.`.
        field: String,
        /// The destination's Go type, e.g. `int32`, `[]v1.Container`.
        go_type: &'static str,
    },
    /// `UnmarshalTypeError` without context: the body itself is not a JSON object.
    #[error("json: cannot unmarshal {found} into Go value of type {go_type}")]
    Value { found: Found, go_type: &'static str },
    /// `metav1.Time`/`MicroTime`: `time.Parse`'s error.
    #[error(transparent)]
    Time(#[from] TimeError),
    /// `resource.Quantity`: `ParseQuantity`'s error.
    #[error(transparent)]
    Quantity(#[from] QuantityError),
    /// `[]byte`: `base64.CorruptInputError`.
    #[error("illegal base64 data at input byte {0}")]
    Base64(usize),
    /// Structs nested beyond [`MAX_DEPTH`] (not possible with the generated schema).
    #[error("exceeded max depth")]
    Depth,
}

/// What encoding/json found where the Go type wanted something else (`UnmarshalTypeError.Value`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    String,
    /// A number; with its text when Go prints it (an integer destination it does not fit).
    Number(Option<String>),
    Bool,
    Array,
    Object,
    /// Only where kgc is stricter than Go (see the module documentation).
    Null,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::String => f.write_str("string"),
            Found::Number(None) => f.write_str("number"),
            Found::Number(Some(text)) => write!(f, "number {text}"),
            Found::Bool => f.write_str("bool"),
            Found::Array => f.write_str("array"),
            Found::Object => f.write_str("object"),
            Found::Null => f.write_str("null"),
        }
    }
}

impl Found {
    fn of(value: &Value) -> Found {
        match value {
            Value::Null => Found::Null,
            Value::Bool(_) => Found::Bool,
            Value::Number(_) => Found::Number(None),
            Value::String(_) => Found::String,
            Value::Array(_) => Found::Array,
            Value::Object(_) => Found::Object,
        }
    }
}

/// Decodes `obj`, a JSON object of the built-in `api_version`/`kind`, as kube-apiserver's typed
/// decoder does: checks every value against its Go type, normalizes values as Go prints them
/// back, drops unknown fields, and reports them and missing required fields. `None` when the kind
/// is not a built-in this schema knows (custom resources; `apiextensions.k8s.io` kinds are not in
/// it either).
///
/// On a type error `obj` may be partly normalized and pruned; callers refuse it anyway.
pub fn decode(
    api_version: &str,
    kind: &str,
    obj: &mut Value,
) -> Option<Result<Decoded, TypeError>> {
    let index = kind_index(api_version, kind)?;
    let mut walker = Walker::new(Mode::Typed);
    let walked = walker.root(index, obj);
    // An error `UnmarshalJSON` returned wins over the first one `literalStore` saved.
    Some(walked.and(match walker.saved {
        Some(error) => Err(error),
        None => Ok(Decoded {
            unknown_fields: walker.unknown,
            missing_required: walker.missing,
        }),
    }))
}

/// Fields of `obj` (a JSON object of the built-in `api_version`/`kind`) that the Go type does not
/// have, as upstream prints them (`spec.bogus`, `spec.template.spec.containers[0].bogus`,
/// `metadata.labelz`, map values as `.key.field`), also removed from `obj`; nothing else is
/// checked or changed, and values of the wrong JSON type are not looked into. `None` when the kind
/// is not a built-in this schema knows.
///
/// The same walk as [`decode`]; upstream quotes each path with Go's `strconv.Quote` (`unknown
/// field "spec.bogus"`), reports at most 100 strict errors per request and joins them with `, `
/// after `strict decoding error: `.
pub fn prune_unknown_fields(api_version: &str, kind: &str, obj: &mut Value) -> Option<Vec<String>> {
    let index = kind_index(api_version, kind)?;
    let mut walker = Walker::new(Mode::UnknownFieldsOnly);
    // This mode reports nothing but unknown fields: it cannot fail.
    walker.root(index, obj).ok();
    Some(walker.unknown)
}

fn kind_index(api_version: &str, kind: &str) -> Option<u16> {
    let key = (api_version, kind);
    let found = KINDS
        .binary_search_by(|&(api_version, kind, _)| (api_version, kind).cmp(&key))
        .ok()?;
    Some(KINDS[found].2)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Typed,
    UnknownFieldsOnly,
}

/// An error `UnmarshalJSON` returned: it ends the walk.
type Walk = Result<(), TypeError>;

struct Walker {
    mode: Mode,
    depth: usize,
    unknown: Vec<String>,
    missing: Vec<String>,
    /// The first type error `literalStore` recorded (`saveError`).
    saved: Option<TypeError>,
}

/// Where a value sits: a path from the root, kept on the stack.
struct At<'a> {
    parent: Option<&'a At<'a>>,
    step: Step<'a>,
    /// encoding/json's `errorContext.Struct`: the innermost struct whose field holds the value
    /// (`""` at the root).
    go_struct: &'static str,
}

#[derive(Clone, Copy)]
enum Step<'a> {
    Root,
    Field(&'a str),
    Index(usize),
    Key(&'a str),
}

impl<'a> At<'a> {
    fn child(&'a self, step: Step<'a>) -> At<'a> {
        At {
            parent: Some(self),
            step,
            go_struct: self.go_struct,
        }
    }

    fn steps(&self) -> Vec<Step<'a>> {
        let mut steps = Vec::new();
        let mut at = Some(self);
        while let Some(here) = at {
            if !matches!(here.step, Step::Root) {
                steps.push(here.step);
            }
            at = here.parent;
        }
        steps.reverse();
        steps
    }

    /// The strict decoder's path (unknown fields): map keys like field names.
    fn strict_path(&self) -> String {
        let mut out = String::new();
        for step in self.steps() {
            match step {
                Step::Field(name) | Step::Key(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                }
                Step::Index(i) => out.push_str(&format!("[{i}]")),
                Step::Root => {}
            }
        }
        out
    }

    /// Upstream's `field.Path` string: map keys in brackets.
    fn field_path(&self) -> String {
        let mut out = String::new();
        for step in self.steps() {
            match step {
                Step::Field(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                }
                Step::Key(key) => out.push_str(&format!("[{key}]")),
                Step::Index(i) => out.push_str(&format!("[{i}]")),
                Step::Root => {}
            }
        }
        out
    }

    /// encoding/json's type error for `found` here, with its context (`Struct.field.path`) once
    /// a struct field was entered.
    fn type_error(&self, found: Found, go_type: &'static str) -> TypeError {
        let fields: Vec<&str> = self
            .steps()
            .into_iter()
            .filter_map(|step| match step {
                Step::Field(name) => Some(name),
                _ => None,
            })
            .collect();
        if fields.is_empty() {
            TypeError::Value { found, go_type }
        } else {
            TypeError::Field {
                found,
                go_struct: self.go_struct,
                field: fields.join("."),
                go_type,
            }
        }
    }
}

impl Walker {
    fn new(mode: Mode) -> Walker {
        Walker {
            mode,
            depth: 0,
            unknown: Vec::new(),
            missing: Vec::new(),
            saved: None,
        }
    }

    fn typed(&self) -> bool {
        self.mode == Mode::Typed
    }

    /// `saveError`: keeps the first.
    fn save(&mut self, error: TypeError) {
        self.saved.get_or_insert(error);
    }

    fn root(&mut self, index: u16, obj: &mut Value) -> Walk {
        let at = At {
            parent: None,
            step: Step::Root,
            go_struct: "",
        };
        match obj {
            Value::Object(map) => self.object(index, map, &at),
            other if self.typed() => {
                Err(at.type_error(Found::of(other), struct_type(index).go_type))
            }
            _ => Ok(()),
        }
    }

    /// Walks a JSON object decoded into the struct `MESSAGES[index]`.
    fn object(&mut self, index: u16, map: &mut Map<String, Value>, at: &At<'_>) -> Walk {
        if self.depth >= MAX_DEPTH {
            return if self.typed() {
                Err(TypeError::Depth)
            } else {
                Ok(())
            };
        }
        self.depth += 1;
        let result = self.fields(index, map, at);
        self.depth -= 1;
        result
    }

    fn fields(&mut self, index: u16, map: &mut Map<String, Value>, at: &At<'_>) -> Walk {
        let table = struct_type(index);
        if self.typed() {
            for field in &table.required {
                if map.get(field.json).is_none_or(Value::is_null) {
                    self.missing
                        .push(at.child(Step::Field(field.json)).field_path());
                }
            }
        }
        let mut dropped: Vec<String> = Vec::new();
        for (key, value) in map.iter_mut() {
            let keep = if let Some(field) = table.field(key) {
                let here = At {
                    parent: Some(at),
                    step: Step::Field(field.json),
                    go_struct: table.go_struct,
                };
                self.field(field, value, &here)?
            } else if table.type_meta && (key == "apiVersion" || key == "kind") {
                // The embedded `metav1.TypeMeta` (`json:",inline"`, no protobuf tag, so absent
                // from the schema): two `omitempty` strings.
                let here = At {
                    parent: Some(at),
                    step: Step::Field(key),
                    go_struct: table.go_struct,
                };
                self.type_meta(value, &here)
            } else {
                self.unknown.push(at.child(Step::Key(key)).strict_path());
                false
            };
            if !keep {
                dropped.push(key.clone());
            }
        }
        for key in dropped {
            map.remove(&key);
        }
        Ok(())
    }

    fn type_meta(&mut self, value: &mut Value, at: &At<'_>) -> bool {
        match value {
            Value::String(_) => true,
            _ if !self.typed() => true,
            Value::Null => false,
            other => {
                let error = at.type_error(Found::of(other), "string");
                self.save(error);
                true
            }
        }
    }

    /// Walks the value of a known struct field; `false` when Go would not print it.
    fn field(
        &mut self,
        field: &'static Field,
        value: &mut Value,
        at: &At<'_>,
    ) -> Result<bool, TypeError> {
        if value.is_null() {
            if !self.typed() {
                return Ok(true);
            }
            let Some(zero) = null_field(field) else {
                return Ok(false);
            };
            *value = zero;
            if let (Elem::Message(index), Value::Object(map)) = (field.elem, value) {
                self.object(index, map, at)?;
            }
            return Ok(true);
        }
        match (field.shape, value) {
            (Shape::Value | Shape::Pointer, value) => {
                self.element(field.elem, field.go_type, value, at)?
            }
            (Shape::List, Value::Array(items)) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.item(field.elem, field.item_type, item, &at.child(Step::Index(i)))?;
                }
            }
            (Shape::Map, Value::Object(entries)) => {
                for (key, entry) in entries.iter_mut() {
                    self.item(
                        field.elem,
                        field.item_type,
                        entry,
                        &at.child(Step::Key(key)),
                    )?;
                }
            }
            (_, other) => {
                if self.typed() {
                    let error = at.type_error(Found::of(other), field.go_type);
                    self.save(error);
                }
            }
        }
        Ok(true)
    }

    /// One list item or map value.
    fn item(&mut self, elem: Elem, go_type: &'static str, value: &mut Value, at: &At<'_>) -> Walk {
        if !value.is_null() {
            return self.element(elem, go_type, value, at);
        }
        if !self.typed() {
            return Ok(());
        }
        match null_item(elem) {
            Some(zero) => {
                *value = zero;
                if let (Elem::Message(index), Value::Object(map)) = (elem, value) {
                    self.object(index, map, at)?;
                }
            }
            None => {
                let error = at.type_error(Found::Null, go_type);
                self.save(error);
            }
        }
        Ok(())
    }

    /// One non-null value of the element type `elem` (Go type `go_type`).
    fn element(
        &mut self,
        elem: Elem,
        go_type: &'static str,
        value: &mut Value,
        at: &At<'_>,
    ) -> Walk {
        if !self.typed() {
            if let (Elem::Message(index), Value::Object(map)) = (elem, value) {
                self.object(index, map, at)?;
            }
            return Ok(());
        }
        match (elem, value) {
            (Elem::String, Value::String(_)) | (Elem::Bool, Value::Bool(_)) => {}
            (Elem::Int32, Value::Number(n)) => {
                if !fits_i32(n) {
                    self.save(at.type_error(number_text(n), go_type));
                }
            }
            (Elem::Int64, Value::Number(n)) => {
                if n.as_i64().is_none() {
                    self.save(at.type_error(number_text(n), go_type));
                }
            }
            (Elem::Message(index), Value::Object(map)) => self.object(index, map, at)?,
            (Elem::Bytes, value @ Value::String(_)) => {
                let Value::String(text) = &*value else {
                    return Ok(());
                };
                match base64::decode(text.as_bytes()) {
                    Ok(bytes) => {
                        let canonical = kgc_meta::encoding::base64(&bytes);
                        if canonical != *text {
                            *value = Value::String(canonical);
                        }
                    }
                    Err(offset) => self.save(TypeError::Base64(offset)),
                }
            }
            (Elem::Bytes, value @ Value::Array(_)) => self.byte_array(value, at),
            (Elem::Time | Elem::MicroTime, value @ Value::String(_)) => {
                let layout = if elem == Elem::Time {
                    time::Layout::Time
                } else {
                    time::Layout::MicroTime
                };
                let Value::String(text) = &*value else {
                    return Ok(());
                };
                match time::normalize(layout, text)? {
                    None => *value = Value::Null,
                    Some(normalized) if normalized != *text => *value = Value::String(normalized),
                    Some(_) => {}
                }
            }
            // `UnmarshalJSON` decodes the string with a nested `json.Unmarshal`.
            (Elem::Time | Elem::MicroTime, other) => {
                return Err(at.type_error(Found::of(other), "string"));
            }
            (Elem::Quantity, value) => {
                let canonical = match &*value {
                    Value::String(text) => match quantity::from_json_string(text)? {
                        normalized if normalized == text.as_str() => return Ok(()),
                        normalized => normalized.into_owned(),
                    },
                    Value::Number(n) => quantity::canonical(&n.to_string())?.into_owned(),
                    // Go parses the raw JSON (`true`, `[…]`, `{…}`): never a quantity.
                    _ => return Err(QuantityError::Format.into()),
                };
                *value = Value::String(canonical);
            }
            (Elem::IntOrString, Value::String(_)) => {}
            // `UnmarshalJSON` decodes a non-string with a nested `json.Unmarshal` into int32.
            (Elem::IntOrString, Value::Number(n)) => {
                if !fits_i32(n) {
                    return Err(at.type_error(number_text(n), "int32"));
                }
            }
            (Elem::IntOrString, other) => return Err(at.type_error(Found::of(other), "int32")),
            (Elem::RawExtension | Elem::FieldsV1, Value::Object(_)) => {}
            (Elem::StringList, Value::Array(items)) => {
                for item in items {
                    match item {
                        Value::String(_) => {}
                        Value::Null => *item = Value::String(String::new()),
                        other => {
                            let error = at.type_error(Found::of(other), "string");
                            self.save(error);
                        }
                    }
                }
            }
            (_, other) => {
                let error = at.type_error(Found::of(other), go_type);
                self.save(error);
            }
        }
        Ok(())
    }

    /// A JSON array where `[]byte` belongs: encoding/json fills the slice element by element
    /// (each a `uint8`), and prints it as base64.
    fn byte_array(&mut self, value: &mut Value, at: &At<'_>) {
        let Value::Array(items) = &*value else { return };
        let mut bytes = Vec::with_capacity(items.len());
        let mut ok = true;
        for item in items {
            match item {
                Value::Null => bytes.push(0),
                Value::Number(n) => match n.as_u64().and_then(|n| u8::try_from(n).ok()) {
                    Some(b) => bytes.push(b),
                    None => {
                        ok = false;
                        self.save(at.type_error(number_text(n), "uint8"));
                    }
                },
                other => {
                    ok = false;
                    self.save(at.type_error(Found::of(other), "uint8"));
                }
            }
        }
        if ok {
            *value = Value::String(kgc_meta::encoding::base64(&bytes));
        }
    }
}

fn fits_i32(n: &Number) -> bool {
    n.as_i64().is_some_and(|n| i32::try_from(n).is_ok())
}

/// `number <text>`, as `literalStore` names a number an integer cannot hold.
fn number_text(n: &Number) -> Found {
    Found::Number(Some(n.to_string()))
}

/// How Go prints a struct field after decoding `null` into it: `None` when it is left out.
fn null_field(field: &Field) -> Option<Value> {
    match field.shape {
        Shape::Pointer | Shape::List | Shape::Map => (!field.omitempty).then_some(Value::Null),
        Shape::Value => match field.elem {
            Elem::String => (!field.omitempty).then(|| Value::String(String::new())),
            Elem::Bool => (!field.omitempty).then_some(Value::Bool(false)),
            Elem::Int32 | Elem::Int64 => (!field.omitempty).then(|| Value::from(0)),
            Elem::Bytes | Elem::StringList => (!field.omitempty).then_some(Value::Null),
            // Structs are never empty to encoding/json, whatever the tag says.
            Elem::Message(_) => Some(Value::Object(Map::new())),
            Elem::Time | Elem::MicroTime | Elem::RawExtension | Elem::FieldsV1 => Some(Value::Null),
            Elem::Quantity => Some(Value::String("0".to_owned())),
            Elem::IntOrString => Some(Value::from(0)),
        },
    }
}

/// How Go prints a list item or map value after decoding `null` into it; `None` where that is
/// `null`, which typed clients cannot read there (kgc refuses it).
fn null_item(elem: Elem) -> Option<Value> {
    match elem {
        Elem::String => Some(Value::String(String::new())),
        Elem::Bool => Some(Value::Bool(false)),
        Elem::Int32 | Elem::Int64 | Elem::IntOrString => Some(Value::from(0)),
        Elem::Quantity => Some(Value::String("0".to_owned())),
        Elem::Message(_) => Some(Value::Object(Map::new())),
        Elem::Bytes
        | Elem::StringList
        | Elem::Time
        | Elem::MicroTime
        | Elem::RawExtension
        | Elem::FieldsV1 => None,
    }
}

/// A struct's JSON fields, embedded structs' fields promoted.
struct StructType {
    /// `reflect.Type.Name()`, e.g. `DeploymentSpec` (what `UnmarshalTypeError.Struct` holds).
    go_struct: &'static str,
    go_type: &'static str,
    /// By JSON name, sorted.
    by_json: Vec<(&'static str, &'static Field)>,
    /// The required fields, promoted ones included, in declaration order.
    required: Vec<&'static Field>,
    /// The struct embeds `metav1.TypeMeta` (`apiVersion`, `kind`): the registered kinds do,
    /// wherever they appear (the root, or e.g. a StatefulSet's `volumeClaimTemplates[]`).
    type_meta: bool,
}

impl StructType {
    fn field(&self, json: &str) -> Option<&'static Field> {
        self.by_json
            .binary_search_by(|(name, _)| (*name).cmp(json))
            .ok()
            .map(|i| self.by_json[i].1)
    }
}

fn struct_type(index: u16) -> &'static StructType {
    static TYPES: OnceLock<Vec<StructType>> = OnceLock::new();
    let types = TYPES.get_or_init(|| {
        let mut kinds = vec![false; MESSAGES.len()];
        for &(_, _, kind) in KINDS {
            kinds[usize::from(kind)] = true;
        }
        MESSAGES
            .iter()
            .zip(kinds)
            .map(|(message, type_meta)| build_struct_type(message, type_meta))
            .collect()
    });
    &types[usize::from(index)]
}

/// The field lookup of a struct, following encoding/json's rules for embedded structs: a field of
/// the struct itself wins over promoted ones, shallower promoted fields over deeper (names are
/// matched case-sensitively, as `sigs.k8s.io/json` does).
fn build_struct_type(message: &'static Message, type_meta: bool) -> StructType {
    let mut by_json: Vec<(&'static str, &'static Field)> = Vec::new();
    let mut level = vec![message];
    // Embedding depth is bounded by the (non-recursive) schema; the limit guards regardless.
    for _ in 0..MAX_DEPTH {
        let mut next = Vec::new();
        for message in level {
            for field in message.fields {
                match field.elem {
                    Elem::Message(embedded) if field.inline => {
                        next.push(&MESSAGES[usize::from(embedded)]);
                    }
                    _ => by_json.push((field.json, field)),
                }
            }
        }
        if next.is_empty() {
            break;
        }
        level = next;
    }
    // A stable sort keeps the shallowest of equal names first, and dedup keeps the first.
    by_json.sort_by_key(|(name, _)| *name);
    by_json.dedup_by_key(|(name, _)| *name);
    let mut required = Vec::new();
    collect_required(message, &mut required, 0);
    let go_type = message.go_type;
    StructType {
        go_struct: go_type.rsplit('.').next().unwrap_or(go_type),
        go_type,
        by_json,
        required,
        type_meta,
    }
}

fn collect_required(message: &'static Message, out: &mut Vec<&'static Field>, depth: usize) {
    for field in message.fields {
        if field.inline {
            if let (Elem::Message(embedded), true) = (field.elem, depth < MAX_DEPTH) {
                collect_required(&MESSAGES[usize::from(embedded)], out, depth + 1);
            }
        } else if field.required {
            out.push(field);
        }
    }
}
