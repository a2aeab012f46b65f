//! Custom resources whose CRD converts through a webhook (`spec.conversion.strategy: Webhook`),
//! as kubernetes/kubernetes `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/
//! webhook_converter.go` calls it: a `ConversionReview` carrying the objects and the
//! `desiredAPIVersion`, answered with `convertedObjects`.
//!
//! Objects are stored in the storage version. A request in another served version is served as
//! the same request in the storage version, its body converted there through the webhook first
//! and the objects of its answer converted back: a read of that version fails when the webhook
//! does, while everything that reads the storage version (the garbage collector, the other
//! in-process controllers) never depends on it. A WATCH converts each event as it streams; a
//! PATCH converts the stored object to the request's version, patches it there and converts
//! the result back (a patch means what it says in the version it was written for).
//!
//! A write is admitted in the version it was written in first, as upstream's handler decodes,
//! prunes, defaults and validates a custom resource there (that version's schema and
//! `x-kubernetes-validations`, an update against the stored object in that version) before
//! the storage layer converts it: a 422 names the fields as the client wrote them. What the
//! webhook made of it is then admitted in the storage version too, unknown fields pruned
//! silently: upstream stores it unchecked, kgc keeps every stored object valid in its version.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::Response;
use kgc_meta::catalog::api_version;
use kgc_meta::{GroupResource, ResourceInfo, Status};
use serde::Serialize;
use serde_json::{Value, json};

use crate::ApiServer;
use crate::admission::{self, FieldValidation, Written};
use crate::body::{self, ApiError, media_type};
use crate::conversion;
use crate::handlers::fieldmanager::Tracking;
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
    let api_version = format!("apiextensions.k8s.io/{review_version}");
    // Written from the objects themselves: a LIST's review carries every object, which must
    // not be copied into a second tree on the way out.
    let review = Review {
        api_version: &api_version,
        kind: "ConversionReview",
        request: ReviewRequest {
            uid: &uid,
            desired_api_version: &desired,
            objects: todo.iter().map(|&i| &objects[i]).collect(),
        },
    };
    let body = serde_json::to_vec(&review)
        .map_err(|e| failed(format!("failed: encoding the ConversionReview: {e}")))?;
    let client = api.conversion_clients.get(info, &hook);
    let answer = client
        .post(&api.store, TIMEOUT, body)
        .await
        .map_err(|e| failed(format!("failed: {e}")))?;
    let mut answer: Value = serde_json::from_slice(&answer)
        .map_err(|e| failed(format!("failed: the answer is not a ConversionReview: {e}")))?;
    let resp = &mut answer["response"];
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
    let converted = match resp.get_mut("convertedObjects").map(Value::take) {
        Some(Value::Array(converted)) => converted,
        _ => Vec::new(),
    };
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
        // The object is replaced by what the webhook made: its metadata moves there.
        let mut meta = objects[at]
            .get_mut("metadata")
            .map(Value::take)
            .unwrap_or_default();
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

/// A `ConversionReview` as sent (apiextensions/v1 `ConversionReview`'s JSON names).
#[derive(Serialize)]
struct Review<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'static str,
    request: ReviewRequest<'a>,
}

#[derive(Serialize)]
struct ReviewRequest<'a> {
    uid: &'a str,
    #[serde(rename = "desiredAPIVersion")]
    desired_api_version: &'a str,
    objects: Vec<&'a Value>,
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
    // A Scale carries no field of the custom resource: served by the storage version, with its
    // replicas paths (upstream reads the request version's paths on the converted object).
    if req.subresource.as_deref() == Some("scale") {
        return Box::pin(crate::handlers::serve(api, inner, query, headers, body)).await;
    }
    let resp = match req.verb {
        Verb::Watch => return watch(api, info, &req, inner, query, headers).await,
        Verb::Patch => patch(api, info, &req, inner, query, headers, body).await?,
        Verb::Create | Verb::Update => {
            let (written, strict) = crate::handlers::object_body(info, &req, headers, body).await?;
            write(api, info, &req, &inner, query, headers, written, strict).await?
        }
        _ => {
            let json_headers = json_headers(headers);
            Box::pin(crate::handlers::serve(
                api,
                inner,
                query,
                &json_headers,
                body,
            ))
            .await?
        }
    };
    in_request_version(api, info, &req, resp).await
}

