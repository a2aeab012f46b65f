//! Resource requests: GET, LIST, WATCH, CREATE, UPDATE, PATCH, DELETE, DELETECOLLECTION.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use kgc_meta::catalog::api_version;
use kgc_meta::{DeleteOptions, FieldSelector, LabelSelector, Reason, ResourceInfo, Status};
use kgc_store::{Deleted, ListOptions, ReadFrom, StoredObject, WatchFilter};
use serde_json::Value;

use crate::ApiServer;
use crate::admission::{self, FieldValidation, Written};
use crate::body::{self, ApiError, media_type};
use crate::consistency::{self, WatchFrom};
use crate::conversion;
use crate::request::{Query, RequestInfo, Verb};
use crate::table::{self, IncludeObject};
use crate::watch::{self, WatchParams};

type Result<T, E = ApiError> = std::result::Result<T, E>;

/// The warning kube-apiserver attaches to a Job DELETE without a propagation policy
/// (`pkg/registry/batch/job/storage/storage.go`).
const JOB_ORPHAN_WARNING: &str = "299 - \"child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning\"";

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
    if let Some(sub) = &req.subresource {
        let known = info.subresource(sub).is_some();
        let verb_ok = matches!(req.verb, Verb::Get | Verb::Update | Verb::Patch);
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
    let ns = req.namespace.clone().unwrap_or_default();
    let name = req.name.clone().unwrap_or_default();
    if req.subresource.as_deref() == Some("scale") {
        return scale(api, &info, &req, query, headers, body).await;
    }
    let table = table_request(headers, query)?;
    match req.verb {
        Verb::Get => get(api, &info, &req, query, &ns, &name, table).await,
        Verb::List => list(api, &info, &req, query, table).await,
        Verb::Watch => watch(api, &info, &req, query, table).await,
        Verb::Create => {
            let mode = FieldValidation::of(query)?;
            let (mut obj, strict) = object_body(&info, &req, headers, body).await?;
            let warnings = admission::admit(&info, &req, mode, Written::Object, &mut obj, strict)?;
            to_storage(&info, &req, &mut obj);
            crate::authz::admit_write(api.rbac.as_deref(), &info, &req, &obj)?;
            api.admit_owner_references(&info, &req, None, &obj)?;
            let tracking = Tracking::new(&info, &req, query, headers);
            let obj = tracking.record(None, &obj);
            let created = api.store.create(&info, &ns, obj, query.dry_run()?).await?;
            Ok(with_warnings(
                object(&info, &req, StatusCode::CREATED, &created),
                &warnings,
            ))
        }
        Verb::Update => {
            let mode = FieldValidation::of(query)?;
            let (mut obj, strict) = object_body(&info, &req, headers, body).await?;
            let warnings = admission::admit(&info, &req, mode, Written::Object, &mut obj, strict)?;
            to_storage(&info, &req, &mut obj);
            crate::authz::admit_write(api.rbac.as_deref(), &info, &req, &obj)?;
            let tracking = Tracking::new(&info, &req, query, headers);
            let updated = api
                .store
                .update(
                    &info,
                    &ns,
                    &name,
                    req.subresource.as_deref(),
                    query.dry_run()?,
                    |current| {
                        crate::authz::admit_update(&info, &current, &obj)?;
                        api.admit_owner_references(&info, &req, Some(&current), &obj)?;
                        Ok(tracking.record(Some(&current), &obj))
                    },
                )
                .await?;
            Ok(with_warnings(
                object(&info, &req, StatusCode::OK, updated.object()),
                &warnings,
            ))
        }
        Verb::Patch => patch(api, &info, &req, query, headers, body).await,
        Verb::Delete => delete(api, &info, &req, query, body).await,
        Verb::DeleteCollection => delete_collection(api, &info, &req, query, body).await,
    }
}

