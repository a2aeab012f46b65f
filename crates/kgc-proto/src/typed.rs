//! Typed decoding of JSON objects of built-in kinds, as kube-apiserver decodes them into their Go
//! structs (and stricter where Go stores what typed clients cannot read).
//!
//! kube-apiserver decodes a JSON body into the kind's Go struct with `sigs.k8s.io/json`
//! (kubernetes-sigs/json internal/golang/encoding/json/decode.go, a fork of encoding/json),
//! case-sensitively, then encodes the struct again to store it. This module does the same in one
//! walk over a `serde_json::Value`, driven by the schema generated from the Go types
//! (`schema.rs`):
//!
//! - **Types.** Every value must suit its Go type. The first mismatch is encoding/json's
//!   `UnmarshalTypeError` (`json: cannot unmarshal string into Go struct field
//!   DeploymentSpec.spec.replicas of type int32`): the innermost struct, the JSON field names from
//!   the root (no list indices, no map keys: `addErrorContext` joins the decoder's field stack),
//!   and the destination's `reflect.Type.String()`. Integers must be integer literals in range
//!   (`number 1.5`, `number 3000000000` into int32). `literalStore` records such an error and
//!   goes on; an error returned by a type's own `UnmarshalJSON` (a bad time, quantity or
//!   int-or-string) aborts the decode and wins over an earlier recorded one, as in Go.
//! - **Types with their own `UnmarshalJSON`**: `metav1.Time`/`MicroTime` (time.rs),
//!   `resource.Quantity` (`kgc_meta::quantity`), `intstr.IntOrString` (an int32 or a string; Go
//!   decodes the number with a nested `json.Unmarshal`, whose type error gets the same context),
//!   `[]byte` (standard base64, base64.rs), `RawExtension` and `FieldsV1` (embedded JSON).
//! - **Normalization**, as the decode→encode round trip prints values: times in UTC
//!   (`2006-01-02T15:04:05Z`, MicroTime with six fraction digits, the zero time as `null`),
//!   `[]byte` in canonical base64, quantities as `Quantity.String()` (a JSON number becomes a
//!   string), and `omitempty` fields holding an empty value (`false`, `0`, `""`, `[]`, `{}`;
//!   never a pointer or a struct) left out. `null` is accepted everywhere (Go leaves the zero
//!   value) and printed as Go prints that zero value: left out under `omitempty` for scalars,
//!   pointers, slices and maps, `""`, `0` or `false` for scalars without it, `{}` for structs,
//!   `"0"` for a quantity and `0` for an int-or-string. A field absent from the body is decoded
//!   as `null` is, so the object gets every zero value Go prints (`status: {}`, a container's
//!   `resources: {}`, a template's `creationTimestamp: null`, a ReplicationController status's
//!   `replicas: 0`): what typed clients read back from kube-apiserver.
//! - **Unknown fields** (object keys naming no field of the struct) are dropped and reported with
//!   the strict decoder's paths (`spec.template.spec.containers[0].bogus`, map keys as `.key`).
//! - **Missing required fields**: a field the official Python client's model requires (the
//!   generated `required` flag) that the object lacks, has as `null`, or has with a value Go
//!   prints as `null` or not at all (the zero time, `""` under `omitempty`), in upstream's
//!   `field.Path` form (`spec.template.spec.containers[0].name`, map keys as `[key]`).
//!
//! Stricter than Go, because Go stores these and typed clients (k8s-openapi, the official Python
//! client) then cannot read the object:
//! - `null` as a list item or map value of a type whose zero value prints as `null` (`[]byte`,
//!   times, `RawExtension`, named string lists: Secret `data: {"a": null}`), and a
//!   `RawExtension` or `FieldsV1` that is not a JSON object: type errors worded like Go's
//!   (`json: cannot unmarshal null into Go struct field Secret.data of type []uint8`);
//! - times outside 0001-01-01…9999-12-30, and the zero time as a list item or map value
//!   ([`TimeError`]);
//! - an embedded object of a registered kind naming another `apiVersion` or `kind` than its
//!   type's ([`TypeError::EmbeddedType`]);
//! - quantity exponents beyond ±10^9, where Go's int32 arithmetic wraps ([`QuantityError`]).
//!
//! The root's `apiVersion` and `kind` are the caller's to check against the request.
//!
//! JSON numbers arrive parsed (`serde_json` without `arbitrary_precision`): a non-integer is
//! named by its shortest form (`number 1.5`; Go quotes the literal, so `1e3` reads `number
//! 1000.0` here), and a number given for a quantity is canonicalised from that form too.

