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
    let warnings = api.admit_delete(info, req, &opts).await?;
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
    let call = crate::webhook::Call::delete(info, req, &opts);
    let (deleted, warnings) = if api.webhooks.applies(&call) {
        delete_admitted(api, info, &call, &list, &opts).await?
    } else {
        (
            api.store.delete_collection(info, &list, &opts).await?,
            Vec::new(),
        )
    };
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
    Ok(with_warnings(
        with_job_warning(info, &opts, body::raw_json(StatusCode::OK, out)),
        &warnings,
    ))
}

/// A DELETECOLLECTION that admission webhooks or policies see: each object listed is admitted
/// (`oldObject`, no name) and then deleted, one after the other, as upstream's registry store
/// deletes each item with the handler's admission as its delete validation
/// (`registry/generic/registry/store.go` `DeleteCollection`). The first refusal is the answer
/// and what was deleted before it stays deleted, as upstream (whose workers make that set
/// arbitrary; here it is the objects listed before). An object replaced since it was listed
/// is left alone (a UID precondition), so nothing is deleted that was not admitted.
async fn delete_admitted(
    api: &ApiServer,
    info: &Arc<ResourceInfo>,
    call: &crate::webhook::Call<'_>,
    list: &kgc_store::ListOptions,
    opts: &DeleteOptions,
) -> Result<(Vec<Deleted>, Vec<String>)> {
    let items = api.store.list(&info.group_resource(), list)?.items;
    let mut deleted = Vec::with_capacity(items.len());
    let mut warnings = Vec::new();
    for item in items {
        warnings.extend(api.webhooks.admit(call, None, Some(&item.value())).await?);
        let mut one = opts.clone();
        let replaced_is_skipped =
            opts.preconditions.uid.is_none() && opts.preconditions.resource_version.is_none();
        if replaced_is_skipped {
            one.preconditions.uid = Some(item.uid.clone());
        }
        match api
            .store
            .delete(info, &item.namespace, &item.name, &one)
            .await
        {
            Ok(d) => deleted.push(d),
            Err(kgc_store::Error::Api(s))
                if s.is(kgc_meta::Reason::NotFound)
                    || (replaced_is_skipped && s.is(kgc_meta::Reason::Conflict)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok((deleted, warnings))
}
