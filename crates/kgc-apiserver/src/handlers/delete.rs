//! DELETE and DELETECOLLECTION (kubernetes/apiserver pkg/endpoints/handlers/delete.go).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use kgc_meta::catalog::api_version;
use kgc_meta::{DeleteOptions, ResourceInfo, Status};
use kgc_store::Deleted;
use serde_json::Value;

use crate::ApiServer;
use crate::body;
use crate::request::{Query, RequestInfo};

use super::get::list_options;
use super::{Result, object, served_text, served_version, with_warnings};

/// The warning kube-apiserver attaches to a Job DELETE without a propagation policy
/// (`pkg/registry/batch/job/storage/storage.go`).
const JOB_ORPHAN_WARNING: &str = "299 - \"child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning\"";

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

pub(super) async fn delete(
    api: &ApiServer,
    info: &Arc<ResourceInfo>,
    req: &RequestInfo,
    query: &Query,
    body: Body,
) -> Result<Response> {
    let ns = req.namespace.as_deref().unwrap_or("");
    let name = req.name.as_deref().unwrap_or("");
    let opts = delete_options(query, body).await?;
    let warnings = api
        .admit_delete(info, req, opts.dry_run, opts.grace_period_seconds)
        .await?;
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
    Ok(with_warnings(
        with_job_warning(info, &opts, resp),
        &warnings,
    ))
}

pub(super) async fn delete_collection(
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
