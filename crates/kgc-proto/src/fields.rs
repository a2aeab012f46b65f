//! Unknown-field detection for JSON objects of built-in kinds, as kube-apiserver's strict decoding
//! (`fieldValidation=Strict|Warn`) reports it.
//!
//! kube-apiserver decodes a JSON body of a built-in kind into its Go struct with
//! `sigs.k8s.io/json`'s `UnmarshalStrict` (case-sensitive names, `DisallowUnknownFields`). Every
//! object key that names no field of the struct being filled is an "unknown field"; its path is
//! the strict decoder's field stack: JSON names (of struct fields and of map keys alike) joined
//! with `.`, list indices appended as `[i]`, and the unknown key last
//! (`spec.template.spec.containers[0].bogus`). The value under an unknown key is skipped, not
//! inspected; the typed object simply never holds it, which is why a `Warn`/`Ignore` write stores
//! the object without it.
//!
//! The walk is driven by the same schema the protobuf decoder uses ([`crate::schema`]): struct
//! fields by JSON name, embedded (`json:",inline"`) structs promoted into their parent, map
//! values and list items walked with their element type. Values with their own `UnmarshalJSON`
//! (`Time`, `MicroTime`, `Quantity`, `IntOrString`, `RawExtension`, `FieldsV1`) and plain
//! scalars are opaque: whatever they contain is never an unknown field (a wrong JSON type there is
//! a type error, left to others).

use serde_json::{Map, Value};

use crate::schema::{KINDS, MESSAGES};
use crate::schema_types::{Elem, Field, Message, Shape};

/// Nesting limit for the walk. It only descends through struct-typed fields of the schema, which
/// is not recursive, so real objects stay far below it; it guards the stack regardless.
const MAX_DEPTH: usize = 100;

/// Fields of `obj` (a JSON object of the built-in `api_version`/`kind`) that the Go type does not
/// have, as upstream prints them (`spec.bogus`, `spec.template.spec.containers[0].bogus`,
/// `metadata.labelz`, map values as `.key.field`), in the order the walk meets them: depth-first
/// in the iteration order of `obj`'s maps (document order with serde_json's `preserve_order`,
/// sorted keys otherwise, which is also the order kubectl's own JSON bodies have). `None` when the
/// kind is not a known built-in (custom resources: the CRD schema handles those;
/// `apiextensions.k8s.io/v1 CustomResourceDefinition` is not among the built-ins this schema was
/// generated from either).
///
/// Also removes them from `obj` (as the typed decoder drops them), so a Warn/Ignore write stores
/// exactly what a real cluster stores. `obj` itself not being a JSON object is a type error, not
/// an unknown field: `Some(vec![])`.
///
/// Upstream quotes each path with Go's `strconv.Quote` (`unknown field "spec.bogus"`), reports at
/// most 100 strict errors per request and joins them with `, ` after `strict decoding error: `.
pub fn prune_unknown_fields(api_version: &str, kind: &str, obj: &mut Value) -> Option<Vec<String>> {
    let key = (api_version, kind);
    let found = KINDS
        .binary_search_by(|&(api_version, kind, _)| (api_version, kind).cmp(&key))
        .ok()?;
    let index = KINDS[found].2;
    let mut walker = Walker {
        path: String::new(),
        depth: 0,
        unknown: Vec::new(),
    };
    if let Value::Object(map) = obj {
        walker.message(index, map);
    }
    Some(walker.unknown)
}

struct Walker {
    /// The strict decoder's field stack for the value being walked, e.g.
    /// `spec.template.spec.containers[0]`; empty at the root.
    path: String,
    depth: usize,
    unknown: Vec<String>,
}

