//! Schema-driven conversion of a protobuf message into the JSON encoding/json would print for
//! the Go struct gogo-protobuf decodes it into.
//!
//! The rules follow from what happens in kube-apiserver:
//! - gogo-protobuf leaves absent pointers, slices and maps nil and absent plain fields at their
//!   zero value; generated marshallers always write non-pointer scalars and structs, so a value
//!   on the wire says nothing about whether Go would print it;
//! - encoding/json then omits, for `omitempty` fields, `false`, `0`, `""`, nil pointers and empty
//!   slices or maps, but never a non-pointer struct; without `omitempty` a nil pointer, slice or
//!   map prints as `null`.

use kgc_meta::quantity;
use serde_json::{Map, Value};

use crate::schema::MESSAGES;
use crate::schema_types::{Elem, Field, Message, Shape};
use crate::time;
use crate::wire::{self, WireValue};

/// Nesting limit for messages. The Kubernetes types are not recursive, so real objects stay far
/// below it; it only guards the stack against a hostile schema/input combination.
const MAX_DEPTH: usize = 100;

/// A decoding failure: where (a JSONPath-like field path) and why.
#[derive(Debug)]
pub(crate) struct DecodeError {
    pub(crate) path: String,
    pub(crate) reason: String,
}

type Result<T> = std::result::Result<T, DecodeError>;

struct Decoder {
    /// The path of the value being decoded, e.g. `.spec.template.spec.containers[0]`.
    path: String,
    depth: usize,
}

impl Decoder {
    fn error<T>(&self, reason: impl Into<String>) -> Result<T> {
        Err(DecodeError {
            path: if self.path.is_empty() {
                "<object>".to_owned()
            } else {
                self.path.trim_start_matches('.').to_owned()
            },
            reason: reason.into(),
        })
    }

    fn wire<T>(&self, result: std::result::Result<T, String>) -> Result<T> {
        result.or_else(|reason| self.error(reason))
    }

    /// Runs `f` with `segment` appended to the path.
    fn at<T>(&mut self, segment: std::fmt::Arguments<'_>, f: impl FnOnce(&mut Self) -> T) -> T {
        let len = self.path.len();
        std::fmt::Write::write_fmt(&mut self.path, segment).ok();
        let out = f(self);
        self.path.truncate(len);
        out
    }

    fn message(&mut self, message: &Message, buf: &[u8]) -> Result<Map<String, Value>> {
        let mut object = Map::new();
        self.message_into(message, buf, &mut object)?;
        Ok(object)
    }