/// The version stored objects must be converted to for this request, when it is not the
/// storage version (see [`crate::conversion`]).
pub(crate) fn served_version(info: &ResourceInfo, req: &RequestInfo) -> Option<String> {
    (req.version != conversion::storage_version(info)).then(|| req.version.clone())
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

fn object(info: &ResourceInfo, req: &RequestInfo, code: StatusCode, o: &StoredObject) -> Response {
    let version = served_version(info, req);
    body::raw_json(
        code,
        served_text(info, &o.raw, version.as_deref()).into_owned(),
    )
}

/// A Table was asked for (`Accept: application/json;as=Table;…`): its version and which object
/// each row carries.
type TableRequest = Option<(&'static str, IncludeObject)>;

fn table_request(headers: &HeaderMap, query: &Query) -> Result<TableRequest> {
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

/// GET, "not older than" a `resourceVersion` when one is given.
async fn get(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    ns: &str,
    name: &str,
    table: TableRequest,
) -> Result<Response> {
    if let Some(rv) = consistency::get(query)? {
        api.store.wait_for_revision(rv).await?;
    }
    let o = api
        .store
        .get_or_not_found(&info.group_resource(), ns, name)?;
    if let Some((version, include)) = table {
        let served = served_text(info, &o.raw, served_version(info, req).as_deref()).into_owned();
        let value: Value = serde_json::from_str(&served).unwrap_or(Value::Null);
        let t = table::table_of_values(
            info,
            [&value],
            version,
            &o.resource_version.to_string(),
            None,
            &include,
            true,
            jiff::Timestamp::now(),
        );
        return Ok(body::json(StatusCode::OK, &t));
    }
    Ok(object(info, req, StatusCode::OK, &o))
}

/// The label and field selectors of a LIST or WATCH; errors are 400s.
fn selectors(info: &ResourceInfo, query: &Query) -> Result<(LabelSelector, FieldSelector)> {
    let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or(""))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").unwrap_or(""))?;
    for r in fields.requirements() {
        if !info.supports_field(&r.field) {
            return Err(
                Status::bad_request(format!("field label not supported: {}", r.field)).into(),
            );
        }
    }
    Ok((labels, fields))
}

/// Selectors, paging and the state to read from the query: selector errors and malformed
/// revisions or tokens are 400s, invalid combinations upstream's 422s (see [`consistency`]).
fn list_options(info: &ResourceInfo, req: &RequestInfo, query: &Query) -> Result<ListOptions> {
    let (labels, fields) = selectors(info, query)?;
    let limit = query.int("limit")?.filter(|l| *l > 0).map(|l| l as usize);
    let consistency::ListRead { read, ignore_limit } =
        consistency::list(query, req.namespace.as_deref(), limit.is_some())?;
    Ok(ListOptions {
        namespace: req.namespace.clone(),
        labels,
        fields,
        limit: limit.filter(|_| !ignore_limit),
        read,
    })
}

async fn list(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    table: TableRequest,
) -> Result<Response> {
    let opts = list_options(info, req, query)?;
    if let Some(rv) = opts.read.needs_revision() {
        api.store.wait_for_revision(rv).await?;
    }
    let page = match api.store.list(&info.group_resource(), &opts) {
        Ok(page) => page,
        Err(e) => {
            let status = e.status();
            // A continued list whose revision is gone: the Status carries the token that
            // continues at the latest revision (etcd3 `handleCompactedErrorForPaging`).
            if let ReadFrom::Continue(token) = &opts.read
                && status.is(Reason::Expired)
            {
                let mut body = status.to_json();
                body["metadata"]["continue"] =
                    Value::from(token.at_latest().encode(req.namespace.as_deref()));
                return Ok(body::json(StatusCode::GONE, &body));
            }
            return Err(e.into());
        }
    };
    if let Some((version, include)) = table {
        let t = table::table(
            info,
            page.items.iter().map(|o| &**o),
            version,
            &page.resource_version.to_string(),
            page.continue_token.as_deref(),
            &include,
            true,
            jiff::Timestamp::now(),
        );
        return Ok(body::json(StatusCode::OK, &t));
    }
    let size: usize = page.items.iter().map(|o| o.raw.len() + 1).sum();
    let mut out = String::with_capacity(size + 256);
    out.push_str("{\"kind\":");
    out.push_str(&Value::from(info.list_kind.as_str()).to_string());
    out.push_str(",\"apiVersion\":");
    out.push_str(&Value::from(api_version(&req.group, &req.version)).to_string());
    out.push_str(",\"metadata\":{\"resourceVersion\":\"");
    out.push_str(&page.resource_version.to_string());
    out.push('"');
    if let Some(c) = &page.continue_token {
        out.push_str(",\"continue\":");
        out.push_str(&Value::from(c.as_str()).to_string());
    }
    out.push_str("},\"items\":[");
    let version = served_version(info, req);
    for (i, o) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&served_text(info, &o.raw, version.as_deref()));
    }
    out.push_str("]}");
    Ok(body::raw_json(StatusCode::OK, out))
}

