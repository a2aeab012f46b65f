//! Continue tokens in kube-apiserver's format (`kubernetes/apiserver pkg/storage/continue.go`):
//! base64url without padding of `{"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key>"}`, where
//! `start` is the key to resume at, relative to the listed collection (`name\0` within a
//! namespace or for a cluster-scoped resource, `namespace/name\0` across namespaces) and `rv` the
//! revision every page is served at (`-1`: the latest, in the token a 410 hands out). Clients
//! treat tokens as opaque, but tools that log or compare them see what they would see upstream.

use std::fmt::Write as _;

use kgc_meta::Status;
use serde_json::Value;

use crate::history::Key;

/// The only token version upstream knows.
const VERSION: &str = "meta.k8s.io/v1";

/// A decoded continue token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continue {
    /// The revision the list is served at; `None` for the latest (upstream's `rv` of -1).
    pub revision: Option<u64>,
    /// The first key to return (included): the key after the previous page's last.
    pub start: Key,
}

impl Continue {
    /// The token that resumes a list after `last` (the previous page's last object) at `rv`.
    pub(crate) fn after(last: &Key, rv: u64) -> Self {
        let (ns, name) = last;
        Self {
            revision: Some(rv),
            start: (ns.clone(), format!("{name}\0")),
        }
    }

    /// The same position at the latest revision: what a client may continue with, inconsistently,
    /// once this token's revision is gone (etcd3 `handleCompactedErrorForPaging`).
    pub fn at_latest(&self) -> Self {
        Self {
            revision: None,
            start: self.start.clone(),
        }
    }

    /// Decodes a token of a list in `namespace` (`None`: across namespaces, or a cluster-scoped
    /// resource). Errors are the 400 upstream answers (`DecodeContinue`, wrapped by
    /// `invalid continue token: `).
    pub fn decode(token: &str, namespace: Option<&str>) -> Result<Self, Status> {
        let invalid = |detail: String| {
            Status::bad_request(format!(
                "invalid continue token: continue key is not valid{detail}"
            ))
        };
        let data = base64url_decode(token)
            .map_err(|at| invalid(format!(": illegal base64 data at input byte {at}")))?;
        let fields = token_fields(&data).map_err(|e| invalid(format!(": {e}")))?;
        if fields.version != VERSION {
            return Err(invalid(format!(
                ": server does not recognize this encoded version {}",
                fields.version
            )));
        }
        if fields.rv == 0 {
            return Err(invalid(
                ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into(),
            ));
        }
        if fields.start.is_empty() {
            return Err(invalid(
                ": encoded start key empty (version meta.k8s.io/v1)".into(),
            ));
        }
        // Upstream's defence against path traversal: the key must already be clean.
        let rooted = if fields.start.starts_with('/') {
            fields.start.clone()
        } else {
            format!("/{}", fields.start)
        };
        if clean_path(&rooted) != rooted {
            return Err(invalid(format!(": {}", fields.start)));
        }
        let relative = &rooted[1..];
        let start = match namespace {
            Some(ns) => (ns.to_owned(), relative.to_owned()),
            None => match relative.split_once('/') {
                Some((ns, name)) => (ns.to_owned(), name.to_owned()),
                None => (String::new(), relative.to_owned()),
            },
        };
        Ok(Self {
            revision: u64::try_from(fields.rv).ok(),
            start,
        })
    }

    /// The token of a list in `namespace` (as for [`Continue::decode`]).
    pub fn encode(&self, namespace: Option<&str>) -> String {
        let (ns, name) = &self.start;
        let start = match namespace {
            None if !ns.is_empty() => format!("{ns}/{name}"),
            _ => name.clone(),
        };
        let rv = self
            .revision
            .map_or(-1, |rv| i64::try_from(rv).unwrap_or(i64::MAX));
        let json = format!(
            "{{\"v\":\"{VERSION}\",\"rv\":{rv},\"start\":{}}}",
            Value::from(start)
        );
        base64url_encode(json.as_bytes())
    }
}

