//! Admission of the object a write would store: strict decoding under `fieldValidation`, then
//! the kind's own schema.
//!
//! kube-apiserver decodes every body into the kind's type, strictly unless told not to, and
//! reports what strict decoding found (repeated and unknown fields) as the request's
//! `fieldValidation` asks (kubernetes/apiserver `pkg/endpoints/handlers/rest.go`
//! `fieldValidation`; `create.go`, `update.go`, `patch.go`): `Ignore` drops them silently, `Warn`
//! (the default) drops them and answers with one `Warning` header each, `Strict` refuses the
//! request — in words that depend on what was written (an object body, a patch, an apply
//! configuration).

use kgc_meta::catalog::api_version;
use kgc_meta::gojson::go_quote;
use kgc_meta::{FieldError, ResourceInfo, Status};
use serde_json::Value;

use crate::request::{Query, RequestInfo};

/// What to do with repeated and unknown fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    /// The request's `fieldValidation` (default `Warn`).
    pub fn of(query: &Query) -> Result<Self, Status> {
        match query.get("fieldValidation").unwrap_or("Warn") {
            "Ignore" => Ok(Self::Ignore),
            "Warn" => Ok(Self::Warn),
            "Strict" => Ok(Self::Strict),
            other => Err(Status::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {other:?}"
            ))),
        }
    }
}

/// What a request wrote, which decides how `Strict` words its refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// A create or update body: 400, `<Kind> in version "<v>" cannot be handled as a <Kind>:
    /// strict decoding error: …` (`transformDecodeError`).
    Object,
    /// A JSON, merge or strategic merge patch: 422 on the field `patch`, whose value is the
    /// patched object (patch.go `applyPatchToCurrentObject`).
    Patch,
    /// A server-side apply configuration whose own text repeats a key: 400, `error strict
    /// decoding patch: …` (patch.go `applyPatcher`).
    ApplyConfiguration,
}

/// `duplicate field "<path>"` for each repeated key of a decoded body; `prefix` is `json patch `
/// for the operations of a JSON patch, as upstream words those.
pub(crate) fn duplicate_fields(paths: &[String], prefix: &str) -> Vec<String> {
    paths
        .iter()
        .map(|p| format!("{prefix}duplicate field {}", go_quote(p)))
        .collect()
}

/// Admits `obj` (a whole object of `info`, as it would be stored).
///
/// A built-in object is decoded into its Go type as kube-apiserver decodes it
/// (`kgc_proto::typed`): a value of the wrong type is refused naming the field and the type
/// (400 for a body, 422 on `patch` for a patch), the stored JSON becomes what a typed round trip
/// prints (times in UTC, canonical quantities and base64), and a field the typed clients require
/// but the object lacks is a 422 — stricter than upstream, whose objects then break every typed
/// client of that kind. A custom resource is pruned by its CRD schema. Fields the kind does not
/// know are dropped and, with `strict` (what decoding the request already found), dealt with as
/// `mode` says; then a custom resource gets its schema defaults and validation (422), ratcheted
/// against `old`, the stored object of an update (`kgc_meta::schema::validate_update`). Returns
/// the warnings to send.
pub(crate) fn admit(
    info: &ResourceInfo,
    req: &RequestInfo,
    mode: FieldValidation,
    written: Written,
    obj: &mut Value,
    old: Option<&Value>,
    mut strict: Vec<String>,
) -> Result<Vec<String>, Status> {
    let schema = info.crd.as_ref().and_then(|c| c.schemas.get(&req.version));
    let mut missing = Vec::new();
    let unknown = match schema {
        Some(schema) => kgc_meta::schema::prune(obj, schema),
        None if !info.custom => {
            let version = api_version(&req.group, &req.version);
            match kgc_proto::typed::decode(&version, &info.kind, obj) {
                Some(Ok(decoded)) => {
                    missing = decoded.missing_required;
                    decoded.unknown_fields
                }
                Some(Err(e)) => return Err(decoding_error(info, req, written, obj, &e)),
                // A kind kubectl's Go types do not have (CustomResourceDefinition): its own
                // validation in the store is the only check.
                None => Vec::new(),
            }
        }
        None => Vec::new(),
    };
    strict.extend(
        unknown
            .iter()
            .map(|f| format!("unknown field {}", go_quote(f))),
    );
    let warnings = match mode {
        FieldValidation::Strict if !strict.is_empty() => {
            return Err(strict_decoding_error(info, req, written, obj, &strict));
        }
        FieldValidation::Warn => strict,
        _ => Vec::new(),
    };
    if !missing.is_empty() {
        let errs: Vec<FieldError> = missing
            .iter()
            .map(|path| FieldError::required(path.as_str(), ""))
            .collect();
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        return Err(Status::invalid(&info.group, &info.kind, name, &errs));
    }
    if let Some(schema) = schema {
        kgc_meta::schema::apply_defaults(obj, schema);
        let errs = match old {
            Some(old) => kgc_meta::schema::validate_update(obj, old, schema),
            None => kgc_meta::schema::validate(obj, schema),
        };
        if !errs.is_empty() {
            let name = obj["metadata"]["name"].as_str().unwrap_or_default();
            return Err(Status::invalid(&info.group, &info.kind, name, &errs));
        }
    }
    Ok(warnings)
}