async fn watch(
    api: &ApiServer,
    info: &Arc<ResourceInfo>,
    req: &RequestInfo,
    query: &Query,
    table: TableRequest,
) -> Result<Response> {
    let (labels, mut fields) = selectors(info, query)?;
    // `/watch/.../pods/p1` and `GET .../pods/p1?watch=true` watch one object.
    if let Some(name) = &req.name {
        fields = FieldSelector::parse(&format!("metadata.name={name}"))?;
    }
    let start = consistency::watch(query)?;
    let filter = WatchFilter {
        gr: info.group_resource(),
        namespace: req.namespace.clone(),
        labels,
        fields,
    };
    let timeout = match query.int("timeoutSeconds")? {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        // Upstream picks 30–60 minutes at random so that watches do not all end together.
        _ => Duration::from_secs(1800 + u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * 7),
    };
    let params = WatchParams {
        kind: info.kind.clone(),
        api_version: api_version(&req.group, &req.version),
        timeout,
        // The catalog's entry, shared: a watch lives for an hour.
        info: Arc::clone(info),
        version: served_version(info, req),
        table: table.map(|(version, include)| crate::watch::TableParams {
            info: Arc::clone(info),
            version,
            include,
        }),
        bookmarks: query.flag("allowWatchBookmarks"),
        // Upstream sends it only to clients that take bookmarks (cacher
        // `setInitialEventsEndBookmarkIfRequested`).
        initial_events_end: start.send_initial_events && query.flag("allowWatchBookmarks"),
    };
    // A streaming list not older than a revision the store has not reached: like every error
    // after the watch is accepted, an ERROR event (cacher `Watch`, `newErrWatcher`).
    if let Some(rv) = start.wait_for
        && let Err(status) = api.store.wait_for_revision(rv).await
    {
        return Ok(watch::respond_error(&status));
    }
    let from = match start.from {
        WatchFrom::Initial => None,
        WatchFrom::Now => Some(api.store.revision()),
        WatchFrom::After(rv) => Some(rv),
    };
    let watcher = api.store.watch(filter, from);
    Ok(watch::respond(watcher, params, api.shutdown.clone()))
}

/// Decodes a create or update body and checks its `apiVersion` and `kind` against the URL,
/// filling them in when absent. Also returns the body's repeated fields, as strict decoding
/// reports them. The object stays in the request's version: it is admitted (typed decoding,
/// schema) in that version, then converted with [`to_storage`].
async fn object_body(
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
fn to_storage(info: &ResourceInfo, req: &RequestInfo, obj: &mut Value) {
    if req.subresource.is_none() || req.subresource.as_deref() == Some("status") {
        conversion::to_storage(info, &req.version, obj);
    }
}

/// The patch media types, in the order upstream lists them; custom resources take the first
/// three (no strategic merge patch).
const PATCH_TYPES: [&str; 4] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
    "application/strategic-merge-patch+json",
];

/// Custom resources have no patch-strategy table, so no strategic merge patch.
fn accepted_patch_types(info: &ResourceInfo) -> &'static [&'static str] {
    if info.custom {
        &PATCH_TYPES[..3]
    } else {
        &PATCH_TYPES[..]
    }
}

