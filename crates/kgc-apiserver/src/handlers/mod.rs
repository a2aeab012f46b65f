//! Resource requests: GET, LIST, WATCH, CREATE, UPDATE, PATCH, DELETE, DELETECOLLECTION, one
//! module per verb as kubernetes/apiserver pkg/endpoints/handlers has them; this module holds
//! what they share (handlers/rest.go).

mod binding;
pub(crate) mod create;
mod delete;
mod eviction;
pub(crate) mod fieldmanager;
mod get;
pub(crate) mod patch;
mod scale;
pub(crate) mod update;
mod watch;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use kgc_meta::catalog::api_version;
use kgc_meta::{ResourceInfo, Status};
use kgc_store::StoredObject;
use serde_json::Value;

use crate::ApiServer;
use crate::admission;
use crate::body::{self, ApiError, media_type};
use crate::conversion;
use crate::request::{Query, RequestInfo, Verb};
use crate::table::{self, IncludeObject};

pub(super) type Result<T, E = ApiError> = std::result::Result<T, E>;

/// Serves one resource request.
pub async fn serve(
    api: &ApiServer,
    req: RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response> {
    let info = api
        .store
        .catalog()
        .get(&req.group, &req.version, &req.resource)
        .cloned()
        .ok_or_else(Status::no_such_resource)?;
    let collection_verb = matches!(req.verb, Verb::List | Verb::Watch);
    match (info.namespaced(), &req.namespace) {
        (false, Some(_)) => return Err(Status::no_such_resource().into()),
        (true, None) if !collection_verb => {
            return Err(Status::method_not_allowed(format!(
                "{} is not supported on resources of kind {:?} without a namespace",
                req.verb.as_str(),
                info.group_resource().to_string()
            ))
            .into());
        }
        _ => {}
    }
    // A pod's log and its connect subresources are served apart from the object's storage.
    if info.group.is_empty() && info.plural == "pods" {
        match (req.subresource.as_deref(), req.verb) {
            (Some("log"), Verb::Get) => return crate::pod_log::serve(api, &req, query).await,
            (Some("exec" | "attach" | "portforward"), Verb::Get | Verb::Create) => {
                return Err(crate::pod_connect::refuse(api, &req, query).into());
            }
            _ => {}
        }
    }
    if let Some(sub) = &req.subresource {
        let known = info.subresource(sub).is_some();
        let verb_ok = if matches!(sub.as_str(), "binding" | "eviction") {
            req.verb == Verb::Create
        } else {
            matches!(req.verb, Verb::Get | Verb::Update | Verb::Patch)
        };
        if !known || !verb_ok {
            return Err(Status::no_such_resource().into());
        }
    } else if !info.supports(req.verb.as_str()) {
        return Err(Status::method_not_allowed(format!(
            "{} is not supported on resources of kind {:?}",
            req.verb.as_str(),
            info.group_resource().to_string()
        ))
        .into());
    }
    check_write_options(&req, query)?;
    // A version a conversion webhook converts, once the request is known to be valid.
    if crate::conversion_webhook::applies(&info, &req) {
        return crate::conversion_webhook::serve(api, &info, req, query, headers, body).await;
    }
    let ns = req.namespace.clone().unwrap_or_default();
    let name = req.name.clone().unwrap_or_default();
    match req.subresource.as_deref() {
        Some("scale") => return scale::scale(api, &info, &req, query, headers, body).await,
        Some("binding") => return binding::bind(api, &info, &req, query, headers, body).await,
        Some("eviction") => return eviction::evict(api, &info, &req, query, headers, body).await,
        _ => {}
    }
    let table = table_request(headers, query)?;
    match req.verb {
        Verb::Get => get::get(api, &info, &req, query, &ns, &name, table).await,
        Verb::List => get::list(api, &info, &req, query, table).await,
        Verb::Watch => watch::watch(api, &info, &req, query, table).await,
        Verb::Create => create::create(api, &info, &req, query, headers, body).await,
        Verb::Update => update::update(api, &info, &req, query, headers, body).await,
        Verb::Patch => patch::patch(api, &info, &req, query, headers, body).await,
        Verb::Delete => delete::delete(api, &info, &req, query, body).await,
        Verb::DeleteCollection => delete::delete_collection(api, &info, &req, query, body).await,
    }
}

/// Refuses a write whose options are invalid (a `fieldManager` too long or unprintable), as
/// upstream validates CreateOptions, UpdateOptions and PatchOptions.
fn check_write_options(req: &RequestInfo, query: &Query) -> Result<(), Status> {
    let options = match req.verb {
        Verb::Create => "CreateOptions",
        Verb::Update => "UpdateOptions",
        Verb::Patch => "PatchOptions",
        _ => return Ok(()),
    };
    crate::apply::validate_field_manager(query, options)
}

/// The version stored objects must be converted to for this request, when it is not the
/// storage version (see [`crate::conversion`]).
pub(crate) fn served_version(info: &ResourceInfo, req: &RequestInfo) -> Option<String> {
    conversion::converts(info, &req.version).then(|| req.version.clone())
}

/// An object's JSON as served: the stored text, or converted to `version`.
pub(crate) fn served_text<'a>(
    info: &ResourceInfo,
    raw: &'a str,
    version: Option<&str>,
) -> std::borrow::Cow<'a, str> {
    match version {
        None => std::borrow::Cow::Borrowed(raw),
        Some(v) => {
            let mut value: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
            conversion::from_storage(info, v, &mut value);
            std::borrow::Cow::Owned(value.to_string())
        }
    }
}

