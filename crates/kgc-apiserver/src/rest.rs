//! Resource requests: GET, LIST, WATCH, CREATE, UPDATE, PATCH, DELETE, DELETECOLLECTION.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use kgc_meta::catalog::api_version;
use kgc_meta::{DeleteOptions, FieldSelector, LabelSelector, ResourceInfo, Status};
use kgc_store::{Deleted, ListOptions, StoredObject, WatchFilter};
use serde_json::Value;

use crate::ApiServer;
use crate::body::{self, ApiError, media_type};
use crate::request::{Query, RequestInfo, Verb};
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
        let known = info.subresource(sub).is_some_and(|s| s.name != "scale");
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
    match req.verb {
        Verb::Get => get(api, &info, &ns, &name),
        Verb::List => list(api, &info, &req, query),
        Verb::Watch => watch(api, &info, &req, query),
        Verb::Create => {
            let obj = object_body(&info, &req, headers, body).await?;
            let created = api.store.create(&info, &ns, obj, query.dry_run()?).await?;
            Ok(object(StatusCode::CREATED, &created))
        }
        Verb::Update => {
            let obj = object_body(&info, &req, headers, body).await?;
            let updated = api
                .store
                .update(
                    &info,
                    &ns,
                    &name,
                    req.subresource.as_deref(),
                    query.dry_run()?,
                    |_| Ok(obj),
                )
                .await?;
            Ok(object(StatusCode::OK, updated.object()))
        }
        Verb::Patch => patch(api, &info, &req, query, headers, body).await,
        Verb::Delete => delete(api, &info, &ns, &name, query, body).await,
        Verb::DeleteCollection => delete_collection(api, &info, &req, query, body).await,
    }
}

fn object(code: StatusCode, o: &StoredObject) -> Response {
    body::raw_json(code, o.raw.to_string())
}

fn get(api: &ApiServer, info: &ResourceInfo, ns: &str, name: &str) -> Result<Response> {
    let o = api
        .store
        .get_or_not_found(&info.group_resource(), ns, name)?;
    Ok(object(StatusCode::OK, &o))
}

/// Selectors and paging from the query, with selector errors as 400s.
fn list_options(info: &ResourceInfo, req: &RequestInfo, query: &Query) -> Result<ListOptions> {
    let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or(""))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").unwrap_or(""))?;
    for r in fields.requirements() {
        if !info.supports_field(&r.field) {
            return Err(
                Status::bad_request(format!("field label not supported: {}", r.field)).into(),
            );
        }
    }
    let limit = query.int("limit")?.filter(|l| *l > 0).map(|l| l as usize);
    Ok(ListOptions {
        namespace: req.namespace.clone(),
        labels,
        fields,
        limit,
        continue_token: query
            .get("continue")
            .filter(|c| !c.is_empty())
            .map(str::to_owned),
    })
}

fn list(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
) -> Result<Response> {
    let opts = list_options(info, req, query)?;
    let page = api.store.list(&info.group_resource(), &opts)?;
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
    for (i, o) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&o.raw);
    }
    out.push_str("]}");
    Ok(body::raw_json(StatusCode::OK, out))
}

fn watch(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
) -> Result<Response> {
    let opts = list_options(info, req, query)?;
    let mut fields = opts.fields;
    // `/watch/.../pods/p1` and `GET .../pods/p1?watch=true` watch one object.
    if let Some(name) = &req.name {
        fields = FieldSelector::parse(&format!("metadata.name={name}"))?;
    }
    let filter = WatchFilter {
        gr: info.group_resource(),
        namespace: req.namespace.clone(),
        labels: opts.labels,
        fields,
    };
    let send_initial = query.flag("sendInitialEvents");
    let from = match query.get("resourceVersion").unwrap_or("") {
        "" | "0" => None,
        _ if send_initial => None,
        rv => Some(rv.parse::<u64>().map_err(|_| {
            Status::bad_request(format!("invalid resourceVersion {rv:?}: not a number"))
        })?),
    };
    let timeout = match query.int("timeoutSeconds")? {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        // Upstream picks 30–60 minutes at random so that watches do not all end together.
        _ => Duration::from_secs(1800 + u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * 7),
    };
    let watcher = api.store.watch(filter, from);
    Ok(watch::respond(
        watcher,
        WatchParams {
            kind: info.kind.clone(),
            api_version: api_version(&req.group, &req.version),
            timeout,
            bookmarks: query.flag("allowWatchBookmarks"),
            initial_events_end: send_initial,
        },
        api.shutdown.clone(),
    ))
}

/// Decodes a create or update body and checks its `apiVersion` and `kind` against the URL,
/// filling them in when absent.
async fn object_body(
    info: &ResourceInfo,
    req: &RequestInfo,
    headers: &HeaderMap,
    body: Body,
) -> Result<Value> {
    let bytes = body::read(body).await?;
    let mut obj = body::decode(&media_type(headers), &bytes)?;
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
    match obj.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => obj["apiVersion"] = Value::from(want_version.as_str()),
        Some(v) if v != want_version => {
            return Err(Status::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({want_version})"
            ))
            .into());
        }
        Some(_) => {}
    }
    match obj.get("kind").and_then(Value::as_str) {
        None | Some("") => obj["kind"] = Value::from(want_kind.as_str()),
        Some(k) if k != want_kind => {
            return Err(Status::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({want_kind})"
            ))
            .into());
        }
        Some(_) => {}
    }
    Ok(obj)
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
    let bytes = body::read(body).await?;
    let patch: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Status::bad_request(format!("the patch is not valid JSON: {e}")))?;
    let apply: fn(&mut Value, &Value) -> Result<(), kgc_patch::Error> = match media.as_str() {
        "application/merge-patch+json" => kgc_patch::merge,
        "application/json-patch+json" => kgc_patch::json_patch,
        other => return Err(Status::unsupported_media_type(other).into()),
    };
    let (kind, version) = (info.kind.clone(), api_version(&req.group, &req.version));
    let name = req.name.clone().unwrap_or_default();
    let updated = api
        .store
        .update(
            info,
            req.namespace.as_deref().unwrap_or(""),
            &name,
            req.subresource.as_deref(),
            query.dry_run()?,
            |mut current| {
                apply(&mut current, &patch).map_err(|e| {
                    if e.is_malformed() {
                        Status::bad_request(e.to_string())
                    } else {
                        let mut s = Status::invalid(&info.group, &info.kind, &name, &[]);
                        s.message = e.to_string();
                        s
                    }
                })?;
                // A patch cannot turn an object into another kind.
                current["kind"] = Value::from(kind);
                current["apiVersion"] = Value::from(version);
                Ok(current)
            },
        )
        .await?;
    Ok(object(StatusCode::OK, updated.object()))
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
    ns: &str,
    name: &str,
    query: &Query,
    body: Body,
) -> Result<Response> {
    let opts = delete_options(query, body).await?;
    let Deleted { object: o, gone } = api.store.delete(info, ns, name, &opts).await?;
    // apiserver `handlers/delete.go`: 202 only when kept and the client asked not to orphan.
    let resp = if gone && !info.return_deleted_object {
        body::json(
            StatusCode::OK,
            &kgc_meta::status::success(&info.group_resource(), &o.name, &o.uid),
        )
    } else if !gone && opts.orphan_dependents == Some(false) {
        object(StatusCode::ACCEPTED, &o)
    } else {
        object(StatusCode::OK, &o)
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
    for (i, d) in deleted.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&d.object.raw);
    }
    out.push_str("]}");
    Ok(with_job_warning(
        info,
        &opts,
        body::raw_json(StatusCode::OK, out),
    ))
}
