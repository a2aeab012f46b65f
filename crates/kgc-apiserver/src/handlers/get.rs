//! GET and LIST (kubernetes/apiserver pkg/endpoints/handlers/get.go).

use axum::http::StatusCode;
use axum::response::Response;
use kgc_meta::catalog::api_version;
use kgc_meta::{FieldSelector, LabelSelector, Reason, ResourceInfo, Status};
use kgc_store::{ListOptions, ReadFrom};
use serde_json::Value;

use crate::ApiServer;
use crate::body;
use crate::consistency;
use crate::request::{Query, RequestInfo};
use crate::table;

use super::{Result, TableRequest, object, served_text, served_version};

/// GET, "not older than" a `resourceVersion` when one is given.
pub(super) async fn get(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    ns: &str,
    name: &str,
    table: TableRequest,
) -> Result<Response> {
    match consistency::get(query)? {
        Some(rv) => api.store.wait_for_revision(rv).await?,
        None => latest(api, query).await?,
    }
    let o = api
        .store
        .get_or_not_found(&info.storage_resource(), ns, name)?;
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
            api.store.clock().now(),
        );
        return Ok(body::json(StatusCode::OK, &t));
    }
    Ok(object(info, req, StatusCode::OK, &o))
}

/// A read without `resourceVersion` asks for the latest state: on etcd, where this server is
/// one replica of several, it waits until its cache holds what etcd held when the read
/// arrived (kube-apiserver's consistent reads from cache, `cacher.go`); `resourceVersion=0`
/// reads whatever the cache holds.
async fn latest(api: &ApiServer, query: &Query) -> Result<()> {
    if query.get("resourceVersion").is_none_or(str::is_empty) {
        api.store.wait_for_latest().await?;
    }
    Ok(())
}

/// The label and field selectors of a LIST or WATCH; errors are 400s.
pub(super) fn selectors(
    info: &ResourceInfo,
    query: &Query,
) -> Result<(LabelSelector, FieldSelector)> {
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
pub(super) fn list_options(
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
) -> Result<ListOptions> {
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

pub(super) async fn list(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    table: TableRequest,
) -> Result<Response> {
    let opts = list_options(info, req, query)?;
    match opts.read.needs_revision() {
        Some(rv) => api.store.wait_for_revision(rv).await?,
        None => latest(api, query).await?,
    }
    let page = match api.store.list(&info.storage_resource(), &opts) {
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
        let mut t = table::table(
            info,
            page.items.iter().map(|o| &**o),
            version,
            &page.resource_version.to_string(),
            page.continue_token.as_deref(),
            &include,
            true,
            api.store.clock().now(),
        );
        if let Some(n) = page.remaining_item_count {
            t["metadata"]["remainingItemCount"] = Value::from(n);
        }
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
    if let Some(n) = page.remaining_item_count {
        out.push_str(",\"remainingItemCount\":");
        out.push_str(&n.to_string());
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