    fn message_into(
        &mut self,
        message: &Message,
        buf: &[u8],
        object: &mut Map<String, Value>,
    ) -> Result<()> {
        if self.depth >= MAX_DEPTH {
            return self.error("messages nested too deeply");
        }
        self.depth += 1;
        let fields = self.wire(wire::parse_fields(buf))?;
        for field in message.fields {
            let values: Vec<WireValue<'_>> = fields
                .iter()
                .filter(|(number, _)| *number == field.number)
                .map(|(_, value)| *value)
                .collect();
            if field.inline {
                self.inline(field, &values, object)?;
                continue;
            }
            let value = self.at(format_args!(".{}", field.json), |d| d.field(field, &values))?;
            // Go's dominance rule: a field of the outer struct wins over a promoted one.
            if let Some(value) = value {
                object.insert(field.json.to_owned(), value);
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// An embedded struct without a JSON name: its fields are promoted into `object`.
    fn inline(
        &mut self,
        field: &Field,
        values: &[WireValue<'_>],
        object: &mut Map<String, Value>,
    ) -> Result<()> {
        let Elem::Message(index) = field.elem else {
            return self.error("inline field of a non-struct type");
        };
        if field.shape == Shape::Pointer && values.is_empty() {
            return Ok(());
        }
        let bytes = self.concatenated(values)?;
        let mut promoted = Map::new();
        self.message_into(schema_message(index), &bytes, &mut promoted)?;
        for (key, value) in promoted {
            object.entry(key).or_insert(value);
        }
        Ok(())
    }

    /// The JSON of one field, or `None` when encoding/json would leave it out.
    fn field(&mut self, field: &Field, values: &[WireValue<'_>]) -> Result<Option<Value>> {
        let absent = if field.omitempty {
            None
        } else {
            Some(Value::Null)
        };
        match field.shape {
            Shape::Value => {
                let value = match field.elem {
                    Elem::Message(_) => {
                        let bytes = self.concatenated(values)?;
                        self.element(field.elem, Some(WireValue::Bytes(&bytes)))?
                    }
                    elem => self.element(elem, values.last().copied())?,
                };
                if field.omitempty && field.elem.is_go_empty(&value) {
                    Ok(None)
                } else {
                    Ok(Some(value))
                }
            }
            Shape::Pointer => {
                if values.is_empty() {
                    return Ok(absent);
                }
                match field.elem {
                    Elem::Message(_) => {
                        let bytes = self.concatenated(values)?;
                        self.element(field.elem, Some(WireValue::Bytes(&bytes)))
                            .map(Some)
                    }
                    elem => self.element(elem, values.last().copied()).map(Some),
                }
            }
            Shape::List => {
                if values.is_empty() {
                    return Ok(absent);
                }
                let mut items = Vec::with_capacity(values.len());
                for value in values {
                    self.list_items(field.elem, *value, &mut items)?;
                }
                if items.is_empty() {
                    // Only an empty packed run gets here; gogo leaves the slice nil.
                    return Ok(absent);
                }
                Ok(Some(Value::Array(items)))
            }
            Shape::Map => {
                if values.is_empty() {
                    return Ok(absent);
                }
                let mut map = Map::new();
                for value in values {
                    let WireValue::Bytes(entry) = value else {
                        return self.wrong_wire_type(value, "map entry");
                    };
                    let (key, value) = self.map_entry(field.elem, entry)?;
                    map.insert(key, value);
                }
                Ok(Some(Value::Object(map)))
            }
        }
    }

    fn concatenated(&self, values: &[WireValue<'_>]) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        for value in values {
            let WireValue::Bytes(b) = value else {
                return self.wrong_wire_type(value, "message");
            };
            bytes.extend_from_slice(b);
        }
        Ok(bytes)
    }

    /// Appends the element(s) one occurrence of a repeated field carries: one, or for numbers
    /// possibly a packed run.
    fn list_items(
        &mut self,
        elem: Elem,
        value: WireValue<'_>,
        items: &mut Vec<Value>,
    ) -> Result<()> {
        let packable = matches!(elem, Elem::Bool | Elem::Int32 | Elem::Int64);
        match value {
            WireValue::Bytes(packed) if packable => {
                let mut pos = 0;
                while pos < packed.len() {
                    let item = WireValue::Varint(self.wire(wire::read_varint(packed, &mut pos))?);
                    let index = items.len();
                    let json =
                        self.at(format_args!("[{index}]"), |d| d.element(elem, Some(item)))?;
                    items.push(json);
                }
                Ok(())
            }
            value => {
                let index = items.len();
                let json = self.at(format_args!("[{index}]"), |d| d.element(elem, Some(value)))?;
                items.push(json);
                Ok(())
            }
        }
    }

    fn map_entry(&mut self, elem: Elem, entry: &[u8]) -> Result<(String, Value)> {
        let fields = self.wire(wire::parse_fields(entry))?;
        let mut key = String::new();
        let mut value = None;
        for (number, wire_value) in fields {
            match number {
                1 => {
                    let WireValue::Bytes(bytes) = wire_value else {
                        return self.wrong_wire_type(&wire_value, "map key");
                    };
                    key = String::from_utf8_lossy(bytes).into_owned();
                }
                2 => value = Some(wire_value),
                _ => {}
            }
        }
        let json = self.at(format_args!("[{key:?}]"), |d| match (elem, value) {
            // gogo-protobuf allocates the value before decoding it: an absent `[]byte` is
            // empty, not nil, and an absent message is its zero value.
            (Elem::Bytes, None) => Ok(Value::String(String::new())),
            (Elem::Message(_), None) => d.element(elem, Some(WireValue::Bytes(&[]))),
            (elem, value) => d.element(elem, value),
        })?;
        Ok((key, json))
    }

    /// One element; `None` means absent from the wire, i.e. Go's zero value.
    fn element(&mut self, elem: Elem, value: Option<WireValue<'_>>) -> Result<Value> {
        let Some(value) = value else {
            return Ok(zero(elem));
        };
        match (elem, value) {
            (Elem::String, WireValue::Bytes(b)) => {
                Ok(Value::String(String::from_utf8_lossy(b).into_owned()))
            }
            (Elem::Bytes, WireValue::Bytes(b)) => Ok(Value::String(kgc_meta::encoding::base64(b))),
            (Elem::Bool, WireValue::Varint(v)) => Ok(Value::Bool(v != 0)),
            // Go converts with truncation: int32(v), int64(v), uint32(v).
            (Elem::Int32, WireValue::Varint(v)) => Ok(Value::from(v as i32)),
            (Elem::Int64, WireValue::Varint(v)) => Ok(Value::from(v as i64)),
            (Elem::Message(index), WireValue::Bytes(b)) => {
                self.message(schema_message(index), b).map(Value::Object)
            }
            (Elem::Time, WireValue::Bytes(b)) => self.time(b, false),
            (Elem::MicroTime, WireValue::Bytes(b)) => self.time(b, true),
            (Elem::Quantity, WireValue::Bytes(b)) => self.quantity(b),
            (Elem::IntOrString, WireValue::Bytes(b)) => self.int_or_string(b),
            (Elem::RawExtension | Elem::FieldsV1, WireValue::Bytes(b)) => self.raw_json(elem, b),
            (Elem::StringList, WireValue::Bytes(b)) => self.string_list(b),
            (elem, value) => self.wrong_wire_type(&value, elem_name(elem)),
        }
    }

    fn wrong_wire_type<T>(&self, value: &WireValue<'_>, expected: &str) -> Result<T> {
        self.error(format!(
            "wrong wire type {} for a {expected} field",
            value.wire_type_name()
        ))
    }

    /// `metav1.Time` / `MicroTime`: a `Timestamp { int64 seconds = 1; int32 nanos = 2; }`;
    /// empty bytes are the zero time. `Time` drops the nanoseconds on decode.
    fn time(&self, buf: &[u8], micro: bool) -> Result<Value> {
        if buf.is_empty() {
            return Ok(Value::Null);
        }
        let mut seconds: i64 = 0;
        let mut nanos: i32 = 0;
        for (number, value) in self.wire(wire::parse_fields(buf))? {
            match (number, value) {
                (1, WireValue::Varint(v)) => seconds = v as i64,
                (2, WireValue::Varint(v)) => nanos = v as i32,
                (1 | 2, value) => return self.wrong_wire_type(&value, "timestamp"),
                _ => {}
            }
        }
        // time.Unix(sec, nsec) normalises nsec into [0, 1e9).
        let (mut seconds, mut nanos) = (
            i128::from(seconds),
            i128::from(if micro { nanos } else { 0 }),
        );
        seconds += nanos.div_euclid(1_000_000_000);
        nanos = nanos.rem_euclid(1_000_000_000);
        if seconds == i128::from(time::GO_ZERO_TIME_UNIX) && nanos == 0 {
            return Ok(Value::Null);
        }
        // nanos < 1e9, so the microseconds fit in u32.
        let micros = micro.then_some((nanos / 1_000) as u32);
        Ok(Value::String(kgc_meta::time::rfc3339(seconds, micros)))
    }

    /// `resource.Quantity { string string = 1; }`: gogo's `Unmarshal` runs `ParseQuantity`, and
    /// encoding/json prints the canonical form.
    fn quantity(&self, buf: &[u8]) -> Result<Value> {
        let mut quantity = None;
        for (number, value) in self.wire(wire::parse_fields(buf))? {
            match (number, value) {
                (1, WireValue::Bytes(b)) => {
                    let s = String::from_utf8_lossy(b);
                    match quantity::canonical(&s) {
                        Ok(canonical) => quantity = Some(canonical.into_owned()),
                        Err(reason) => {
                            return self.error(format!("invalid quantity {s:?}: {reason}"));
                        }
                    }
                }
                (1, value) => return self.wrong_wire_type(&value, "quantity"),
                _ => {}
            }
        }
        Ok(Value::String(quantity.unwrap_or_else(|| "0".to_owned())))
    }

    /// `intstr.IntOrString { int64 type = 1; int32 intVal = 2; string strVal = 3; }`.
    fn int_or_string(&self, buf: &[u8]) -> Result<Value> {
        let (mut kind, mut int_val, mut str_val) = (0i64, 0i32, String::new());
        for (number, value) in self.wire(wire::parse_fields(buf))? {
            match (number, value) {
                (1, WireValue::Varint(v)) => kind = v as i64,
                (2, WireValue::Varint(v)) => int_val = v as i32,
                (3, WireValue::Bytes(b)) => str_val = String::from_utf8_lossy(b).into_owned(),
                (1..=3, value) => return self.wrong_wire_type(&value, "IntOrString"),
                _ => {}
            }
        }
        match kind {
            0 => Ok(Value::from(int_val)),
            1 => Ok(Value::String(str_val)),
            other => self.error(format!("impossible IntOrString.Type {other}")),
        }
    }

    /// `runtime.RawExtension` / `metav1.FieldsV1`: `{ bytes raw = 1; }` holding JSON.
    fn raw_json(&self, elem: Elem, buf: &[u8]) -> Result<Value> {
        let mut raw = None;
        for (number, value) in self.wire(wire::parse_fields(buf))? {
            match (number, value) {
                (1, WireValue::Bytes(b)) => raw = Some(b),
                (1, value) => return self.wrong_wire_type(&value, elem_name(elem)),
                _ => {}
            }
        }
        match raw {
            None => Ok(Value::Null),
            Some(raw) => serde_json::from_slice(raw)
                .or_else(|e| self.error(format!("{} does not hold JSON: {e}", elem_name(elem)))),
        }
    }

    /// `message { repeated string items = 1; }`.
    fn string_list(&self, buf: &[u8]) -> Result<Value> {
        let mut items = Vec::new();
        for (number, value) in self.wire(wire::parse_fields(buf))? {
            match (number, value) {
                (1, WireValue::Bytes(b)) => {
                    items.push(Value::String(String::from_utf8_lossy(b).into_owned()));
                }
                (1, value) => return self.wrong_wire_type(&value, "string list"),
                _ => {}
            }
        }
        // gogo leaves the slice nil when there are no items.
        Ok(if items.is_empty() {
            Value::Null
        } else {
            Value::Array(items)
        })
    }
}

fn schema_message(index: u16) -> &'static Message {
    &MESSAGES[usize::from(index)]
}

/// Go's zero value of an element, as encoding/json prints it.
fn zero(elem: Elem) -> Value {
    match elem {
        Elem::String => Value::String(String::new()),
        Elem::Bool => Value::Bool(false),
        Elem::Int32 | Elem::Int64 | Elem::IntOrString => Value::from(0),
        Elem::Time
        | Elem::MicroTime
        | Elem::RawExtension
        | Elem::FieldsV1
        | Elem::StringList
        | Elem::Bytes => Value::Null,
        Elem::Quantity => Value::String("0".to_owned()),
        Elem::Message(_) => Value::Object(Map::new()),
    }
}

fn elem_name(elem: Elem) -> &'static str {
    match elem {
        Elem::String => "string",
        Elem::Bool => "bool",
        Elem::Int32 => "int32",
        Elem::Int64 => "int64",
        Elem::Bytes => "bytes",
        Elem::Message(_) => "message",
        Elem::Time => "metav1.Time",
        Elem::MicroTime => "metav1.MicroTime",
        Elem::Quantity => "resource.Quantity",
        Elem::IntOrString => "intstr.IntOrString",
        Elem::RawExtension => "runtime.RawExtension",
        Elem::FieldsV1 => "metav1.FieldsV1",
        Elem::StringList => "string list",
    }
}

/// Decodes the protobuf `buf` of the message at `index` into a JSON object.
pub(crate) fn decode_object(
    index: u16,
    buf: &[u8],
) -> std::result::Result<Map<String, Value>, DecodeError> {
    let mut decoder = Decoder {
        path: String::new(),
        depth: 0,
    };
    decoder.message(schema_message(index), buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::KINDS;

    #[test]
    fn every_message_reference_resolves() {
        for message in MESSAGES {
            for field in message.fields {
                if let Elem::Message(index) = field.elem {
                    assert!(usize::from(index) < MESSAGES.len());
                }
                assert!(!field.inline || matches!(field.elem, Elem::Message(_)));
                assert!(field.number > 0);
            }
        }
        assert!(
            KINDS
                .windows(2)
                .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)),
            "KINDS is sorted"
        );
        assert!(KINDS.iter().all(|k| usize::from(k.2) < MESSAGES.len()));
    }
}
