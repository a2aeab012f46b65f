//! UPDATE (kubernetes/apiserver pkg/endpoints/handlers/update.go).

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use kgc_meta::ResourceInfo;
use serde_json::Value;

use crate::ApiServer;
use crate::request::{Query, RequestInfo};

use super::fieldmanager::Tracking;
use super::{Result, admitted_body, object, with_warnings};

/// PUT of a whole object (kubernetes/apiserver pkg/endpoints/handlers/update.go).
pub(super) async fn update(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response> {
    let (obj, warnings) = admitted_body(api, info, req, query, headers, body).await?;
    let tracking = Tracking::new(api.store.clock(), info, req, query, headers);
    update_object(api, info, req, query, obj, warnings, Some(&tracking)).await
}

/// Writes `obj`, admitted and in the storage version, over the stored object; `tracking` records
/// its manager's fields, `None` when `obj` carries managedFields already tracked (a
/// server-side apply planned in another version, see [`crate::conversion_webhook`]).
pub(crate) async fn update_object(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    obj: Value,
    mut warnings: Vec<String>,
    tracking: Option<&Tracking>,
) -> Result<Response> {
    let ns = req.namespace.as_deref().unwrap_or("");
    let name = req.name.as_deref().unwrap_or("");
    let limit_ranges = api.limit_ranges_for_update(info, req)?;
    let dry_run = query.dry_run()?;
    // Charged on the body before the webhooks (a 409 if the object changes meanwhile), given
    // back if a webhook refuses or the write fails.
    let charge = api
        .charge_quota_update(info, req, dry_run, |_| Ok(obj.clone()))
        .await?;
    let updated = api
        .update_admitted(info, req, query, ns, name, dry_run, |current| {
            charge.still_current(info, &current)?;
            crate::authz::admit_update(info, &current, &obj)?;
            api.admit_owner_references(info, req, Some(&current), &obj)?;
            crate::limitranger::validate_update(info, limit_ranges.as_deref(), &obj)?;
            Ok(match &tracking {
                Some(t) => t.record(Some(&current), &obj),
                None => obj.clone(),
            })
        })
        .await;
    let (updated, hook_warnings) = api.settle_quota(charge, updated).await?;
    warnings.extend(hook_warnings);
    Ok(with_warnings(
        object(info, req, StatusCode::OK, updated.object()),
        &warnings,
    ))
}
