//! The shape of the generated schema in `schema.rs`.

/// One Go struct with protobuf tags (named in a comment above it in `schema.rs`), fields in
/// declaration order (the order encoding/json prints).
pub(crate) struct Message {
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