pub(super) fn object(
    info: &ResourceInfo,
    req: &RequestInfo,
    code: StatusCode,
    o: &StoredObject,
) -> Response {
    let version = served_version(info, req);
    body::raw_json(
        code,
        served_text(info, &o.raw, version.as_deref()).into_owned(),
    )
}

/// A Table was asked for (`Accept: application/json;as=Table;…`): its version and which object
/// each row carries.
pub(super) type TableRequest = Option<(&'static str, IncludeObject)>;

pub(crate) fn table_request(headers: &HeaderMap, query: &Query) -> Result<TableRequest> {
    let accept = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let Some(version) = table::wants_table(accept) else {
        return Ok(None);
    };
    let include = IncludeObject::parse(query.get("includeObject")).map_err(Status::bad_request)?;
    Ok(Some((version, include)))
}

/// Decodes a create or update body and checks its `apiVersion` and `kind` against the URL,
/// filling them in when absent. Also returns the body's repeated fields, as strict decoding
/// reports them. The object stays in the request's version: it is admitted (typed decoding,
/// schema) in that version, then converted with [`to_storage`].
pub(crate) async fn object_body(
    info: &ResourceInfo,
    req: &RequestInfo,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Value, Vec<String>)> {
    let bytes = body::read(body).await?;
    let decoded = body::decode(&media_type(headers), &bytes)?;
    let strict = admission::duplicate_fields(&decoded.duplicates, "");
    let mut obj = decoded.value;
    // Built-in kinds are decoded into their types at admission; a custom resource's metadata is
    // checked here, as its unstructured decoding does.
    if info.custom {
        body::check_metadata_types(&obj)?;
    }
    if !obj.is_object() {
        return Err(Status::bad_request("the body of the request must be a JSON object").into());
    }
    let want_version = api_version(&req.group, &req.version);
    let (want_version, want_kind) =
        match req.subresource.as_deref().and_then(|s| info.subresource(s)) {
            Some(s) => (
                api_version(
                    &s.group,
                    if s.group == info.group {
                        &req.version
                    } else {
                        &s.version
                    },
                ),
                s.kind.clone(),
            ),
            None => (want_version, info.kind.clone()),
        };
    for (field, label, want) in [
        ("apiVersion", "API version", want_version.as_str()),
        ("kind", "kind", want_kind.as_str()),
    ] {
        match obj.get(field).and_then(Value::as_str) {
            None | Some("") => obj[field] = Value::from(want),
            Some(got) if got != want => {
                return Err(Status::bad_request(format!(
                    "the {label} in the data ({got}) does not match the expected {label} ({want})"
                ))
                .into());
            }
            Some(_) => {}
        }
    }
    Ok((obj, strict))
}

/// Converts an admitted object of the request's version to the storage version (the main
/// resource and `/status`; a subresource of its own kind is not stored as such).
pub(super) fn to_storage(info: &ResourceInfo, req: &RequestInfo, obj: &mut Value) {
    if req.subresource.is_none() || req.subresource.as_deref() == Some("status") {
        conversion::to_storage(info, &req.version, obj);
    }
}

/// The body of a CREATE or UPDATE as it is to be stored: decoded, admitted (typed decoding or
/// the CRD schema, `fieldValidation`), in the storage version, and allowed by RBAC's write
/// checks; with the warnings to send.
pub(super) async fn admitted_body(
    api: &crate::ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &crate::request::Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Value, Vec<String>)> {
    let (obj, strict) = object_body(info, req, headers, body).await?;
    admitted_object(api, info, req, query, obj, strict)
}

/// [`admitted_body`] for an object already decoded, in the request's version.
pub(crate) fn admitted_object(
    api: &crate::ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &crate::request::Query,
    mut obj: Value,
    strict: Vec<String>,
) -> Result<(Value, Vec<String>)> {
    let mode = admission::FieldValidation::of(query)?;
    // The stored object of a custom resource's update, for the schema's ratcheting.
    let old: Option<Value> = match (&info.crd, req.verb, req.name.as_deref()) {
        (Some(_), crate::request::Verb::Update, Some(name)) => api
            .store
            .get(
                &info.group_resource(),
                req.namespace.as_deref().unwrap_or_default(),
                name,
            )
            .and_then(|stored| serde_json::from_str(&stored.raw).ok()),
        _ => None,
    };
    let warnings = admission::admit(
        info,
        req,
        mode,
        admission::Written::Object,
        &mut obj,
        old.as_ref(),
        strict,
    )?;
    to_storage(info, req, &mut obj);
    crate::authz::admit_write(api.rbac.as_deref(), info, req, &obj)?;
    Ok((obj, warnings))
}

/// Adds `Warning: 299 - "…"` headers, as kube-apiserver reports warnings.
pub(crate) fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - {:?}", w);
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}