/// The patch media types `info` takes; anything else is a 415 before the body is read (a
/// protobuf PATCH included: upstream has no protobuf patch type).
fn check_patch_type(info: &ResourceInfo, media: &str) -> Result<(), Status> {
    let accepted = accepted_patch_types(info);
    if accepted.contains(&media) {
        Ok(())
    } else {
        Err(Status::unsupported_media_type(accepted))
    }
}

/// Applies a patch body of the given media type to `target`.
pub(crate) fn apply_patch(
    info: &ResourceInfo,
    name: &str,
    media: &str,
    target: &mut Value,
    patch: &Value,
) -> Result<(), Status> {
    let result = match media {
        "application/merge-patch+json" => kgc_patch::merge(target, patch),
        "application/json-patch+json" => kgc_patch::json_patch(target, patch),
        // Custom resources have no patch-strategy table: 415, as upstream answers.
        "application/strategic-merge-patch+json" => {
            match kgc_patch::strategic::schema_for(&info.group, &info.kind) {
                Some(schema) if !info.custom => {
                    kgc_patch::strategic::apply_owned(std::mem::take(target), patch, schema)
                        .map(|merged| *target = merged)
                }
                _ => return Err(Status::unsupported_media_type(&PATCH_TYPES[..3])),
            }
        }
        _ => return Err(Status::unsupported_media_type(accepted_patch_types(info))),
    };
    if result.is_ok() && kgc_patch::serialized_len(target) > body::MAX_BODY {
        // No patch may build an object larger than a request may carry.
        return Err(Status::too_large(body::MAX_BODY));
    }
    result.map_err(|e| {
        if let kgc_patch::Error::TooManyOperations(_) = e {
            return Status::entity_too_large(e);
        }
        // A JSON patch that is a list of operations decodes; its failures (unknown operation,
        // failed test, missing path) happen when it applies.
        let decodes = media == "application/json-patch+json"
            && patch
                .as_array()
                .is_some_and(|ops| ops.iter().all(Value::is_object));
        if e.is_malformed() && !decodes {
            Status::bad_request(format!("error decoding patch: {e}"))
        } else {
            // Upstream answers with a generic 422 (`NewGenericServerResponse`), which kubectl
            // prints as "The request is invalid: the server rejected our request …".
            tracing::debug!(object = name, kind = %info.kind, error = %e, "patch does not apply");
            Status::unprocessable()
        }
    })
}

/// Reads a patch body: JSON, whatever the patch type. Also returns its repeated fields as
/// strict decoding words them for this patch type.
async fn patch_body(body: Body, media: &str) -> Result<(Value, Vec<String>)> {
    let bytes = body::read(body).await?;
    let decoded = crate::strict::from_json(&bytes)
        .map_err(|e| Status::bad_request(format!("the patch is not valid JSON: {e}")))?;
    let prefix = if media == "application/json-patch+json" {
        "json patch "
    } else {
        ""
    };
    let strict = admission::duplicate_fields(&decoded.duplicates, prefix);
    Ok((decoded.value, strict))
}

