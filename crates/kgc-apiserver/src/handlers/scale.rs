//! The `/scale` subresource (kubernetes/kubernetes pkg/registry/apps/deployment/storage
//! `ScaleREST` and its siblings).

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use kgc_meta::{ResourceInfo, Status};
use kgc_store::StoredObject;
use serde_json::Value;

use crate::ApiServer;
use crate::body::{self, media_type};
use crate::request::{Query, RequestInfo, Verb};

use super::fieldmanager::Tracking;
use super::patch::{apply_patch, check_patch_type, patch_body};
use super::{Result, object_body, with_warnings};

/// GET, PUT and PATCH of `/scale`: a Scale view of the object; writes change only the replica
/// count of the object itself (so they bump its generation, as upstream).
pub(super) async fn scale(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response> {
    let ns = req.namespace.clone().unwrap_or_default();
    let name = req.name.clone().unwrap_or_default();
    let tracking = Tracking::new(api.store.clock(), info, req, query, headers);
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
    let dry_run = query.dry_run()?;
    let invalid = |m: String| {
        let mut s = Status::invalid("autoscaling", "Scale", &name, &[]);
        s.message = format!("Scale.autoscaling \"{name}\" is invalid: {m}");
        s
    };
    let call = crate::webhook::Call::new(info, req, "UPDATE", query)?;
    if !api.webhooks.applies(&call) {
        let updated = api
            .store
            .update(info, &ns, &name, None, dry_run, |mut current| {
                let before = current.clone();
                let scale = desired(crate::scale::to_scale(info, &current))?;
                crate::scale::apply_scale(info, &mut current, &scale).map_err(invalid)?;
                Ok(tracking.record(Some(&before), &current))
            })
            .await?;
        return Ok(respond(updated.object()));
    }
    // The webhooks and policies see the Scales, old and new (`ScaleREST.Update` admits the
    // Scale, not the workload); what they admit is written over the object they saw.
    let current = api
        .store
        .get_or_not_found(&info.group_resource(), &ns, &name)?
        .value();
    let old_scale = crate::scale::to_scale(info, &current);
    let mut scale = desired(old_scale.clone())?;
    let warnings = api
        .webhooks
        .admit(&call, Some(&mut scale), Some(&old_scale))
        .await?;
    let seen = current["metadata"]["resourceVersion"].clone();
    let updated = api
        .store
        .update(info, &ns, &name, None, dry_run, |mut current| {
            let before = current.clone();
            crate::scale::apply_scale(info, &mut current, &scale).map_err(invalid)?;
            let given = scale
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .is_some_and(|rv| !rv.is_empty());
            if !given {
                current["metadata"]["resourceVersion"] = seen;
            }
            Ok(tracking.record(Some(&before), &current))
        })
        .await?;
    Ok(with_warnings(respond(updated.object()), &warnings))
}