/// The fields of a token as Go's `json.Unmarshal` fills `continueToken` (missing ones zero,
/// unknown ones ignored, keys matched case-insensitively).
struct Fields {
    version: String,
    rv: i64,
    start: String,
}

/// Reads the token's JSON; the error is Go's wording for the common failures.
fn token_fields(data: &[u8]) -> Result<Fields, String> {
    let value: Value = serde_json::from_slice(data).map_err(|e| {
        if e.is_eof() {
            "unexpected end of JSON input".to_owned()
        } else {
            // serde's position (line and column, 1-based) of the offending byte.
            let line_start: usize = data
                .split(|b| *b == b'\n')
                .take(e.line().saturating_sub(1))
                .map(|l| l.len() + 1)
                .sum();
            let at = data
                .get(line_start + e.column().saturating_sub(1))
                .map_or(' ', |b| char::from(*b));
            format!("invalid character {at:?} looking for beginning of value")
        }
    })?;
    let mut fields = Fields {
        version: String::new(),
        rv: 0,
        start: String::new(),
    };
    let object = match &value {
        Value::Object(o) => o,
        Value::Null => return Ok(fields),
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type storage.continueToken",
                json_type(other)
            ));
        }
    };
    let mismatch = |field: &str, v: &Value, go_type: &str| {
        format!(
            "json: cannot unmarshal {} into Go struct field continueToken.{field} of type {go_type}",
            json_type(v)
        )
    };
    for (key, v) in object {
        match key.to_ascii_lowercase().as_str() {
            "v" | "start" if v.is_null() => {}
            "v" => fields.version = v.as_str().ok_or_else(|| mismatch(key, v, "string"))?.into(),
            "start" => fields.start = v.as_str().ok_or_else(|| mismatch(key, v, "string"))?.into(),
            "rv" if v.is_null() => {}
            "rv" => fields.rv = v.as_i64().ok_or_else(|| mismatch(key, v, "int64"))?,
            _ => {}
        }
    }
    Ok(fields)
}

/// How Go's `UnmarshalTypeError` names a JSON value.
fn json_type(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Go's `base64.RawURLEncoding.EncodeToString`.
fn base64url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for shift in [18u32, 12, 6, 0].into_iter().take(chunk.len() + 1) {
            out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
        }
    }
    out
}

/// Go's `base64.RawURLEncoding.DecodeString`: line breaks are skipped, trailing bits ignored;
/// the error is the offset Go reports (`illegal base64 data at input byte N`).
fn base64url_decode(text: &str) -> Result<Vec<u8>, usize> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    let (mut acc, mut bits, mut in_quantum) = (0u32, 0u32, 0usize);
    for (i, c) in text.bytes().enumerate() {
        if c == b'\n' || c == b'\r' {
            continue;
        }
        let v = ALPHABET.iter().position(|a| *a == c).ok_or(i)?;
        acc = (acc << 6) | v as u32;
        bits += 6;
        in_quantum = (in_quantum + 1) % 4;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A lone character cannot encode a byte.
    if in_quantum == 1 {
        return Err(text.len() - 1);
    }
    Ok(out)
}