/// A create or update of `written` in `req`'s version (a converted one): admitted there, its
/// managedFields recorded there, converted and stored (`inner`: the request in the storage
/// version). An update without a resourceVersion is made against the object it was admitted
/// against and planned again when another writer changed it meanwhile, so that what that writer
/// recorded in managedFields is not overwritten.
#[allow(clippy::too_many_arguments)]
async fn write(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    inner: &RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    written: Value,
    strict: Vec<String>,
) -> Result<Response, ApiError> {
    let unconditional = req.verb == Verb::Update
        && written["metadata"]["resourceVersion"]
            .as_str()
            .is_none_or(str::is_empty);
    let tracking = Tracking::new(api.store.clock(), info, req, query, headers);
    for _ in 0..PATCH_RETRIES {
        let mut obj = written.clone();
        let old = match req.verb {
            Verb::Update => read_in(api, info, req, &req.version).await?,
            _ => None,
        };
        if let (true, Some((stored, _))) = (unconditional, &old) {
            obj["metadata"]["resourceVersion"] = json!(stored.resource_version.to_string());
        }
        let old = old.map(|(_, o)| o);
        let warnings = admit_in_request_version(
            info,
            req,
            query,
            Written::Object,
            &mut obj,
            old.as_ref(),
            strict.clone(),
        )?;
        let mut obj = tracking.record(old.as_ref(), &obj);
        convert(api, info, &inner.version, std::slice::from_mut(&mut obj)).await?;
        match store(api, info, inner, &in_storage_version(query), obj, warnings).await {
            Err(e) if unconditional && stale(&e) => continue,
            r => return r,
        }
    }
    let gr = info.group_resource();
    let name = req.name.as_deref().unwrap_or_default();
    Err(Status::conflict(&gr, name, "the object kept changing during update").into())
}

/// Admits `obj`, written in `req`'s version (a converted one), in that version: pruned,
/// defaulted and validated against that version's schema and rules (`old`: the stored object in
/// that version, for an update). Returns the warnings.
fn admit_in_request_version(
    info: &ResourceInfo,
    req: &RequestInfo,
    query: &Query,
    written: Written,
    obj: &mut Value,
    old: Option<&Value>,
    strict: Vec<String>,
) -> Result<Vec<String>, Status> {
    let mode = FieldValidation::of(query)?;
    let mut warnings = admission::admit(info, req, mode, written, obj, old, strict)?;
    warnings.extend(crate::validation_rules::admit(info, obj, old)?);
    Ok(warnings)
}

/// Creates or updates (as `write`, a request in the storage version says) `obj`, converted
/// there with its managedFields recorded in the version it was written in: upstream's field
/// manager tracks a write in the request's version, before the storage layer converts it.
async fn store(
    api: &ApiServer,
    info: &ResourceInfo,
    write: &RequestInfo,
    storage_query: &Query,
    obj: Value,
    mut warnings: Vec<String>,
) -> Result<Response, ApiError> {
    let (obj, more) =
        crate::handlers::admitted_object(api, info, write, storage_query, obj, Vec::new())?;
    warnings.extend(more);
    if write.verb == Verb::Create {
        let create = crate::handlers::create::create_object;
        Box::pin(create(api, info, write, storage_query, obj, warnings, None)).await
    } else {
        let update = crate::handlers::update::update_object;
        Box::pin(update(api, info, write, storage_query, obj, warnings, None)).await
    }
}

/// The query of the request in the storage version: the client's fields were judged in its own
/// version, so what the webhook added that the storage version does not know is pruned there
/// without a word, as upstream's storage prunes it.
fn in_storage_version(query: &Query) -> Query {
    query.with("fieldValidation", "Ignore")
}

/// The stored object named by `req`, and it converted to `version`.
async fn read_in(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    version: &str,
) -> Result<Option<(std::sync::Arc<kgc_store::StoredObject>, Value)>, Status> {
    let gr = info.group_resource();
    let ns = req.namespace.as_deref().unwrap_or_default();
    let name = req.name.as_deref().unwrap_or_default();
    let Some(stored) = api.store.get(&gr, ns, name) else {
        return Ok(None);
    };
    let mut live = stored.value();
    convert(api, info, version, std::slice::from_mut(&mut live)).await?;
    Ok(Some((stored, live)))
}

