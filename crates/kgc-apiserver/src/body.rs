//! Request bodies and response bodies.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kgc_meta::Status;
use serde_json::Value;

use crate::strict::{self, Decoded};

/// kube-apiserver's request body limit for JSON and YAML (3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// The media type of a request, without parameters.
pub fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Reads a body up to [`MAX_BODY`]; a larger body is a 413, as upstream answers it
/// (`apiserver pkg/endpoints/handlers/rest.go` `limitedReadBody`): refused before a byte is
/// read when its `Content-Length` says so, else once the limit is passed. Either way the rest
/// is read and dropped in the background (see [`drain`]), so that a client still sending
/// receives the 413 instead of a reset connection, and the connection stays usable.
pub async fn read(body: Body) -> Result<Bytes, Status> {
    use futures::StreamExt;
    if axum::body::HttpBody::size_hint(&body).lower() > MAX_BODY as u64 {
        drain(body.into_data_stream());
        return Err(Status::too_large(MAX_BODY));
    }
    let mut stream = body.into_data_stream();
    let mut buf = bytes::BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            Status::bad_request(format!("the body of the request could not be read: {e}"))
        })?;
        if buf.len() + chunk.len() > MAX_BODY {
            drain(stream);
            return Err(Status::too_large(MAX_BODY));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// Reads and drops the rest of a refused body, in the background and bounded (at most
/// [`DRAIN_MAX`] bytes for at most [`DRAIN_FOR`]): the connection is then closed with nothing
/// left unread in the server's buffers, and the kernel does not reset it under the 413 the
/// client has yet to read (Go's server does the same by lingering, `closeWriteAndWait`).
fn drain(mut stream: axum::body::BodyDataStream) {
    use futures::StreamExt;
    tokio::spawn(async move {
        let mut left = DRAIN_MAX;
        let reading = async {
            while let Some(Ok(chunk)) = stream.next().await {
                left = left.saturating_sub(chunk.len() as u64);
                if left == 0 {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_FOR, reading).await;
    });
}

/// How much of a refused body is still read, and for how long.
const DRAIN_MAX: u64 = 1 << 30;
const DRAIN_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// Reads and drops the body of a request refused before it was read (401, 403, 429), up to
/// 256 KiB and for at most a second, as Go's HTTP server does for a handler that left its body
/// unread (`maxPostHandlerReadBytes`). Without it the connection closes with the body unread,
/// the kernel answers the rest of the client's write with a reset, and a client still writing
/// (kubectl sends the body after the headers) reports "broken pipe" instead of the refusal.
pub async fn discard(body: Body) {
    const UNREAD: usize = 256 * 1024;
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(1),
        axum::body::to_bytes(body, UNREAD),
    )
    .await;
}

/// Decodes an object body by its media type: JSON, YAML (as
/// `curl --data-binary @x.yaml -H 'Content-Type: application/yaml'` sends), or the protobuf
/// that kubectl's typed generators send (`kubectl create configmap|secret|deployment|…`).
///
/// JSON and YAML objects may repeat a key: the last value is kept and the repetition reported
/// (see [`crate::strict`]); protobuf cannot repeat one.
pub fn decode(media: &str, bytes: &[u8]) -> Result<Decoded, Status> {
    match media {
        "" | "application/json" | "*/*" => strict::from_json(bytes).map_err(|e| {
            Status::bad_request(format!("the body of the request is not valid JSON: {e}"))
        }),
        "application/yaml" => decode_yaml(bytes),
        kgc_proto::MEDIA_TYPE => kgc_proto::decode(bytes)
            .map(|value| Decoded {
                value,
                duplicates: Vec::new(),
            })
            .map_err(|e| {
                Status::bad_request(format!("the body of the request could not be decoded: {e}"))
            }),
        _ => Err(Status::unsupported_media_type(&[
            "application/json",
            "application/yaml",
            kgc_proto::MEDIA_TYPE,
        ])),
    }
}

/// Decodes one YAML document.
pub fn decode_yaml(bytes: &[u8]) -> Result<Decoded, Status> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Status::bad_request(format!("the body of the request is not UTF-8: {e}")))?;
    strict::from_yaml(text)
        .map_err(|e| Status::bad_request(format!("the body of the request is not valid YAML: {e}")))
}

