//! UPDATE (kubernetes/apiserver pkg/endpoints/handlers/update.go).

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use kgc_meta::ResourceInfo;

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
    let ns = req.namespace.as_deref().unwrap_or("");
    let name = req.name.as_deref().unwrap_or("");
    let (obj, warnings) = admitted_body(api, info, req, query, headers, body).await?;
    let tracking = Tracking::new(api.store.clock(), info, req, query, headers);
    let allocation = api.service_allocation(info, req).await?;
    let limit_ranges = api.limit_ranges_for_update(info, req)?;
    let dry_run = query.dry_run()?;
    let charge = api
        .charge_quota_update(info, req, dry_run, |_| Ok(obj.clone()))
        .await?;
    let updated = api
        .store
        .update(
            info,
            ns,
            name,
            req.subresource.as_deref(),
            dry_run,
            |current| {
                crate::validation_rules::admit(info, &obj, Some(&current))?;
                charge.still_current(info, &current)?;
                crate::authz::admit_update(info, &current, &obj)?;
                api.admit_owner_references(info, req, Some(&current), &obj)?;
                crate::limitranger::validate_update(info, limit_ranges.as_deref(), &obj)?;
                let mut new = tracking.record(Some(&current), &obj);
                if let Some(a) = allocation.as_ref() {
                    a.assign(&mut new, Some(&current))?;
                }
                Ok(new)
            },
        )
        .await;
    let updated = api.settle_quota(charge, updated).await?;
    Ok(with_warnings(
        object(info, req, StatusCode::OK, updated.object()),
        &warnings,
    ))
}