/// Go's `path.Clean` of a rooted path: no empty, `.` or `..` elements, no trailing slash.
fn clean_path(rooted: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in rooted.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let mut out = String::with_capacity(rooted.len());
    for p in &parts {
        let _ = write!(out, "/{p}");
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ns: &str, name: &str) -> Key {
        (ns.to_owned(), name.to_owned())
    }

    #[test]
    fn tokens_are_upstreams_base64url_json() {
        let t = Continue::after(&key("ns", "cm-3"), 42);
        let encoded = t.encode(Some("ns"));
        let json = String::from_utf8(base64url_decode(&encoded).unwrap()).unwrap();
        assert_eq!(
            json,
            r#"{"v":"meta.k8s.io/v1","rv":42,"start":"cm-3\u0000"}"#
        );
        assert!(!encoded.contains('=') && !encoded.contains('+') && !encoded.contains('/'));
        assert_eq!(Continue::decode(&encoded, Some("ns")).unwrap(), t);

        // Across namespaces the key carries the namespace; cluster-scoped keys do not.
        let across = Continue::after(&key("ns", "cm-3"), 42);
        let json = base64url_decode(&across.encode(None)).unwrap();
        assert!(
            String::from_utf8(json)
                .unwrap()
                .contains(r#""start":"ns/cm-3\u0000""#)
        );
        assert_eq!(
            Continue::decode(&across.encode(None), None).unwrap(),
            across
        );
        let cluster = Continue::after(&key("", "node-1"), 7);
        assert_eq!(
            Continue::decode(&cluster.encode(None), None).unwrap(),
            cluster
        );

        // The token a 410 hands out continues at the latest revision (rv -1).
        let latest = t.at_latest().encode(Some("ns"));
        let json = String::from_utf8(base64url_decode(&latest).unwrap()).unwrap();
        assert!(json.contains(r#""rv":-1"#), "{json}");
        assert_eq!(
            Continue::decode(&latest, Some("ns")).unwrap().revision,
            None
        );
    }

    #[test]
    fn a_token_upstream_wrote_decodes() {
        // kube-apiserver's token for a page of `default` configmaps ending at `kube-root-ca.crt`.
        let upstream = base64url_encode(
            br#"{"v":"meta.k8s.io/v1","rv":1234,"start":"kube-root-ca.crt\u0000"}"#,
        );
        let c = Continue::decode(&upstream, Some("default")).unwrap();
        assert_eq!(c.revision, Some(1234));
        assert_eq!(c.start, key("default", "kube-root-ca.crt\0"));
    }

    #[test]
    fn bad_tokens_get_upstreams_400s() {
        let msg = |token: &str| Continue::decode(token, Some("ns")).unwrap_err().message;
        let enc = |json: &str| base64url_encode(json.as_bytes());
        assert_eq!(
            msg("not*base64"),
            "invalid continue token: continue key is not valid: illegal base64 data at input byte 3"
        );
        assert_eq!(
            msg("a"),
            "invalid continue token: continue key is not valid: illegal base64 data at input byte 0"
        );
        assert_eq!(
            msg(&enc("{")),
            "invalid continue token: continue key is not valid: unexpected end of JSON input"
        );
        assert_eq!(
            msg(&enc("x")),
            "invalid continue token: continue key is not valid: invalid character 'x' looking for beginning of value"
        );
        assert_eq!(
            msg(&enc(r#"{"v":"meta.k8s.io/v1","rv":"1","start":"a"}"#)),
            "invalid continue token: continue key is not valid: json: cannot unmarshal string into Go struct field continueToken.rv of type int64"
        );
        assert_eq!(
            msg(&enc(r#"{"v":"meta.k8s.io/v2","rv":1,"start":"a"}"#)),
            "invalid continue token: continue key is not valid: server does not recognize this encoded version meta.k8s.io/v2"
        );
        assert_eq!(
            msg(&enc(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#)),
            "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
        assert_eq!(
            msg(&enc(r#"{"v":"meta.k8s.io/v1","rv":3}"#)),
            "invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
        );
        assert_eq!(
            msg(&enc(
                r#"{"v":"meta.k8s.io/v1","rv":3,"start":"../secrets/x"}"#
            )),
            "invalid continue token: continue key is not valid: ../secrets/x"
        );
        assert_eq!(Continue::decode("", Some("ns")).unwrap_err().code, 400);
    }

    #[test]
    fn clean_path_is_gos() {
        for (path, clean) in [
            ("/", "/"),
            ("/a", "/a"),
            ("/a/", "/a"),
            ("//a", "/a"),
            ("/a/./b", "/a/b"),
            ("/a/../b", "/b"),
            ("/../a", "/a"),
        ] {
            assert_eq!(clean_path(path), clean, "{path}");
        }
    }
}