/// Rejects an object body whose `metadata` a typed decoder could not read, as kube-apiserver's
/// decoder does (400, naming the field and the type it expected): `metadata` must be an object,
/// its string fields strings, `labels`/`annotations` maps of strings, `finalizers` a list of
/// strings, `ownerReferences` a list of objects.
pub fn check_metadata_types(obj: &Value) -> Result<(), Status> {
    let Some(meta) = obj.get("metadata") else {
        return Ok(());
    };
    let fail = |field: &str, want: &str, got: &Value| {
        let got = match got {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        Err(Status::bad_request(format!(
            "json: cannot unmarshal {got} into Go struct field ObjectMeta.{field} of type {want}"
        )))
    };
    let Some(m) = meta.as_object() else {
        return if meta.is_null() {
            Ok(())
        } else {
            fail("metadata", "v1.ObjectMeta", meta)
        };
    };
    for (k, v) in m {
        let path = format!("metadata.{k}");
        let ok = match k.as_str() {
            "name" | "generateName" | "namespace" | "uid" | "resourceVersion" | "selfLink"
            | "creationTimestamp" | "deletionTimestamp" => v.is_string() || v.is_null(),
            "generation" | "deletionGracePeriodSeconds" => v.is_i64() || v.is_null(),
            "labels" | "annotations" => {
                v.is_null()
                    || v.as_object()
                        .is_some_and(|o| o.values().all(Value::is_string))
            }
            "finalizers" => {
                v.is_null() || v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
            }
            "ownerReferences" | "managedFields" => {
                v.is_null() || v.as_array().is_some_and(|a| a.iter().all(Value::is_object))
            }
            _ => true,
        };
        if !ok {
            let want = match k.as_str() {
                "labels" | "annotations" => "map[string]string",
                "finalizers" => "[]string",
                "ownerReferences" => "[]v1.OwnerReference",
                "managedFields" => "[]v1.ManagedFieldsEntry",
                "generation" | "deletionGracePeriodSeconds" => "int64",
                _ => "string",
            };
            return fail(&path, want, v);
        }
    }
    Ok(())
}

/// A JSON response from text the store already serialized.
pub fn raw_json(code: StatusCode, text: String) -> Response {
    let mut resp = Response::new(Body::from(text));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A JSON response from a value.
pub fn json(code: StatusCode, v: &Value) -> Response {
    raw_json(code, v.to_string())
}

/// A `metav1.Status` error as an HTTP response.
pub struct ApiError(pub Status);

impl From<Status> for ApiError {
    fn from(s: Status) -> Self {
        Self(s)
    }
}

impl From<kgc_store::Error> for ApiError {
    fn from(e: kgc_store::Error) -> Self {
        if !matches!(e, kgc_store::Error::Api(_)) {
            tracing::error!(error = %e, "storage error");
        }
        Self(e.status())
    }
}

impl From<kgc_meta::Error> for ApiError {
    fn from(e: kgc_meta::Error) -> Self {
        Self(Status::bad_request(e.to_string()))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.0.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = json(code, &self.0.to_json());
        // kubernetes/apiserver `responsewriters.ErrorNegotiated`: a Status asking the client to
        // wait says so in the header clients honour as well.
        if let Some(secs) = self.0.retry_after_seconds.filter(|s| *s > 0) {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_json_yaml_and_protobuf_envelopes() {
        assert_eq!(
            decode("application/json", br#"{"a":1}"#).unwrap().value["a"],
            1
        );
        let y = decode("application/yaml", b"kind: ConfigMap\ndata:\n  k: v\n").unwrap();
        assert_eq!(y.value["data"]["k"], "v");
        assert_eq!(decode("application/json", b"{").unwrap_err().code, 400);
        assert_eq!(decode("application/yaml", b"a: [").unwrap_err().code, 400);
        assert_eq!(
            decode("application/vnd.kubernetes.protobuf", b"k8s\0")
                .unwrap_err()
                .code,
            400
        );
    }
}