async fn patch(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response> {
    let media = media_type(headers);
    check_patch_type(info, &media)?;
    if media == "application/apply-patch+yaml" {
        return server_side_apply(api, info, req, query, headers, body).await;
    }
    let mode = FieldValidation::of(query)?;
    let (patch, strict) = patch_body(body, &media).await?;
    let kind = info.kind.clone();
    let name = req.name.clone().unwrap_or_default();
    let tracking = Tracking::new(info, req, query, headers);
    let mut warnings = Vec::new();
    let updated = api
        .store
        .update(
            info,
            req.namespace.as_deref().unwrap_or(""),
            &name,
            req.subresource.as_deref(),
            query.dry_run()?,
            |mut current| {
                let before = current.clone();
                conversion::from_storage(info, &req.version, &mut current);
                apply_patch(info, &name, &media, &mut current, &patch)?;
                if let Some(ns) = req.namespace.as_deref()
                    && let Some(got) = current["metadata"]["namespace"].as_str()
                    && got != ns
                {
                    return Err(Status::bad_request(format!(
                        "the namespace of the object ({got}) does not match the namespace on the URL ({ns})"
                    )));
                }
                // A patch cannot turn an object into another kind, nor into something else.
                let Some(fields) = current.as_object_mut() else {
                    return Err(Status::invalid(
                        "",
                        "",
                        "",
                        &[kgc_meta::FieldError::invalid(
                            "patch",
                            current.to_string(),
                            "the patched object must be a JSON object",
                        )],
                    ));
                };
                fields.insert("kind".into(), Value::from(kind));
                warnings =
                    admission::admit(info, req, mode, Written::Patch, &mut current, strict)?;
                crate::authz::admit_write(api.rbac.as_deref(), info, req, &current)?;
                crate::authz::admit_update(info, &before, &current)?;
                api.admit_owner_references(info, req, Some(&before), &current)?;
                conversion::to_storage(info, &req.version, &mut current);
                Ok(tracking.record(Some(&before), &current))
            },
        )
        .await?;
    Ok(with_warnings(
        object(info, req, StatusCode::OK, updated.object()),
        &warnings,
    ))
}

/// Who is writing, for `managedFields`.
struct Tracking {
    info: ResourceInfo,
    manager: String,
    api_version: String,
    time: String,
    subresource: String,
    schema: crate::apply::ApplySchema,
}

impl Tracking {
    fn new(info: &ResourceInfo, req: &RequestInfo, query: &Query, headers: &HeaderMap) -> Self {
        Self {
            info: info.clone(),
            manager: crate::apply::field_manager(query, headers),
            api_version: api_version(&req.group, &req.version),
            time: jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string(),
            subresource: req.subresource.clone().unwrap_or_default(),
            schema: crate::apply::ApplySchema::for_resource(info, &req.version),
        }
    }

    fn manager(&self) -> kgc_managedfields::Manager<'_> {
        kgc_managedfields::Manager {
            name: &self.manager,
            api_version: &self.api_version,
            time: &self.time,
            subresource: &self.subresource,
        }
    }

    /// Records the fields this write changed under its manager (an Update entry), on the object
    /// as it will be stored.
    fn record(&self, old: Option<&Value>, new: &Value) -> Value {
        let mut new = new.clone();
        kgc_store::normalize(&self.info, &mut new);
        kgc_managedfields::update_or_keep_owned(old, new, &self.manager(), &self.schema)
    }
}