impl Walker {
    /// The path of `key` inside the value being walked.
    fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// Runs `f` with `segment` appended to the path (`.key`, or `key` at the root, or `[i]`).
    fn at(&mut self, segment: Segment<'_>, f: impl FnOnce(&mut Self)) {
        let len = self.path.len();
        match segment {
            Segment::Key(key) => {
                if !self.path.is_empty() {
                    self.path.push('.');
                }
                self.path.push_str(key);
            }
            Segment::Index(i) => {
                self.path.push('[');
                self.path.push_str(&i.to_string());
                self.path.push(']');
            }
        }
        f(self);
        self.path.truncate(len);
    }

    /// Walks a JSON object decoded into the struct `MESSAGES[index]`, dropping unknown keys.
    fn message(&mut self, index: u16, map: &mut Map<String, Value>) {
        let Some(message) = MESSAGES.get(usize::from(index)) else {
            return;
        };
        if self.depth >= MAX_DEPTH {
            return;
        }
        self.depth += 1;
        map.retain(|key, value| {
            if let Some(field) = lookup(message, key) {
                self.at(Segment::Key(key), |w| w.field(field, value));
                true
            } else if (key == "apiVersion" || key == "kind") && has_type_meta(index) {
                // The embedded `metav1.TypeMeta` (no protobuf tag, so absent from the schema).
                true
            } else {
                let path = self.key_path(key);
                self.unknown.push(path);
                false
            }
        });
        self.depth -= 1;
    }

    /// Walks the value of a known struct field.
    fn field(&mut self, field: &Field, value: &mut Value) {
        match field.shape {
            Shape::Value | Shape::Pointer => self.element(field.elem, value),
            Shape::List => {
                if let Value::Array(items) = value {
                    for (i, item) in items.iter_mut().enumerate() {
                        self.at(Segment::Index(i), |w| w.element(field.elem, item));
                    }
                }
            }
            Shape::Map => {
                if let Value::Object(entries) = value {
                    for (key, entry) in entries.iter_mut() {
                        self.at(Segment::Key(key), |w| w.element(field.elem, entry));
                    }
                }
            }
        }
    }

    /// Walks one element: only structs can hold unknown fields.
    fn element(&mut self, elem: Elem, value: &mut Value) {
        // Scalars, `[]string` wrappers, and the types with their own UnmarshalJSON (Time,
        // MicroTime, Quantity, IntOrString, RawExtension, FieldsV1) are opaque; any other JSON
        // type where a struct belongs is a type error, not an unknown field.
        if let (Elem::Message(index), Value::Object(map)) = (elem, value) {
            self.message(index, map);
        }
    }
}

enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// The field `key` names in `message`, following encoding/json's rules for embedded structs: a
/// field of the struct itself wins over promoted ones, shallower promoted fields over deeper.
/// Names match case-sensitively, as `sigs.k8s.io/json` does.
fn lookup(message: &'static Message, key: &str) -> Option<&'static Field> {
    let mut level: Vec<&'static Message> = vec![message];
    // Embedding depth is bounded by the (non-recursive) schema; the limit guards regardless.
    for _ in 0..MAX_DEPTH {
        let mut next = Vec::new();
        for message in level {
            for field in message.fields {
                if !field.inline {
                    if field.json == key {
                        return Some(field);
                    }
                } else if let Some(embedded) = embedded(field) {
                    next.push(embedded);
                }
            }
        }
        if next.is_empty() {
            return None;
        }
        level = next;
    }
    None
}

/// The struct an inline (embedded) field promotes.
fn embedded(field: &Field) -> Option<&'static Message> {
    match field.elem {
        Elem::Message(index) => MESSAGES.get(usize::from(index)),
        _ => None,
    }
}

/// Whether the struct `MESSAGES[index]` embeds `metav1.TypeMeta` (`apiVersion`, `kind`): the
/// registered kinds do, wherever they appear (the root, or e.g. a StatefulSet's
/// `volumeClaimTemplates[]` PersistentVolumeClaims).
fn has_type_meta(index: u16) -> bool {
    KINDS.iter().any(|&(_, _, kind_index)| kind_index == index)
}
