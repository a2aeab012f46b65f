//! Custom resources whose CRD converts through a webhook (`spec.conversion.strategy: Webhook`),
//! as kubernetes/kubernetes `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/
//! webhook_converter.go` calls it: a `ConversionReview` carrying the objects and the
//! `desiredAPIVersion`, answered with `convertedObjects`.
//!
//! Objects are stored in the storage version. A request in another served version is served as
//! the same request in the storage version, its body converted there through the webhook first
//! and the objects of its answer converted back: a read of that version fails when the webhook
//! does, while everything that reads the storage version (the garbage collector, the other
//! in-process controllers) never depends on it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::Response;
use kgc_meta::catalog::api_version;
use kgc_meta::{GroupResource, ResourceInfo, Status};
use serde_json::{Value, json};

use crate::ApiServer;
use crate::body::{self, ApiError, media_type};
use crate::conversion;
use crate::request::{Query, RequestInfo, Verb};
use crate::webhook::ClientConfig;

/// Upstream's conversion webhooks get 30 s.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Each CRD's conversion webhook client, with the `webhook` it was built from: a LIST in a
/// converted version calls the webhook on every request, which must cost a round trip, not a
/// TLS set-up and handshake (the client keeps its connections).
#[derive(Default)]
pub(crate) struct Clients(Mutex<HashMap<GroupResource, (Value, ClientConfig)>>);

impl Clients {
    /// The client for `info`'s `hook`, the one built before if the hook is unchanged.
    fn get(&self, info: &ResourceInfo, hook: &Value) -> ClientConfig {
        let mut clients = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let gr = info.group_resource();
        if let Some((built_from, client)) = clients.get(&gr)
            && built_from == hook
        {
            return client.clone();
        }
        let client = ClientConfig::from_json(&hook["clientConfig"]);
        clients.insert(gr, (hook.clone(), client.clone()));
        client
    }
}

/// Whether `req` needs the CRD's conversion webhook: the CRD has one and the request names a
/// version other than the storage version.
pub(crate) fn applies(info: &ResourceInfo, req: &RequestInfo) -> bool {
    info.crd
        .as_ref()
        .is_some_and(|c| c.conversion_webhook.is_some() && c.storage_version != req.version)
}

/// The group, version and kind an object says it is, as Go prints a GroupVersionKind.
fn gvk(obj: &Value) -> String {
    let av = obj["apiVersion"].as_str().unwrap_or_default();
    let (g, v) = av.rsplit_once('/').unwrap_or(("", av));
    format!("{g}/{v}, Kind={}", obj["kind"].as_str().unwrap_or_default())
}

