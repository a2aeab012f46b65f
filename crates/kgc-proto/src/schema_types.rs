//! The shape of the generated schema in `schema.rs`.

use serde_json::Value;

/// One Go struct with protobuf tags (named in a comment above it in `schema.rs`, with the Python
/// client's model it was matched to), fields in declaration order (the order encoding/json
/// prints).
pub(crate) struct Message {
    /// Go's `reflect.Type.String()`, e.g. `v1.PodSpec`.
    pub(crate) go_type: &'static str,
    pub(crate) fields: &'static [Field],
}

/// One struct field that travels in protobuf.
pub(crate) struct Field {
    /// The protobuf field number.
    pub(crate) number: u32,
    /// The JSON name (meaningless when `inline`).
    pub(crate) json: &'static str,
    /// `json:",omitempty"`: zero scalars, nil pointers and empty slices or maps are left out.
    pub(crate) omitempty: bool,
    /// An embedded struct without a JSON name (`json:",inline"`): its fields join the parent's.
    pub(crate) inline: bool,
    pub(crate) shape: Shape,
    pub(crate) elem: Elem,
    /// Go's `reflect.Type.String()` of the field's type, pointers dereferenced (`int32`,
    /// `[]v1.Container`, `map[string]string`, `v1.ResourceList`): what encoding/json's
    /// `UnmarshalTypeError` names.
    pub(crate) go_type: &'static str,
    /// The same for one element: a list item or map value (`v1.Container`, `string`); `go_type`
    /// again for the other shapes.
    pub(crate) item_type: &'static str,
    /// The official Python client's model requires the field (a non-`Optional` attribute): its
    /// typed clients reject objects without it.
    pub(crate) required: bool,
}

/// How the Go field holds its element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `T`: always present in Go (the zero value when absent from the wire).
    Value,
    /// `*T`: nil when absent from the wire.
    Pointer,
    /// `[]T`: a repeated field (packed or not for numbers); nil when absent.
    List,
    /// `map[string]T`: repeated `{key = 1, value = 2}` entries; nil when absent.
    Map,
}

/// The element type of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    String,
    Bool,
    Int32,
    Int64,
    /// `[]byte`: base64 in JSON.
    Bytes,
    /// A generated message: index into `MESSAGES`.
    Message(u16),
    /// `metav1.Time`: RFC 3339, seconds precision, `null` when zero.
    Time,
    /// `metav1.MicroTime`: RFC 3339 with microseconds, `null` when zero.
    MicroTime,
    /// `resource.Quantity`: its string form.
    Quantity,
    /// `intstr.IntOrString`: a JSON number or string.
    IntOrString,
    /// `runtime.RawExtension`: embedded JSON.
    RawExtension,
    /// `metav1.FieldsV1`: embedded JSON.
    FieldsV1,
    /// A named `[]string` wrapped as `message { repeated string items = 1; }` (`ExtraValue`,
    /// `metav1.Verbs`).
    StringList,
}

impl Elem {
    /// encoding/json's `isEmptyValue` for a non-pointer field of this type, printed as JSON:
    /// `false`, `0`, `""`, and a nil or empty `[]byte` or named string slice. Structs (messages
    /// and the special types) are never empty.
    pub(crate) fn is_go_empty(self, value: &Value) -> bool {
        match self {
            Elem::String | Elem::Bytes => {
                value.as_str().is_some_and(str::is_empty) || value.is_null()
            }
            Elem::Bool => value == &Value::Bool(false),
            Elem::Int32 | Elem::Int64 => value.as_f64() == Some(0.0),
            Elem::StringList => value.as_array().is_some_and(Vec::is_empty) || value.is_null(),
            Elem::Message(_)
            | Elem::Time
            | Elem::MicroTime
            | Elem::Quantity
            | Elem::IntOrString
            | Elem::RawExtension
            | Elem::FieldsV1 => false,
        }
    }
}
