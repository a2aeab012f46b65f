//! CREATE (kubernetes/apiserver pkg/endpoints/handlers/create.go).

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use kgc_meta::ResourceInfo;
use serde_json::Value;

use crate::ApiServer;
use crate::request::{Query, RequestInfo};

use super::fieldmanager::Tracking;
use super::{Result, admitted_body, object, with_warnings};

/// POST of a new object (kubernetes/apiserver pkg/endpoints/handlers/create.go).
pub(super) async fn create(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response> {
    let (obj, warnings) = admitted_body(api, info, req, query, headers, body).await?;
    let tracking = Tracking::new(api.store.clock(), info, req, query, headers);
    create_object(api, info, req, query, obj, warnings, Some(&tracking)).await
}

/// Creates `obj`, admitted and in the storage version; `tracking` records its manager's
/// fields, `None` when `obj` carries managedFields already tracked (a server-side apply planned
/// in another version, see [`crate::conversion_webhook`]).
pub(crate) async fn create_object(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    mut obj: Value,
    mut warnings: Vec<String>,
    tracking: Option<&Tracking>,
) -> Result<Response> {
    let ns = req.namespace.as_deref().unwrap_or("");
    api.admit_storage_create(info, req, &mut obj)?;
    api.admit_owner_references(info, req, None, &obj)?;
    // Mutating admission after the field manager, as upstream: what it adds is owned by no
    // manager.
    if let Some(t) = tracking {
        obj = t.record(None, &obj);
    }
    api.admit_limit_ranger_create(info, req, &mut obj)?;
    api.admit_service_account(info, req, &mut obj).await?;
    let call = crate::webhook::Call::new(info, req, "CREATE", query)?;
    warnings.extend(api.webhooks.admit(&call, Some(&mut obj), None).await?);
    // Held until the Service is stored, never across a webhook call.
    let allocation = api.service_allocation(info, req).await?;
    warnings.extend(ApiServer::admit_after_webhooks(
        info,
        allocation.as_ref(),
        &mut obj,
        None,
    )?);
    // ResourceQuota last, as upstream orders it: it charges what is about to be stored.
    let dry_run = query.dry_run()?;
    let charge = api.charge_quota_create(info, req, &obj, dry_run).await?;
    let created = api.store.create(info, ns, obj, dry_run).await;
    let created = api.settle_quota(charge, created).await?;
    Ok(with_warnings(
        object(info, req, StatusCode::CREATED, &created),
        &warnings,
    ))
}