/// `PATCH` with `application/apply-patch+yaml`: server-side apply. Creates the object when it
/// does not exist (201), merges under field ownership otherwise, and answers 409 naming the
/// fields and their manager on conflicts unless `force=true`.
async fn server_side_apply(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response> {
    if query.get("fieldManager").is_none_or(str::is_empty) {
        return Err(Status::bad_request(
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        )
        .into());
    }
    let mode = FieldValidation::of(query)?;
    let bytes = body::read(body).await?;
    let decoded = match crate::strict::from_json(&bytes) {
        Ok(d) => d,
        Err(_) => body::decode_yaml(&bytes)?,
    };
    let strict = admission::duplicate_fields(&decoded.duplicates, "");
    let mut config = decoded.value;
    if !config.is_object() {
        return Err(Status::bad_request("the apply configuration must be an object").into());
    }
    let want_version = api_version(&req.group, &req.version);
    let (got_version, got_kind) = (
        config["apiVersion"].as_str().unwrap_or_default().to_owned(),
        config["kind"].as_str().unwrap_or_default().to_owned(),
    );
    if got_version != want_version || got_kind != info.kind {
        return Err(Status::bad_request(format!(
            "the apply configuration's apiVersion and kind ({got_version}, {got_kind}) do not match the request ({want_version}, {})",
            info.kind
        ))
        .into());
    }
    let name = req.name.clone().unwrap_or_default();
    match config["metadata"]["name"].as_str() {
        Some(n) if n != name => {
            return Err(Status::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            ))
            .into());
        }
        _ => match config.get_mut("metadata") {
            Some(Value::Object(meta)) => {
                meta.insert("name".into(), Value::from(name.as_str()));
            }
            Some(m) if !m.is_null() => {
                return Err(Status::bad_request(
                    "the apply configuration's metadata must be an object",
                )
                .into());
            }
            _ => config["metadata"] = serde_json::json!({"name": name}),
        },
    }
    let force = query.flag("force");
    let dry_run = query.dry_run()?;
    let tracking = Tracking::new(info, req, query, headers);
    let ns = req.namespace.clone().unwrap_or_default();
    let merge = |live: Option<&Value>| -> Result<Value, Status> {
        let live = live.map(|l| {
            let mut l = l.clone();
            conversion::from_storage(info, &req.version, &mut l);
            l
        });
        let mut merged = kgc_managedfields::apply(
            live.as_ref(),
            &config,
            &tracking.manager(),
            force,
            &tracking.schema,
        )
        .map_err(|e| crate::apply::status(e, info, &name))?;
        admission::admit(
            info,
            req,
            mode,
            Written::ApplyConfiguration,
            &mut merged,
            strict.clone(),
        )?;
        crate::authz::admit_write(api.rbac.as_deref(), info, req, &merged)?;
        if let Some(live) = live.as_ref() {
            crate::authz::admit_update(info, live, &merged)?;
        }
        api.admit_owner_references(info, req, live.as_ref(), &merged)?;
        conversion::to_storage(info, &req.version, &mut merged);
        Ok(merged)
    };
    for _ in 0..3 {
        let updated = api
            .store
            .update(
                info,
                &ns,
                &name,
                req.subresource.as_deref(),
                dry_run,
                |current| merge(Some(&current)),
            )
            .await;
        match updated {
            Ok(u) => return Ok(object(info, req, StatusCode::OK, u.object())),
            Err(kgc_store::Error::Api(s))
                if s.is(kgc_meta::Reason::NotFound) && req.subresource.is_none() => {}
            Err(e) => return Err(e.into()),
        }
        match api.store.create(info, &ns, merge(None)?, dry_run).await {
            Ok(created) => return Ok(object(info, req, StatusCode::CREATED, &created)),
            // Created meanwhile by someone else: apply to it.
            Err(kgc_store::Error::Api(s)) if s.is(kgc_meta::Reason::AlreadyExists) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(Status::conflict(
        &info.group_resource(),
        &name,
        "the object kept changing during apply",
    )
    .into())
}

/// Adds `Warning: 299 - "…"` headers, as kube-apiserver reports warnings.
fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - {:?}", w);
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}