use std::fmt;
use std::ops::RangeInclusive;
use std::sync::OnceLock;

use kgc_meta::quantity;
use serde_json::{Map, Number, Value};

use crate::schema::{KINDS, MESSAGES};
use crate::schema_types::{Elem, Field, Message, Shape};
use crate::{base64, time};

pub use crate::time::ParseError as TimeError;
pub use kgc_meta::quantity::QuantityError;

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
    /// Stricter than Go: an embedded object of a registered kind (a StatefulSet's
    /// `volumeClaimTemplates[]`) names another `apiVersion` or `kind` than the one its type is
    /// registered as, which typed clients refuse. Worded as upstream's `field.NotSupported`.
    #[error("{field}: Unsupported value: {value:?}: supported values: {want:?}")]
    EmbeddedType {
        /// `field.Path` of the offending field, e.g. `spec.volumeClaimTemplates[0].kind`.
        field: String,
        value: String,
        want: &'static str,
    },
    /// Structs nested more than 100 deep (not possible with the generated schema).
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
            // An absent field is decoded as `null` is: it gets the zero value Go prints (a
            // struct's own zero fields included), and is missing when it is required and
            // prints as `null` or not at all.
            for field in table.required.iter().chain(&table.printed) {
                if !map.contains_key(field.json) {
                    map.insert(field.json.to_owned(), Value::Null);
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
            } else if let Some(registered) = table.type_meta(key) {
                // The embedded `metav1.TypeMeta` (`json:",inline"`, no protobuf tag, so absent
                // from the schema): two `omitempty` strings.
                let here = At {
                    parent: Some(at),
                    step: Step::Field(key),
                    go_struct: table.go_struct,
                };
                self.type_meta(registered, value, &here)
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

    /// `apiVersion` or `kind` of a struct embedding `metav1.TypeMeta`; `registered` is what the
    /// struct is registered as, when it is registered once.
    ///
    /// Stricter than Go, which keeps whatever string an embedded object (a StatefulSet's
    /// `volumeClaimTemplates[]`) carries there: k8s-openapi refuses any value but the registered
    /// one, so another is refused here too.
    fn type_meta(
        &mut self,
        registered: Option<&'static str>,
        value: &mut Value,
        at: &At<'_>,
    ) -> bool {
        if !self.typed() {
            return true;
        }
        match value {
            Value::String(s) if s.is_empty() => false,
            Value::String(s) => {
                let nested = at
                    .parent
                    .is_some_and(|parent| !matches!(parent.step, Step::Root));
                if let (true, Some(want)) = (nested, registered)
                    && s != want
                {
                    self.save(TypeError::EmbeddedType {
                        field: at.field_path(),
                        value: s.clone(),
                        want,
                    });
                }
                true
            }
            Value::Null => false,
            other => {
                let error = at.type_error(Found::of(other), "string");
                self.save(error);
                true
            }
        }
    }

    /// Walks the value of a known struct field; `false` when Go would not print it. A required
    /// field is missing when Go would print it as `null` or not at all (absent or `null`, it
    /// gets the zero value Go prints: `""` for a name is there, a `null` list is missing).
    fn field(
        &mut self,
        field: &'static Field,
        value: &mut Value,
        at: &At<'_>,
    ) -> Result<bool, TypeError> {
        if !self.typed() {
            self.value(field, value, at)?;
            return Ok(true);
        }
        let was_null = value.is_null();
        let keep = if was_null {
            self.null(field, value, at)?
        } else {
            self.value(field, value, at)?
        };
        if field.required && (!keep || value.is_null()) {
            self.missing.push(at.field_path());
        }
        Ok(keep)
    }

    /// A struct field holding `null`: becomes what Go prints for the zero value (`false`: not
    /// printed).
    fn null(
        &mut self,
        field: &'static Field,
        value: &mut Value,
        at: &At<'_>,
    ) -> Result<bool, TypeError> {
        let Some(zero) = null_field(field) else {
            return Ok(false);
        };
        *value = zero;
        if let (Elem::Message(index), Value::Object(map)) = (field.elem, value) {
            self.object(index, map, at)?;
        }
        Ok(true)
    }

    /// A struct field holding a value; `false` when Go would not print it.
    fn value(
        &mut self,
        field: &'static Field,
        value: &mut Value,
        at: &At<'_>,
    ) -> Result<bool, TypeError> {
        match (field.shape, &mut *value) {
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
        // encoding/json leaves out an `omitempty` field holding an empty value.
        let empty = match field.shape {
            Shape::Value => field.elem.is_go_empty(value),
            Shape::Pointer => false,
            Shape::List => value.as_array().is_some_and(Vec::is_empty),
            Shape::Map => value.as_object().is_some_and(Map::is_empty),
        };
        Ok(!(self.typed() && field.omitempty && empty))
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
            (Elem::Int32, value @ Value::Number(_)) => {
                if let Err(found) = integer(value, i32::MIN.into()..=i32::MAX.into()) {
                    self.save(at.type_error(found, go_type));
                }
            }
            (Elem::Int64, value @ Value::Number(_)) => {
                if let Err(found) = integer(value, i64::MIN..=i64::MAX) {
                    self.save(at.type_error(found, go_type));
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
                let in_container = matches!(at.step, Step::Index(_) | Step::Key(_));
                match time::normalize(layout, text, !in_container)? {
                    time::Normalized::Same => {}
                    time::Normalized::Null => *value = Value::Null,
                    time::Normalized::Changed(printed) => *value = Value::String(printed),
                }
            }
            // `UnmarshalJSON` decodes the string with a nested `json.Unmarshal`.
            (Elem::Time | Elem::MicroTime, other) => {
                return Err(at.type_error(Found::of(other), "string"));
            }
            // Go parses the raw JSON (`true`, `[…]`, `{…}` are never a quantity); a string
            // already canonical is left as it is.
            (Elem::Quantity, value) => {
                let canonical = quantity::canonical_json(value)?;
                if value.as_str() == Some(&*canonical) {
                    return Ok(());
                }
                let canonical = canonical.into_owned();
                *value = Value::String(canonical);
            }
            (Elem::IntOrString, Value::String(_)) => {}
            // `UnmarshalJSON` decodes a non-string with a nested `json.Unmarshal` into int32.
            (Elem::IntOrString, value @ Value::Number(_)) => {
                integer(value, i32::MIN.into()..=i32::MAX.into())
                    .map_err(|found| at.type_error(found, "int32"))?;
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

/// A JSON number Go's `strconv.ParseInt` reads as an integer in `range`, or what
/// `UnmarshalTypeError` then names. serde_json parses the literal `-0` (0 to Go) as the float
/// -0.0: that becomes `0` (and so do `-0.0` and `-0e0`, which Go refuses).
fn integer(value: &mut Value, range: RangeInclusive<i64>) -> Result<(), Found> {
    let Value::Number(n) = &*value else {
        return Ok(());
    };
    match n.as_i64() {
        Some(i) if range.contains(&i) => Ok(()),
        None if n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative()) => {
            *value = Value::from(0);
            Ok(())
        }
        _ => Err(number_text(n)),
    }
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
    /// The fields by JSON name: an open-addressing hash table (FNV-1a, linear probing) at most
    /// half full, so a lookup hashes the key and compares it with one name, mostly.
    /// Each slot holds the name too, sparing a load per probe.
    slots: Vec<Option<(&'static str, &'static Field)>>,
    /// The required fields, promoted ones included, in declaration order.
    required: Vec<&'static Field>,
    /// The fields Go prints even when the object does not have them (the zero value of a field
    /// without `omitempty`, and of every struct-typed field), promoted ones included: a decode
    /// adds them, as the decode→encode round trip does.
    printed: Vec<&'static Field>,
    /// The struct embeds `metav1.TypeMeta` (`apiVersion`, `kind`), as the registered kinds do
    /// wherever they appear (the root, or e.g. a StatefulSet's `volumeClaimTemplates[]`): the
    /// `(apiVersion, kind)` pairs it is registered as.
    registered: Vec<(&'static str, &'static str)>,
}

impl StructType {
    /// For `apiVersion` and `kind` of a struct embedding `metav1.TypeMeta`: `Some`, with the one
    /// value the struct is registered with when there is only one.
    fn type_meta(&self, key: &str) -> Option<Option<&'static str>> {
        let pick: fn(&(&'static str, &'static str)) -> &'static str = match key {
            "apiVersion" => |r| r.0,
            "kind" => |r| r.1,
            _ => return None,
        };
        let first = pick(self.registered.first()?);
        Some(
            self.registered
                .iter()
                .all(|r| pick(r) == first)
                .then_some(first),
        )
    }

    fn field(&self, json: &str) -> Option<&'static Field> {
        let mask = self.slots.len() - 1;
        let mut i = fnv1a(json) & mask;
        loop {
            match self.slots[i] {
                Some((name, field)) if name == json => return Some(field),
                Some(_) => i = (i + 1) & mask,
                None => return None,
            }
        }
    }
}

fn struct_type(index: u16) -> &'static StructType {
    static TYPES: OnceLock<Vec<StructType>> = OnceLock::new();
    let types = TYPES.get_or_init(|| {
        let mut registered = vec![Vec::new(); MESSAGES.len()];
        for &(api_version, kind, index) in KINDS {
            registered[usize::from(index)].push((api_version, kind));
        }
        MESSAGES
            .iter()
            .zip(registered)
            .map(|(message, registered)| build_struct_type(message, registered))
            .collect()
    });
    &types[usize::from(index)]
}

/// The field lookup of a struct, following encoding/json's rules for embedded structs: a field of
/// the struct itself wins over promoted ones, shallower promoted fields over deeper (names are
/// matched case-sensitively, as `sigs.k8s.io/json` does).
fn build_struct_type(
    message: &'static Message,
    registered: Vec<(&'static str, &'static str)>,
) -> StructType {
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
    // Shallower fields were pushed first: the first of equal names wins.
    let mut slots = vec![None; (by_json.len() * 2).next_power_of_two().max(2)];
    let mask = slots.len() - 1;
    let mut printed = Vec::new();
    for (name, field) in by_json {
        let mut i = fnv1a(name) & mask;
        loop {
            match slots[i] {
                None => {
                    slots[i] = Some((name, field));
                    if null_field(field).is_some() {
                        printed.push(field);
                    }
                    break;
                }
                Some((taken, _)) if taken == name => break,
                Some(_) => i = (i + 1) & mask,
            }
        }
    }
    let mut required = Vec::new();
    collect_required(message, &mut required, 0);
    let go_type = message.go_type;
    StructType {
        go_struct: go_type.rsplit('.').next().unwrap_or(go_type),
        go_type,
        slots,
        required,
        printed,
        registered,
    }
}

/// 64-bit FNV-1a, truncated: the hash of [`StructType::slots`].
fn fnv1a(key: &str) -> usize {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    hash as usize
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Decodes `obj` (its apiVersion and kind name the type) and returns the outcome, the error as
    /// its text, and the object as it would be stored.
    fn run(mut obj: Value) -> (Result<Decoded, String>, Value) {
        let api_version = obj["apiVersion"].as_str().unwrap().to_owned();
        let kind = obj["kind"].as_str().unwrap().to_owned();
        let result = decode(&api_version, &kind, &mut obj)
            .expect("a built-in kind")
            .map_err(|e| e.to_string());
        (result, obj)
    }

    fn error(obj: Value) -> String {
        run(obj).0.expect_err("a type error")
    }

    /// Decodes successfully and returns the stored object.
    fn stored(obj: Value) -> Value {
        let (result, obj) = run(obj);
        let decoded = result.expect("no type error");
        assert_eq!(decoded, Decoded::default(), "nothing unknown or missing");
        obj
    }

    fn deployment(spec: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec})
    }

    fn pod_spec(containers: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}})
    }

    #[test]
    fn unmarshal_type_errors_name_the_innermost_struct_and_the_json_path() {
        let cases = [
            (
                deployment(json!({"replicas": "three"})),
                "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": 5}}),
                "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Service", "spec": {"ports": "eighty"}}),
                "json: cannot unmarshal string into Go struct field ServiceSpec.spec.ports of type []v1.ServicePort",
            ),
            (
                deployment(
                    json!({"template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}}}),
                ),
                "json: cannot unmarshal string into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32",
            ),
            (
                deployment(json!("x")),
                "json: cannot unmarshal string into Go struct field Deployment.spec of type v1.DeploymentSpec",
            ),
            (
                pod_spec(json!({"c": {}})),
                "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container",
            ),
            (
                pod_spec(json!(["c"])),
                "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type v1.Container",
            ),
            (
                pod_spec(json!([{"name": "c", "imagePullPolicy": 1}])),
                "json: cannot unmarshal number into Go struct field Container.spec.containers.imagePullPolicy of type v1.PullPolicy",
            ),
            (
                pod_spec(json!([{"name": "c", "resources": {"limits": "1"}}])),
                "json: cannot unmarshal string into Go struct field ResourceRequirements.spec.containers.resources.limits of type v1.ResourceList",
            ),
            (
                pod_spec(json!([{"name": "c", "args": [["x"]]}])),
                "json: cannot unmarshal array into Go struct field Container.spec.containers.args of type string",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": [1]}}),
                "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Pod", "spec": {"hostNetwork": "true"}}),
                "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Secret", "data": "x"}),
                "json: cannot unmarshal string into Go struct field Secret.data of type map[string][]uint8",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": true}}),
                "json: cannot unmarshal bool into Go struct field Secret.data of type []uint8",
            ),
            // Fields promoted from an embedded struct belong to the outer one.
            (
                json!({"apiVersion": "v1", "kind": "Pod", "spec": {"volumes": [{"name": "v", "configMap": "cm"}]}}),
                "json: cannot unmarshal string into Go struct field Volume.spec.volumes.configMap of type v1.ConfigMapVolumeSource",
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"volumeClaimTemplates": [{"kind": 1}]}}),
                "json: cannot unmarshal number into Go struct field PersistentVolumeClaim.spec.volumeClaimTemplates.kind of type string",
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(error(obj), want);
        }
        for (body, want) in [
            (
                json!([1]),
                "json: cannot unmarshal array into Go value of type v1.Deployment",
            ),
            (
                json!("x"),
                "json: cannot unmarshal string into Go value of type v1.Deployment",
            ),
            (
                json!(null),
                "json: cannot unmarshal null into Go value of type v1.Deployment",
            ),
        ] {
            let mut body = body;
            let got = decode("apps/v1", "Deployment", &mut body)
                .unwrap()
                .unwrap_err();
            assert_eq!(got.to_string(), want);
        }
    }

    #[test]
    fn integers_must_be_integral_and_in_range() {
        for (replicas, want) in [
            (json!(1.5), "number 1.5"),
            (json!(3_000_000_000u64), "number 3000000000"),
            (json!(-2_147_483_649i64), "number -2147483649"),
            (json!(2.0), "number 2.0"),
            (json!(true), "bool"),
            (json!([1]), "array"),
            (json!({}), "object"),
        ] {
            assert_eq!(
                error(deployment(json!({"replicas": replicas}))),
                format!(
                    "json: cannot unmarshal {want} into Go struct field DeploymentSpec.spec.replicas of type int32"
                )
            );
        }
        // Go reads the literal `-0` as 0; serde_json as the float -0.0.
        let minus_zero: Value = serde_json::from_str("-0").unwrap();
        assert!(minus_zero.is_f64());
        let obj = stored(deployment(
            json!({"replicas": minus_zero, "selector": {}, "template": {"spec": {"containers": [{"name": "c"}]}}}),
        ));
        assert_eq!(obj["spec"]["replicas"], json!(0));
        for ok in [json!(0), json!(-2_147_483_648i64), json!(2_147_483_647)] {
            let obj = stored(deployment(
                json!({"replicas": ok, "selector": {}, "template": {"spec": {"containers": [{"name": "c"}]}}}),
            ));
            assert_eq!(obj["spec"]["replicas"], ok);
        }
        // int64: anything an i64 holds.
        let meta = |generation: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generation": generation}});
        stored(meta(json!(i64::MIN)));
        assert_eq!(
            error(meta(json!(u64::MAX))),
            "json: cannot unmarshal number 18446744073709551615 into Go struct field ObjectMeta.metadata.generation of type int64"
        );
    }

    #[test]
    fn the_first_saved_error_wins_unless_unmarshal_json_fails() {
        // Two recorded type errors: the first in walk order (metadata sorts before spec).
        let obj = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"generation": "x"}, "spec": {"replicas": "y"}});
        assert!(error(obj).contains("ObjectMeta.metadata.generation of type int64"));
        // An UnmarshalJSON error later in the body wins over an earlier recorded one.
        let obj = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"generation": "x"}, "spec": {"template": {"metadata": {"creationTimestamp": "yesterday"}}}});
        assert_eq!(
            error(obj),
            r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#
        );
    }

    #[test]
    fn times_and_micro_times() {
        let cm = |ts: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"creationTimestamp": ts}});
        assert_eq!(
            stored(cm(json!("2024-01-01T02:00:00.5+02:00")))["metadata"]["creationTimestamp"],
            "2024-01-01T00:00:00Z"
        );
        assert_eq!(
            stored(cm(json!(null)))["metadata"]["creationTimestamp"],
            json!(null)
        );
        assert_eq!(
            stored(cm(json!("0001-01-01T00:00:00Z")))["metadata"]["creationTimestamp"],
            json!(null)
        );
        // Not a string: the nested `json.Unmarshal` into a string fails, with the outer context.
        for (ts, found) in [
            (json!(5), "number"),
            (json!(true), "bool"),
            (json!({}), "object"),
            (json!([]), "array"),
        ] {
            assert_eq!(
                error(cm(ts)),
                format!(
                    "json: cannot unmarshal {found} into Go struct field ObjectMeta.metadata.creationTimestamp of type string"
                )
            );
        }
        assert_eq!(
            error(cm(json!("2024-13-01T00:00:00Z"))),
            r#"parsing time "2024-13-01T00:00:00Z": month out of range"#
        );
        let lease = |t: Value| json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"renewTime": t}});
        assert_eq!(
            stored(lease(json!("2024-01-01T00:00:10.123456-01:00")))["spec"]["renewTime"],
            "2024-01-01T01:00:10.123456Z"
        );
        // Exactly six fraction digits.
        assert_eq!(
            error(lease(json!("2024-01-01T00:00:10.1234567Z"))),
            r#"parsing time "2024-01-01T00:00:10.1234567Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "7Z" as "Z07:00""#
        );
        assert_eq!(
            error(lease(json!("2024-01-01T00:00:10Z"))),
            r#"parsing time "2024-01-01T00:00:10Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#
        );
        // Map values: null is Go's zero time, printed `null`, which clients cannot read there.
        let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "status": {"disruptedPods": {"a": null}}});
        assert_eq!(
            error(pdb),
            "json: cannot unmarshal null into Go struct field PodDisruptionBudgetStatus.status.disruptedPods of type v1.Time"
        );
    }

    #[test]
    fn quantities() {
        let limits =
            |q: Value| pod_spec(json!([{"name": "c", "resources": {"limits": {"cpu": q}}}]));
        for (q, want) in [
            (json!(0.5), "500m"),
            (json!(2), "2"),
            (json!("1000m"), "1"),
            (json!(" 64Mi "), "64Mi"),
            (json!("1.5Gi"), "1536Mi"),
            (json!("1e3"), "1e3"),
            (json!(null), "0"),
        ] {
            assert_eq!(
                stored(limits(q.clone()))["spec"]["containers"][0]["resources"]["limits"]["cpu"],
                want,
                "{q}"
            );
        }
        let format = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
        for q in [json!("x"), json!(true), json!([1]), json!({}), json!("")] {
            assert_eq!(error(limits(q)), format);
        }
        assert_eq!(
            error(limits(json!("1ki"))),
            "unable to parse quantity's suffix"
        );
        // A value-typed Quantity: null is the zero quantity.
        let divisor = pod_spec(
            json!([{"name": "c", "env": [{"name": "E", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": null}}}]}]),
        );
        assert_eq!(
            stored(divisor)["spec"]["containers"][0]["env"][0]["valueFrom"]["resourceFieldRef"]["divisor"],
            "0"
        );
    }

    #[test]
    fn int_or_string() {
        let svc = |port: Value| json!({"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80, "targetPort": port}]}});
        assert_eq!(
            stored(svc(json!("http")))["spec"]["ports"][0]["targetPort"],
            "http"
        );
        assert_eq!(
            stored(svc(json!(8080)))["spec"]["ports"][0]["targetPort"],
            8080
        );
        assert_eq!(
            stored(svc(json!(null)))["spec"]["ports"][0]["targetPort"],
            0
        );
        for (port, found) in [
            (json!(1.5), "number 1.5"),
            (json!(1u64 << 40), "number 1099511627776"),
            (json!(true), "bool"),
            (json!({}), "object"),
        ] {
            assert_eq!(
                error(svc(port)),
                format!(
                    "json: cannot unmarshal {found} into Go struct field ServicePort.spec.ports.targetPort of type int32"
                )
            );
        }
        // A pointer: null is nil, and omitempty leaves it out.
        let d = stored(deployment(
            json!({"selector": {}, "template": {"spec": {"containers": [{"name": "c"}]}}, "strategy": {"rollingUpdate": {"maxSurge": null, "maxUnavailable": "25%"}}}),
        ));
        assert_eq!(
            d["spec"]["strategy"]["rollingUpdate"],
            json!({"maxUnavailable": "25%"})
        );
    }

    #[test]
    fn bytes_are_base64() {
        let secret = |data: Value| json!({"apiVersion": "v1", "kind": "Secret", "data": data});
        assert_eq!(
            stored(secret(json!({"a": "Zm9v\nYmFy", "b": "Zh==", "c": ""})))["data"],
            json!({"a": "Zm9vYmFy", "b": "Zg==", "c": ""})
        );
        assert_eq!(
            error(secret(json!({"a": "not base64"}))),
            "illegal base64 data at input byte 3"
        );
        assert_eq!(
            error(secret(json!({"a": "Zg"}))),
            "illegal base64 data at input byte 0"
        );
        assert_eq!(
            error(secret(json!({"a": null}))),
            "json: cannot unmarshal null into Go struct field Secret.data of type []uint8"
        );
        // encoding/json fills a []byte from an array of numbers too.
        assert_eq!(
            stored(secret(json!({"a": [102, 111, 111]})))["data"]["a"],
            "Zm9v"
        );
        assert_eq!(
            error(secret(json!({"a": [256]}))),
            "json: cannot unmarshal number 256 into Go struct field Secret.data of type uint8"
        );
        let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "spec": {"signerName": "s", "request": "a==="}});
        assert_eq!(error(csr), "illegal base64 data at input byte 1");
    }

    #[test]
    fn embedded_json_must_be_an_object() {
        let cr = |data: Value| json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1, "data": data});
        assert_eq!(
            stored(cr(json!({"anything": [1, null]})))["data"],
            json!({"anything": [1, null]})
        );
        assert_eq!(
            error(cr(json!(5))),
            "json: cannot unmarshal number into Go struct field ControllerRevision.data of type runtime.RawExtension"
        );
        let (result, obj) = run(cr(json!(null)));
        assert_eq!(result.unwrap().missing_required, ["data"]);
        assert_eq!(obj["data"], json!(null));
        let managed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"managedFields": [{"manager": "m", "fieldsV1": "x"}]}});
        assert_eq!(
            error(managed),
            "json: cannot unmarshal string into Go struct field ManagedFieldsEntry.metadata.managedFields.fieldsV1 of type v1.FieldsV1"
        );
    }

    #[test]
    fn null_is_the_zero_value_printed_as_go_prints_it() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": null, "generation": null},
            "data": {"a": null, "b": "x"}, "immutable": null});
        assert_eq!(
            stored(obj),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "creationTimestamp": null}, "data": {"a": "", "b": "x"}})
        );
        // Without omitempty the zero value is printed; struct values are never left out.
        let (result, obj) = run(deployment(
            json!({"selector": null, "template": {"spec": {"containers": [{"name": null, "args": [null]}]}}}),
        ));
        assert_eq!(result.unwrap().missing_required, ["spec.selector"]);
        assert_eq!(obj["spec"]["selector"], json!(null));
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"][0],
            json!({"name": "", "args": [""], "resources": {}})
        );
        let (result, obj) = run(deployment(json!({"selector": {}, "template": null})));
        // A struct is never missing: its own fields are (a pod template without containers).
        assert_eq!(
            result.unwrap().missing_required,
            ["spec.template.spec.containers"]
        );
        assert_eq!(
            obj["spec"]["template"],
            json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}})
        );
    }

    #[test]
    fn empty_values_of_omitempty_fields_are_left_out() {
        let d = stored(deployment(
            json!({"paused": false, "minReadySeconds": 0, "replicas": 0, "revisionHistoryLimit": null,
            "selector": {"matchLabels": {}}, "template": {"metadata": {"labels": {}, "name": ""}, "spec": {"containers": [], "volumes": []}}}),
        ));
        // Pointers are kept (`replicas: 0`), as are lists without omitempty; struct values are
        // printed even when the body has none (`strategy`, the zero `creationTimestamp`).
        assert_eq!(
            d["spec"],
            json!({"replicas": 0, "selector": {}, "strategy": {},
                "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": []}}})
        );
    }

    #[test]
    fn embedded_objects_must_name_their_registered_kind() {
        let sts = |pvc: Value| json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "c"}]}}, "volumeClaimTemplates": [pvc]}});
        assert_eq!(
            error(sts(json!({"kind": "Foo"}))),
            r#"spec.volumeClaimTemplates[0].kind: Unsupported value: "Foo": supported values: "PersistentVolumeClaim""#
        );
        assert_eq!(
            stored(sts(
                json!({"apiVersion": "", "kind": "PersistentVolumeClaim"})
            ))["spec"]["volumeClaimTemplates"][0],
            json!({"kind": "PersistentVolumeClaim", "metadata": {"creationTimestamp": null},
                "spec": {"resources": {}}, "status": {}})
        );
    }

    #[test]
    fn missing_required_fields_use_field_path_form() {
        let (result, obj) = run(deployment(
            json!({"template": {"spec": {"containers": [{"image": "nginx"}, null, {"name": "b", "ports": [{}]}]}}}),
        ));
        // A missing name or port prints as `""` or `0`, which clients read (validation refuses
        // them); a missing selector prints as `null`, which they do not.
        assert_eq!(result.unwrap().missing_required, ["spec.selector"]);
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"][1],
            json!({"name": "", "resources": {}})
        );
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"][2]["ports"][0],
            json!({"containerPort": 0})
        );
        let (result, _) = run(json!({"apiVersion": "v1", "kind": "Pod", "spec": {}}));
        assert_eq!(result.unwrap().missing_required, ["spec.containers"]);
        // Present in the body, but printed as `null` (the zero time) or not at all (an empty
        // `omitempty` string): missing for the clients all the same.
        let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "status": {"conditions": [
            {"type": "T", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "0001-01-01T00:00:00Z"}]}});
        let (result, obj) = run(pdb);
        assert_eq!(
            result.unwrap().missing_required,
            ["status.conditions[0].lastTransitionTime"]
        );
        assert_eq!(
            obj["status"]["conditions"][0]["lastTransitionTime"],
            json!(null)
        );
        let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": ""}});
        let (result, obj) = run(review);
        assert_eq!(result.unwrap().missing_required, ["spec.token"]);
        assert_eq!(obj["spec"], json!({}));
        // Inside a map value: the key in brackets.
        let at = At {
            parent: None,
            step: Step::Root,
            go_struct: "",
        };
        let spec = at.child(Step::Field("spec"));
        let attributes = spec.child(Step::Field("attributes"));
        let key = attributes.child(Step::Key("gpu.example.com/model"));
        assert_eq!(
            key.child(Step::Field("string")).field_path(),
            "spec.attributes[gpu.example.com/model].string"
        );
        assert_eq!(
            key.child(Step::Field("string")).strict_path(),
            "spec.attributes.gpu.example.com/model.string"
        );
    }

    #[test]
    fn unknown_fields_are_dropped_and_reported() {
        let (result, obj) = run(deployment(
            json!({"bogus": 1, "selector": {}, "template": {"spec": {"containers": [{"name": "c", "bogus": {"x": "not checked"}}]}}}),
        ));
        assert_eq!(
            result.unwrap().unknown_fields,
            ["spec.bogus", "spec.template.spec.containers[0].bogus"]
        );
        assert_eq!(
            obj["spec"],
            json!({"selector": {}, "strategy": {}, "template": {
                "metadata": {"creationTimestamp": null},
                "spec": {"containers": [{"name": "c", "resources": {}}]}}})
        );
    }

    #[test]
    fn custom_resources_are_not_handled() {
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": 1});
        assert_eq!(decode("example.com/v1", "Widget", &mut obj), None);
    }
}