/// A body that does not decode into its kind's type (kubernetes/apiserver
/// `pkg/endpoints/handlers/rest.go` `transformDecodeError`; patch.go for a patched object).
fn decoding_error(
    info: &ResourceInfo,
    req: &RequestInfo,
    written: Written,
    obj: &Value,
    error: &dyn std::fmt::Display,
) -> Status {
    match written {
        Written::Patch => Status::invalid(
            "",
            "",
            "",
            &[FieldError::invalid(
                "patch",
                obj.to_string(),
                error.to_string(),
            )],
        ),
        Written::Object | Written::ApplyConfiguration => Status::bad_request(format!(
            "{kind} in version {version} cannot be handled as a {kind}: {error}",
            kind = info.kind,
            version = go_quote(&req.version),
        )),
    }
}

/// The refusal of a `Strict` request, worded as the upstream handler of `written` words it.
fn strict_decoding_error(
    info: &ResourceInfo,
    req: &RequestInfo,
    written: Written,
    obj: &Value,
    errors: &[String],
) -> Status {
    let aggregate = format!("strict decoding error: {}", errors.join(", "));
    match written {
        Written::ApplyConfiguration => {
            Status::bad_request(format!("error strict decoding patch: {aggregate}"))
        }
        _ => decoding_error(info, req, written, obj, &aggregate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn configmaps() -> (ResourceInfo, RequestInfo) {
        let info = kgc_meta::Catalog::builtin()
            .get("", "v1", "configmaps")
            .map(|i| (**i).clone())
            .expect("built in");
        let req = RequestInfo {
            group: String::new(),
            version: "v1".into(),
            namespace: Some("ns".into()),
            resource: "configmaps".into(),
            name: None,
            subresource: None,
            verb: crate::request::Verb::Create,
        };
        (info, req)
    }

    #[test]
    fn strict_refusals_are_worded_as_each_handler_words_them() {
        let (info, req) = configmaps();
        let strict = duplicate_fields(&["metadata.name".into()], "");
        let body = || json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "bogus": 1});
        let refuse = |written| {
            admit(
                &info,
                &req,
                FieldValidation::Strict,
                written,
                &mut body(),
                None,
                strict.clone(),
            )
            .unwrap_err()
        };
        let s = refuse(Written::Object);
        assert_eq!(s.code, 400);
        assert_eq!(
            s.message,
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"metadata.name\", unknown field \"bogus\""
        );
        let s = refuse(Written::Patch);
        assert_eq!(s.code, 422);
        assert!(
            s.message
                .starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
            "{}",
            s.message
        );
        assert!(s.message.ends_with(
            "strict decoding error: duplicate field \"metadata.name\", unknown field \"bogus\""
        ));
        let s = refuse(Written::ApplyConfiguration);
        assert!(
            s.message
                .starts_with("error strict decoding patch: strict decoding error: duplicate")
        );
    }

    #[test]
    fn warn_reports_and_ignore_drops() {
        let (info, req) = configmaps();
        let strict = duplicate_fields(&["[0].op".into()], "json patch ");
        let mut obj = json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "bogus": 1});
        let warnings = admit(
            &info,
            &req,
            FieldValidation::Warn,
            Written::Patch,
            &mut obj,
            None,
            strict.clone(),
        )
        .unwrap();
        assert_eq!(
            warnings,
            [
                "json patch duplicate field \"[0].op\"",
                "unknown field \"bogus\""
            ]
        );
        assert!(obj.get("bogus").is_none());
        let mut obj = json!({"kind": "ConfigMap", "bogus": 1});
        let none = admit(
            &info,
            &req,
            FieldValidation::Ignore,
            Written::Object,
            &mut obj,
            None,
            strict,
        )
        .unwrap();
        assert!(none.is_empty() && obj.get("bogus").is_none());
    }
}