/// `headers` with a JSON body: what the request in the storage version carries.
fn json_headers(headers: &HeaderMap) -> HeaderMap {
    let mut json_headers = headers.clone();
    json_headers.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    json_headers
}

/// The answer of the request in the storage version, its objects converted to the request's.
async fn in_request_version(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    resp: Response,
) -> Result<Response, ApiError> {
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
    // A LIST's answer is as large as the storage version's: written once, into a buffer of
    // about its size.
    let mut text = Vec::with_capacity(bytes.len() + bytes.len() / 8);
    serde_json::to_writer(&mut text, &answer)
        .map_err(|e| Status::internal(format!("encoding the answer: {e}")))?;
    let text = String::from_utf8(text)
        .map_err(|e| Status::internal(format!("encoding the answer: {e}")))?;
    let mut out = body::raw_json(parts.status, text);
    for (k, v) in parts.headers.iter().filter(|(k, _)| *k == "warning") {
        out.headers_mut().append(k, v.clone());
    }
    Ok(out)
}

/// How often a PATCH, or an update without a resourceVersion, is planned again when the object
/// changed under it (upstream's patcher `maxRetryWhenPatchConflicts`).
const PATCH_RETRIES: usize = 5;

/// Whether a write failed only because the object changed (or appeared) since it was read.
fn stale(e: &ApiError) -> bool {
    e.0.is(kgc_meta::Reason::Conflict) || e.0.is(kgc_meta::Reason::AlreadyExists)
}

/// A PATCH in a converted version, as upstream's patcher does it for such a resource: the
/// stored object converted to the request's version, the patch applied there, the result
/// converted back to the storage version and written over the object that was read; planned
/// again when the object changed meanwhile. Strategic merge patches are refused (415) as for
/// every custom resource.
async fn patch(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    inner: RequestInfo,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    use crate::handlers::patch as p;
    let media = media_type(headers);
    p::check_patch_type(info, &media)?;
    let gr = info.group_resource();
    let name = req.name.as_deref().unwrap_or_default();
    let storage_query = in_storage_version(query);
    let write = RequestInfo {
        verb: Verb::Update,
        ..inner.clone()
    };
    if media == "application/apply-patch+yaml" {
        let apply = p::ApplyRequest::read(api, info, req, query, headers, body).await?;
        for _ in 0..PATCH_RETRIES {
            let live = read_in(api, info, req, &req.version).await?;
            let old = live.as_ref().map(|(_, l)| l);
            // Custom resources have no LimitRanges.
            let mut merged = apply.merge(api, info, req, old, None)?;
            let warnings = admit_in_request_version(
                info,
                req,
                query,
                Written::ApplyConfiguration,
                &mut merged,
                old,
                Vec::new(),
            )?;
            convert(api, info, &inner.version, std::slice::from_mut(&mut merged)).await?;
            // Its managedFields are tracked already, in the request's version.
            let write = match live {
                Some((stored, _)) => {
                    merged["metadata"]["resourceVersion"] =
                        json!(stored.resource_version.to_string());
                    write.clone()
                }
                None => RequestInfo {
                    verb: Verb::Create,
                    ..inner.clone()
                },
            };
            let written = store(api, info, &write, &storage_query, merged, warnings).await;
            match written {
                Err(e) if stale(&e) => continue,
                r => return r,
            }
        }
        return Err(Status::conflict(&gr, name, "the object kept changing during apply").into());
    }
    let (patch, _) = p::patch_body(body, &media).await?;
    let tracking = Tracking::new(api.store.clock(), info, req, query, headers);
    for _ in 0..PATCH_RETRIES {
        let (_, live) = read_in(api, info, req, &req.version)
            .await?
            .ok_or_else(|| Status::not_found(&gr, name))?;
        let mut obj = live.clone();
        let read_version = obj["metadata"]["resourceVersion"].clone();
        p::apply_patch(info, name, &media, &mut obj, &patch)?;
        if !obj.is_object() {
            return Err(Status::invalid(
                "",
                "",
                "",
                &[kgc_meta::FieldError::invalid(
                    "patch",
                    obj.to_string(),
                    "the patched object must be a JSON object",
                )],
            )
            .into());
        }
        obj["kind"] = json!(info.kind);
        // A resourceVersion the patch names is its precondition: a conflict is then the answer.
        let precondition = obj["metadata"]["resourceVersion"] != read_version
            && !obj["metadata"]["resourceVersion"].is_null();
        if !precondition {
            obj["metadata"]["resourceVersion"] = read_version;
        }
        let warnings = admit_in_request_version(
            info,
            req,
            query,
            Written::Patch,
            &mut obj,
            Some(&live),
            Vec::new(),
        )?;
        let mut obj = tracking.record(Some(&live), &obj);
        convert(api, info, &inner.version, std::slice::from_mut(&mut obj)).await?;
        match store(api, info, &write, &storage_query, obj, warnings).await {
            Err(e) if !precondition && stale(&e) => continue,
            r => return r,
        }
    }
    Err(Status::conflict(&gr, name, "the object kept changing during patch").into())
}

