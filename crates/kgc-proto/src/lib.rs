//! The Go types of Kubernetes' built-in kinds, and the two ways kube-apiserver reads request bodies
//! into them: typed decoding of JSON objects ([`typed`]) and decoding of protobuf bodies
//! ([`decode`]).
//!
//! Both are driven by one schema generated from the Go types themselves (`tools/gen_schema.py`
//! reads the struct tags and field types kubectl's binary carries, and matches each struct to the
//! official Python client's model to learn which fields clients require): every struct's fields
//! with their JSON names, `omitempty`, inline (embedded) structs, Go types (`int32`,
//! `[]v1.Container`, `v1.ResourceList`) and protobuf numbers, and the special types with their own
//! JSON forms (`metav1.Time`, `MicroTime`, `resource.Quantity`, `intstr.IntOrString`,
//! `runtime.RawExtension`, `metav1.FieldsV1`, `[]byte`).
//!
//! - [`typed::decode`] checks a JSON object against its kind's Go type as kube-apiserver's decoder
//!   (`sigs.k8s.io/json`) does, with Go's error texts (`json: cannot unmarshal string into Go
//!   struct field DeploymentSpec.spec.replicas of type int32`), normalizes values as the
//!   decode/encode round trip prints them, drops and reports unknown fields, and reports fields
//!   typed clients require; it is stricter than Go where Go stores what k8s-openapi or the Python
//!   client cannot read. [`prune_unknown_fields`] is the same walk reduced to unknown fields.
//! - [`decode`] turns a `k8s\0`-enveloped protobuf body (kubectl's typed generators send them:
//!   `kubectl create configmap|secret|deployment|…`) into the JSON object kube-apiserver would
//!   have received from a JSON client: a `runtime.Unknown` envelope `{ TypeMeta typeMeta = 1;
//!   bytes raw = 2; string contentEncoding = 3; string contentType = 4 }` whose `raw` is the
//!   object's own message (k8s.io/api `generated.proto`), printed as encoding/json prints the
//!   struct gogo-protobuf fills.
//!
//! Pure: no I/O, no panics on any input, bounded work.

#![forbid(unsafe_code)]

mod base64;
mod decode;
#[rustfmt::skip] // generated, one field per line
mod schema;
mod schema_types;
mod time;
pub mod typed;
mod wire;

use serde_json::{Map, Value};

use crate::wire::WireValue;

pub use crate::typed::prune_unknown_fields;

/// The media type of Kubernetes protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The magic prefix of every Kubernetes protobuf body.
const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The body is empty, or holds only the magic prefix.
    #[error("empty protobuf body")]
    Empty,
    /// The body does not start with `k8s\0`.
    #[error(
        "provided data does not appear to be a Kubernetes protobuf message: expected the prefix \"k8s\\x00\""
    )]
    MissingMagic,
    /// The `runtime.Unknown` envelope is not valid protobuf.
    #[error("malformed protobuf envelope (runtime.Unknown): {0}")]
    Envelope(String),
    /// The envelope lacks `typeMeta.apiVersion` or `typeMeta.kind`.
    #[error("the protobuf envelope does not name the object's {0}")]
    MissingTypeMeta(&'static str),
    /// The envelope declares a content encoding (only the identity encoding exists).
    #[error("unsupported contentEncoding {0:?} in the protobuf envelope")]
    ContentEncoding(String),
    /// The envelope declares a content type other than protobuf.
    #[error("unsupported contentType {0:?} in the protobuf envelope (expected {MEDIA_TYPE:?})")]
    ContentType(String),
    /// The envelope names a kind this decoder does not know (custom resources, unknown groups).
    #[error(
        "no kind {kind:?} is registered for version {api_version:?}: protobuf bodies are decoded for built-in kinds only"
    )]
    UnknownKind {
        /// `typeMeta.apiVersion` from the envelope.
        api_version: String,
        /// `typeMeta.kind` from the envelope.
        kind: String,
    },
    /// The object's own message is malformed.
    #[error("malformed protobuf {api_version}/{kind} object at {path}: {reason}")]
    Malformed {
        /// `typeMeta.apiVersion` from the envelope.
        api_version: String,
        /// `typeMeta.kind` from the envelope.
        kind: String,
        /// Where in the object, e.g. `spec.template.spec.containers[0].ports[1]`.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// Whether a `Content-Type` header value denotes a Kubernetes protobuf body (parameters and case
/// are ignored).
pub fn is_protobuf_content_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case(MEDIA_TYPE)
}