/// Converts `objects` to `version` through the CRD's webhook (those already there are left
/// alone). The webhook may change labels and annotations; the rest of the metadata stays as
/// it was (webhook_converter.go `restoreObjectMeta`).
pub(crate) async fn convert(
    api: &ApiServer,
    info: &ResourceInfo,
    version: &str,
    objects: &mut [Value],
) -> Result<(), Status> {
    let Some(hook) = info.crd.as_ref().and_then(|c| c.conversion_webhook.clone()) else {
        return Ok(());
    };
    let desired = api_version(&info.group, version);
    let todo: Vec<usize> = (0..objects.len())
        .filter(|&i| objects[i]["apiVersion"].as_str() != Some(desired.as_str()))
        .collect();
    let Some(&first) = todo.first() else {
        return Ok(());
    };
    let source = gvk(&objects[first]);
    let failed = |what: String| Status::internal(format!("conversion webhook for {source} {what}"));
    let review_version = hook["conversionReviewVersions"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|v| match v.as_str() {
            Some("v1") => Some("v1"),
            Some("v1beta1") => Some("v1beta1"),
            _ => None,
        })
        .unwrap_or("v1");
    let uid = uuid::Uuid::new_v4().to_string();
    let review = json!({
        "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
        "kind": "ConversionReview",
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired,
            "objects": todo.iter().map(|&i| objects[i].clone()).collect::<Vec<_>>(),
        },
    });
    let client = api.conversion_clients.get(info, &hook);
    let answer = client
        .post(&api.store, TIMEOUT, review.to_string().into_bytes())
        .await
        .map_err(|e| failed(format!("failed: {e}")))?;
    let answer: Value = serde_json::from_slice(&answer)
        .map_err(|e| failed(format!("failed: the answer is not a ConversionReview: {e}")))?;
    let resp = &answer["response"];
    if resp["uid"].as_str() != Some(uid.as_str()) {
        return Err(failed(format!(
            "failed: expected response.uid={uid:?}, got {:?}",
            resp["uid"].as_str().unwrap_or_default()
        )));
    }
    if resp["result"]["status"] != "Success" {
        return Err(failed(format!(
            "returned failure: {}",
            resp["result"]["message"].as_str().unwrap_or_default()
        )));
    }
    let converted = resp["convertedObjects"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if converted.len() != todo.len() {
        return Err(failed(format!(
            "failed: expected {} converted objects, got {}",
            todo.len(),
            converted.len()
        )));
    }
    for (i, (&at, mut out)) in todo.iter().zip(converted).enumerate() {
        if out["apiVersion"].as_str() != Some(desired.as_str())
            || out["kind"] != objects[at]["kind"]
        {
            return Err(failed(format!(
                "failed: invalid converted object at index {i}: expected {desired}, Kind={}, got {}",
                info.kind,
                gvk(&out)
            )));
        }
        let mut meta = objects[at]["metadata"].clone();
        for key in ["labels", "annotations"] {
            match out["metadata"].get(key) {
                Some(v) if meta.is_object() => meta[key] = v.clone(),
                _ => {}
            }
        }
        out["metadata"] = meta;
        objects[at] = out;
    }
    Ok(())
}

/// Serves a request in a version the CRD's webhook converts (see the module's documentation).
pub(crate) async fn serve(
    api: &ApiServer,
    info: &ResourceInfo,
    req: RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let storage = conversion::storage_version(info).to_owned();
    let mut inner = req.clone();
    inner.version = storage.clone();
    let body = match req.verb {
        Verb::Watch => {
            return Err(Status::bad_request(format!(
                "watching {} in {} needs its conversion webhook on every event, which kgc does not do yet: watch version {storage}",
                info.plural, req.version
            ))
            .into());
        }
        Verb::Patch => {
            return Err(Status::bad_request(format!(
                "patching {} in {} through its conversion webhook is not supported yet: patch version {storage}, or replace the object",
                info.plural, req.version
            ))
            .into());
        }
        Verb::Create | Verb::Update => {
            let bytes = body::read(body).await?;
            let mut obj = body::decode(&media_type(headers), &bytes)?.value;
            if obj["apiVersion"].as_str().is_none_or(str::is_empty) {
                obj["apiVersion"] = json!(api_version(&info.group, &req.version));
            }
            if obj["kind"].as_str().is_none_or(str::is_empty) {
                obj["kind"] = json!(info.kind);
            }
            convert(api, info, &storage, std::slice::from_mut(&mut obj)).await?;
            Body::from(obj.to_string())
        }
        _ => body,
    };
    let mut json_headers = headers.clone();
    json_headers.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    let resp = Box::pin(crate::handlers::serve(
        api,
        inner,
        query,
        &json_headers,
        body,
    ))
    .await?;
    if !resp.status().is_success() {
        return Ok(resp);
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|e| Status::internal(format!("reading the answer: {e}")))?;
    let Ok(mut answer) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(Response::from_parts(parts, Body::from(bytes)));
    };
    if answer["kind"] == info.kind.as_str() {
        convert(api, info, &req.version, std::slice::from_mut(&mut answer)).await?;
    } else if answer["kind"] == info.list_kind.as_str()
        && let Some(items) = answer["items"].as_array_mut()
    {
        convert(api, info, &req.version, items).await?;
        answer["apiVersion"] = json!(api_version(&info.group, &req.version));
    }
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    let mut out = body::raw_json(parts.status, answer.to_string());
    for (k, v) in parts.headers.iter().filter(|(k, _)| *k == "warning") {
        out.headers_mut().append(k, v.clone());
    }
    Ok(out)
}