/// A WATCH in a converted version: the watch of the storage version, each event's object
/// converted through the webhook as it comes (one ConversionReview an event, as upstream's
/// watch encoder converts each object on its way out; a Table watch is passed as it is, as
/// a Table GET is). When a conversion fails the watch ends, as upstream's does (handlers/
/// watch.go ends a watch whose event does not encode); kgc first sends the failure as an
/// ERROR event, so that the client sees why rather than a bare end of stream.
async fn watch(
    api: &ApiServer,
    info: &ResourceInfo,
    req: &RequestInfo,
    inner: RequestInfo,
    query: &Query,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let resp = Box::pin(crate::handlers::serve(
        api,
        inner,
        query,
        headers,
        Body::empty(),
    ))
    .await?;
    if !resp.status().is_success() || crate::handlers::table_request(headers, query)?.is_some() {
        return Ok(resp);
    }
    let (parts, body) = resp.into_parts();
    let state = WatchConversion {
        api: api.clone(),
        info: info.clone(),
        version: req.version.clone(),
        events: body.into_data_stream(),
        pending: Vec::new(),
        done: false,
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        st.next_line()
            .await
            .map(|line| (Ok::<_, std::convert::Infallible>(line), st))
    });
    Ok(Response::from_parts(parts, Body::from_stream(stream)))
}

/// The converting end of a watch: reads the storage version's event lines, writes the
/// request's.
struct WatchConversion {
    api: ApiServer,
    info: ResourceInfo,
    version: String,
    events: axum::body::BodyDataStream,
    /// What was read past the last full line.
    pending: Vec<u8>,
    done: bool,
}

impl WatchConversion {
    async fn next_line(&mut self) -> Option<axum::body::Bytes> {
        use futures::StreamExt;
        if self.done {
            return None;
        }
        let line = loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let rest = self.pending.split_off(end + 1);
                break std::mem::replace(&mut self.pending, rest);
            }
            match self.events.next().await {
                Some(Ok(chunk)) => self.pending.extend_from_slice(&chunk),
                _ if self.pending.is_empty() => return None,
                _ => break std::mem::take(&mut self.pending),
            }
        };
        let Ok(mut event) = serde_json::from_slice::<Value>(&line) else {
            return Some(line.into());
        };
        match event["type"].as_str() {
            Some("ERROR") => {}
            Some("BOOKMARK") => {
                event["object"]["apiVersion"] = json!(api_version(&self.info.group, &self.version));
            }
            _ => {
                let converted = convert(
                    &self.api,
                    &self.info,
                    &self.version,
                    std::slice::from_mut(&mut event["object"]),
                )
                .await;
                if let Err(status) = converted {
                    tracing::warn!(resource = %self.info.group_resource(), error = %status.message, "unable to encode watch object: the watch ends");
                    self.done = true;
                    return Some(crate::watch::error_line(&status));
                }
            }
        }
        let mut text = event.to_string();
        text.push('\n');
        Some(text.into())
    }
}