/// The `(apiVersion, kind)` pairs [`decode`] understands, sorted.
pub fn supported_kinds() -> impl Iterator<Item = (&'static str, &'static str)> {
    schema::KINDS
        .iter()
        .map(|&(api_version, kind, _)| (api_version, kind))
}

/// Decodes a `k8s\0`-enveloped protobuf body of a built-in kind into the JSON object kube-apiserver
/// would have received from a JSON client (apiVersion and kind set from the envelope).
pub fn decode(body: &[u8]) -> Result<Value, Error> {
    let Some(envelope) = body.strip_prefix(MAGIC) else {
        return Err(if body.is_empty() {
            Error::Empty
        } else {
            Error::MissingMagic
        });
    };
    if envelope.is_empty() {
        return Err(Error::Empty);
    }
    let unknown = Unknown::parse(envelope).map_err(Error::Envelope)?;
    if !unknown.content_encoding.is_empty() {
        return Err(Error::ContentEncoding(unknown.content_encoding));
    }
    if !unknown.content_type.is_empty() && !is_protobuf_content_type(&unknown.content_type) {
        return Err(Error::ContentType(unknown.content_type));
    }
    if unknown.kind.is_empty() {
        return Err(Error::MissingTypeMeta("kind"));
    }
    if unknown.api_version.is_empty() {
        return Err(Error::MissingTypeMeta("apiVersion"));
    }
    let key = (unknown.api_version.as_str(), unknown.kind.as_str());
    let Ok(found) =
        schema::KINDS.binary_search_by(|&(api_version, kind, _)| (api_version, kind).cmp(&key))
    else {
        return Err(Error::UnknownKind {
            api_version: unknown.api_version,
            kind: unknown.kind,
        });
    };
    let index = schema::KINDS[found].2;
    let fields = decode::decode_object(index, unknown.raw).map_err(|e| Error::Malformed {
        api_version: unknown.api_version.clone(),
        kind: unknown.kind.clone(),
        path: e.path,
        reason: e.reason,
    })?;
    // encoding/json prints the inline TypeMeta first: kind, then apiVersion.
    let mut object = Map::with_capacity(fields.len() + 2);
    object.insert("kind".to_owned(), Value::String(unknown.kind));
    object.insert("apiVersion".to_owned(), Value::String(unknown.api_version));
    object.extend(fields);
    Ok(Value::Object(object))
}

/// The `runtime.Unknown` envelope.
#[derive(Default)]
struct Unknown<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
    content_encoding: String,
    content_type: String,
}

impl<'a> Unknown<'a> {
    fn parse(buf: &'a [u8]) -> Result<Self, String> {
        let mut unknown = Unknown::default();
        for (number, value) in wire::parse_fields(buf)? {
            let bytes = match (number, value) {
                (1..=4, WireValue::Bytes(bytes)) => bytes,
                (1..=4, other) => {
                    return Err(format!(
                        "wrong wire type {} for field {number}",
                        other.wire_type_name()
                    ));
                }
                _ => continue,
            };
            match number {
                1 => {
                    // TypeMeta { string apiVersion = 1; string kind = 2; }; repeated occurrences
                    // merge, as protobuf specifies.
                    for (number, value) in
                        wire::parse_fields(bytes).map_err(|e| format!("typeMeta: {e}"))?
                    {
                        match (number, value) {
                            (1, WireValue::Bytes(b)) => unknown.api_version = utf8(b),
                            (2, WireValue::Bytes(b)) => unknown.kind = utf8(b),
                            (1 | 2, other) => {
                                return Err(format!(
                                    "typeMeta: wrong wire type {} for field {number}",
                                    other.wire_type_name()
                                ));
                            }
                            _ => {}
                        }
                    }
                }
                2 => unknown.raw = bytes,
                3 => unknown.content_encoding = utf8(bytes),
                _ => unknown.content_type = utf8(bytes),
            }
        }
        Ok(unknown)
    }
}

fn utf8(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
