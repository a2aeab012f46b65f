//! PATCH: JSON, merge and strategic merge patches, and server-side apply
//! (kubernetes/apiserver pkg/endpoints/handlers/patch.go).

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use kgc_meta::catalog::api_version;
use kgc_meta::{ResourceInfo, Status};
use serde_json::Value;

use crate::ApiServer;
use crate::admission::{self, FieldValidation, Written};
use crate::body::{self, media_type};
use crate::conversion;
use crate::request::{Query, RequestInfo};

use super::fieldmanager::Tracking;
use super::{Result, object, with_warnings};

/// The patch media types, in the order upstream lists them; custom resources take the first
/// three (no strategic merge patch).
const PATCH_TYPES: [&str; 4] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
    "application/strategic-merge-patch+json",
];

/// Custom resources have no patch-strategy table, so no strategic merge patch.
pub(super) fn accepted_patch_types(info: &ResourceInfo) -> &'static [&'static str] {
    if info.custom {
        &PATCH_TYPES[..3]
    } else {
        &PATCH_TYPES[..]
    }
}

/// The patch media types `info` takes; anything else is a 415 before the body is read (a
/// protobuf PATCH included: upstream has no protobuf patch type).
pub(crate) fn check_patch_type(info: &ResourceInfo, media: &str) -> Result<(), Status> {
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
pub(crate) async fn patch_body(body: Body, media: &str) -> Result<(Value, Vec<String>)> {
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

pub(super) async fn patch(
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
    let tracking = Tracking::new(api.store.clock(), info, req, query, headers);
    let mut warnings = Vec::new();
    let limit_ranges = api.limit_ranges_for_update(info, req)?;
    let dry_run = query.dry_run()?;
    let charge = api
        .charge_quota_update(info, req, dry_run, |mut copy| {
            conversion::from_storage(info, &req.version, &mut copy);
            apply_patch(info, &name, &media, &mut copy, &patch)?;
            conversion::to_storage(info, &req.version, &mut copy);
            Ok(copy)
        })
        .await?;
    let updated = api
        .update_admitted(
            info,
            req,
            query,
            req.namespace.as_deref().unwrap_or(""),
            &name,
            dry_run,
            |mut current| {
                charge.still_current(info, &current)?;
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
                fields.insert("kind".into(), Value::from(kind.as_str()));
                warnings =
                    admission::admit(
                        info,
                        req,
                        mode,
                        Written::Patch,
                        &mut current,
                        Some(&before),
                        strict.clone(),
                    )?;
                crate::authz::admit_write(api.rbac.as_deref(), info, req, &current)?;
                crate::authz::admit_update(info, &before, &current)?;
                api.admit_owner_references(info, req, Some(&before), &current)?;
                crate::limitranger::validate_update(info, limit_ranges.as_deref(), &current)?;
                conversion::to_storage(info, &req.version, &mut current);
                Ok(tracking.record(Some(&before), &current))
            },
        )
        .await;
    let (updated, hook_warnings) = api.settle_quota(charge, updated).await?;
    warnings.extend(hook_warnings);
    Ok(with_warnings(
        object(info, req, StatusCode::OK, updated.object()),
        &warnings,
    ))
}

/// A server-side apply request, read and checked: its apply configuration (in the request's
/// version) and how it merges.
pub(crate) struct ApplyRequest {
    config: Value,
    strict: Vec<String>,
    mode: FieldValidation,
    force: bool,
    name: String,
    pub(crate) tracking: Tracking,
}

impl ApplyRequest {
    /// Reads the apply configuration of `req`: a `fieldManager` is required, and the
    /// configuration's `apiVersion`, `kind` and name must be the request's.
    pub(crate) async fn read(
        api: &ApiServer,
        info: &ResourceInfo,
        req: &RequestInfo,
        query: &Query,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<Self> {
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
        Ok(Self {
            config,
            strict,
            mode,
            force: query.flag("force"),
            name,
            tracking: Tracking::new(api.store.clock(), info, req, query, headers),
        })
    }

    /// What `live` (absent: nothing stored yet) becomes, both in the request's version: the
    /// configuration merged under field ownership, admitted as the request's write.
    pub(crate) fn merge(
        &self,
        api: &ApiServer,
        info: &ResourceInfo,
        req: &RequestInfo,
        live: Option<&Value>,
        limit_ranges: Option<&[Value]>,
    ) -> Result<Value, Status> {
        let mut merged = kgc_managedfields::apply(
            live,
            &self.config,
            &self.tracking.manager(),
            self.force,
            &self.tracking.schema,
        )
        .map_err(|e| crate::apply::status(e, info, &self.name))?;
        admission::admit(
            info,
            req,
            self.mode,
            Written::ApplyConfiguration,
            &mut merged,
            live,
            self.strict.clone(),
        )?;
        crate::authz::admit_write(api.rbac.as_deref(), info, req, &merged)?;
        if let Some(live) = live {
            crate::authz::admit_update(info, live, &merged)?;
        }
        if live.is_none() {
            api.admit_storage_create(info, req, &mut merged)?;
        }
        api.admit_owner_references(info, req, live, &merged)?;
        if live.is_some() {
            crate::limitranger::validate_update(info, limit_ranges, &merged)?;
        }
        Ok(merged)
    }
}

/// `PATCH` with `application/apply-patch+yaml`: server-side apply. Creates the object when it
/// does not exist (201), merges under field ownership otherwise, and answers 409 naming the
/// fields and their manager on conflicts unless `force=true`.
pub(super) async fn server_side_apply(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response> {
    let apply = ApplyRequest::read(api, info, req, query, headers, body).await?;
    let name = apply.name.clone();
    let dry_run = query.dry_run()?;
    let ns = req.namespace.clone().unwrap_or_default();
    let limit_ranges = api.limit_ranges_for_update(info, req)?;
    let merge = |live: Option<&Value>| -> Result<Value, Status> {
        let live = live.map(|l| {
            let mut l = l.clone();
            conversion::from_storage(info, &req.version, &mut l);
            l
        });
        let mut merged = apply.merge(api, info, req, live.as_ref(), limit_ranges.as_deref())?;
        conversion::to_storage(info, &req.version, &mut merged);
        Ok(merged)
    };
    for _ in 0..3 {
        // Charged to the namespace's quotas as every other update (a claim's resize, a
        // Service's new type); a create is charged below.
        let charge = api
            .charge_quota_update(info, req, dry_run, |current| merge(Some(&current)))
            .await?;
        let updated = api
            .update_admitted(info, req, query, &ns, &name, dry_run, |current| {
                charge.still_current(info, &current)?;
                merge(Some(&current))
            })
            .await;
        match api.settle_quota(charge, updated).await {
            Ok((u, warnings)) => {
                return Ok(with_warnings(
                    object(info, req, StatusCode::OK, u.object()),
                    &warnings,
                ));
            }
            Err(kgc_store::Error::Api(s))
                if s.is(kgc_meta::Reason::NotFound) && req.subresource.is_none() => {}
            Err(e) => return Err(e.into()),
        }
        let mut fresh = merge(None)?;
        api.admit_limit_ranger_create(info, req, &mut fresh)?;
        api.admit_service_account(info, req, &mut fresh).await?;
        let call = crate::webhook::Call::new(info, req, "CREATE", query)?;
        let mut warnings = api.webhooks.admit(&call, Some(&mut fresh), None).await?;
        let allocation = api.service_allocation(info, req).await?;
        warnings.extend(ApiServer::admit_after_webhooks(
            info,
            allocation.as_ref(),
            &mut fresh,
            None,
        )?);
        let charge = api.charge_quota_create(info, req, &fresh, dry_run).await?;
        let created = api.store.create(info, &ns, fresh, dry_run).await;
        match api.settle_quota(charge, created).await {
            Ok(created) => {
                return Ok(with_warnings(
                    object(info, req, StatusCode::CREATED, &created),
                    &warnings,
                ));
            }
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