/// GET, PUT and PATCH of `/scale`: a Scale view of the object; writes change only the replica
/// count of the object itself (so they bump its generation, as upstream).
async fn scale(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response> {
    let ns = req.namespace.clone().unwrap_or_default();
    let name = req.name.clone().unwrap_or_default();
    let tracking = Tracking::new(info, req, query, headers);
    let respond =
        |o: &StoredObject| body::json(StatusCode::OK, &crate::scale::to_scale(info, &o.value()));
    let desired: Box<dyn FnOnce(Value) -> Result<Value, Status> + Send> = match req.verb {
        Verb::Get => {
            let o = api
                .store
                .get_or_not_found(&info.group_resource(), &ns, &name)?;
            return Ok(respond(&o));
        }
        Verb::Update => {
            let (body, _) = object_body(info, req, headers, body).await?;
            Box::new(move |_| Ok(body))
        }
        Verb::Patch => {
            let media = media_type(headers);
            check_patch_type(info, &media)?;
            let (patch, _) = patch_body(body, &media).await?;
            let info = info.clone();
            let name = name.clone();
            Box::new(move |mut scale: Value| {
                apply_patch(&info, &name, &media, &mut scale, &patch)?;
                Ok(scale)
            })
        }
        _ => return Err(Status::no_such_resource().into()),
    };
    let updated = api
        .store
        .update(info, &ns, &name, None, query.dry_run()?, |mut current| {
            let before = current.clone();
            let scale = desired(crate::scale::to_scale(info, &current))?;
            crate::scale::apply_scale(info, &mut current, &scale).map_err(|m| {
                let mut s = Status::invalid("autoscaling", "Scale", &name, &[]);
                s.message = format!("Scale.autoscaling \"{name}\" is invalid: {m}");
                s
            })?;
            Ok(tracking.record(Some(&before), &current))
        })
        .await?;
    Ok(respond(updated.object()))
}

/// DeleteOptions from the body, else from the query.
async fn delete_options(query: &Query, body: Body) -> Result<DeleteOptions> {
    let bytes = body::read(body).await?;
    let mut opts = if bytes.iter().all(u8::is_ascii_whitespace) {
        let mut o = DeleteOptions {
            grace_period_seconds: query.int("gracePeriodSeconds")?,
            ..DeleteOptions::default()
        };
        if let Some(p) = query.get("propagationPolicy") {
            o.propagation_policy = Some(kgc_meta::deletion::parse_policy(p)?);
        }
        if let Some(v) = query.get("orphanDependents") {
            o.orphan_dependents = Some(v == "true");
        }
        o.validate()?;
        o
    } else {
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| Status::bad_request(format!("DeleteOptions is not valid JSON: {e}")))?;
        DeleteOptions::from_json(&v)?
    };
    opts.dry_run |= query.dry_run()?;
    Ok(opts)
}

fn with_job_warning(info: &ResourceInfo, opts: &DeleteOptions, mut resp: Response) -> Response {
    if info.group == "batch"
        && info.plural == "jobs"
        && opts.propagation_policy.is_none()
        && opts.orphan_dependents.is_none()
    {
        resp.headers_mut()
            .insert("warning", HeaderValue::from_static(JOB_ORPHAN_WARNING));
    }
    resp
}

async fn delete(
    api: &ApiServer,
    info: &Arc<ResourceInfo>,
    req: &RequestInfo,
    query: &Query,
    body: Body,
) -> Result<Response> {
    let ns = req.namespace.as_deref().unwrap_or("");
    let name = req.name.as_deref().unwrap_or("");
    let opts = delete_options(query, body).await?;
    let Deleted { object: o, gone } = api.store.delete(info, ns, name, &opts).await?;
    // apiserver `handlers/delete.go`: 202 only when kept and the client asked not to orphan.
    let resp = if gone && !info.return_deleted_object {
        body::json(
            StatusCode::OK,
            &kgc_meta::status::success(&info.group_resource(), &o.name, &o.uid),
        )
    } else if !gone && opts.orphan_dependents == Some(false) {
        object(info, req, StatusCode::ACCEPTED, &o)
    } else {
        object(info, req, StatusCode::OK, &o)
    };
    Ok(with_job_warning(info, &opts, resp))
}

async fn delete_collection(
    api: &ApiServer,
    info: &Arc<ResourceInfo>,
    req: &RequestInfo,
    query: &Query,
    body: Body,
) -> Result<Response> {
    let list = list_options(info, req, query)?;
    let opts = delete_options(query, body).await?;
    let deleted = api.store.delete_collection(info, &list, &opts).await?;
    let mut out = String::from("{\"kind\":");
    out.push_str(&Value::from(info.list_kind.as_str()).to_string());
    out.push_str(",\"apiVersion\":");
    out.push_str(&Value::from(api_version(&req.group, &req.version)).to_string());
    out.push_str(",\"metadata\":{\"resourceVersion\":\"");
    out.push_str(&api.store.revision().to_string());
    out.push_str("\"},\"items\":[");
    let version = served_version(info, req);
    for (i, d) in deleted.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&served_text(info, &d.object.raw, version.as_deref()));
    }
    out.push_str("]}");
    Ok(with_job_warning(
        info,
        &opts,
        body::raw_json(StatusCode::OK, out),
    ))
}
