//! [`Cluster`] against any Kubernetes API server, through kube-rs.
//!
//! Every request is the one kube-controller-manager's garbage collector sends
//! (kubernetes/kubernetes `pkg/controller/garbagecollector/operations.go`, `patch.go`):
//! metadata-only GETs, LISTs and WATCHes (`Accept: ...;as=PartialObjectMetadata`), DELETE with uid
//! and resourceVersion preconditions, owner-reference removal as a strategic merge patch that
//! embeds the dependent's uid (so a re-created object of the same name is never edited), with the
//! JSON-merge-patch fallback that custom resources need (415), and finalizer removal as a merge
//! patch guarded by resourceVersion, retried on conflict like client-go's `retry.RetryOnConflict`.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::Refused;
use crate::backoff::Backoff;
use futures::stream::{BoxStream, StreamExt};
use kgc_meta::catalog::api_version;
use kgc_meta::status::Cause;
use kgc_meta::{
    DeleteOptions, GroupResource, ObjectMeta, OwnerReference, PropagationPolicy, Reason,
    ResourceInfo, Status,
};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, PartialObjectMeta, Patch,
    PatchParams, PostParams,
};
use kube::core::Request;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::{Cluster, Deleted, Error, ObjectEvent, Result};

type MetaApi = Api<PartialObjectMeta<DynamicObject>>;

/// A Kubernetes API server as a [`Cluster`]. Cheap to clone.
#[derive(Clone)]
pub struct Remote {
    client: kube::Client,
    /// Resources that answered a strategic merge patch with 415 (custom resources): their
    /// patches go straight to the JSON-merge-patch form, saving a request per object.
    no_strategic: Arc<RwLock<HashSet<GroupResource>>>,
    /// Set once the server answered aggregated discovery with something else: later
    /// discoveries go straight to the legacy documents.
    legacy_discovery: Arc<AtomicBool>,
}

impl Remote {
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            no_strategic: Arc::default(),
            legacy_discovery: Arc::default(),
        }
    }

    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// A metadata-only API for one resource, constrained to `namespace` for a namespaced one.
    fn api(&self, resource: &ResourceInfo, namespace: &str) -> Result<MetaApi> {
        self.api_of(resource, namespace)
    }

    /// An API of objects of type `K` (metadata-only or whole) for one resource, constrained to
    /// `namespace` for a namespaced one.
    fn api_of<K>(&self, resource: &ResourceInfo, namespace: &str) -> Result<Api<K>>
    where
        K: kube::Resource<DynamicType = ApiResource, Scope = kube::core::DynamicResourceScope>,
    {
        let ar = api_resource(resource);
        if !resource.namespaced() {
            return Ok(Api::all_with(self.client.clone(), &ar));
        }
        if namespace.is_empty() {
            return Err(Error::Api(Status::bad_request(format!(
                "an empty namespace may not be set when a resource name is provided for the namespaced resource {}",
                resource.group_resource()
            ))));
        }
        Ok(Api::namespaced_with(self.client.clone(), namespace, &ar))
    }

    fn strategic_supported(&self, resource: &ResourceInfo) -> bool {
        !self
            .no_strategic
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&resource.group_resource())
    }

    fn strategic_unsupported(&self, resource: &ResourceInfo) {
        self.no_strategic
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(resource.group_resource());
    }

    /// The object's live metadata, checked to be the object whose uid is `uid`: 404 when it is
    /// gone, 409 when another object took its name.
    async fn get_exact(
        &self,
        api: &MetaApi,
        resource: &ResourceInfo,
        name: &str,
        uid: &str,
    ) -> Result<ObjectMeta> {
        let gr = resource.group_resource();
        let found = api
            .get_metadata_opt(name)
            .await
            .map_err(from_kube)?
            .map(|m| meta(&m.metadata));
        match found {
            None => Err(Error::Api(Status::not_found(&gr, name))),
            Some(m) if !uid.is_empty() && m.uid != uid => Err(uid_conflict(&gr, name, uid, &m.uid)),
            Some(m) => Ok(m),
        }
    }

    /// A strategic merge patch of metadata, falling back to a JSON merge patch built by
    /// `fallback` from the live object on 415 (upstream `patch()` in `patch.go`). A 422 from the
    /// strategic patch (its `metadata.uid` no longer matches: uids are immutable) becomes the
    /// 409 the in-process cluster answers.
    async fn patch_metadata(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
        strategic: Option<Value>,
        fallback: impl FnOnce(&ObjectMeta) -> Option<Value> + Send,
    ) -> Result<()> {
        let api = self.api(resource, namespace)?;
        if let Some(patch) = strategic.filter(|_| self.strategic_supported(resource)) {
            match self
                .write(Request::new(api.resource_url()).patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Strategic(&patch),
                ))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 415 => {
                    tracing::debug!(resource = %resource.group_resource(), "strategic merge patch unsupported; using a JSON merge patch");
                    self.strategic_unsupported(resource);
                }
                Err(kube::Error::Api(s)) if s.code == 422 => {
                    // Tell "another object by that name" (409) from a real validation error.
                    self.get_exact(&api, resource, name, uid).await?;
                    return Err(from_kube(kube::Error::Api(s)));
                }
                Err(e) => return Err(from_kube(e)),
            }
        }
        let live = self.get_exact(&api, resource, name, uid).await?;
        let Some(patch) = fallback(&live) else {
            return Ok(());
        };
        self.merge_patch(api.resource_url(), name, &patch).await
    }

    /// A JSON merge patch of `name` among the objects at `url` (an `Api`'s `resource_url`).
    async fn merge_patch(&self, url: &str, name: &str, patch: &Value) -> Result<()> {
        self.write(Request::new(url).patch(name, &PatchParams::default(), &Patch::Merge(patch)))
            .await
            .map(|_| ())
            .map_err(from_kube)
    }

    /// Sends a write and returns the text of its answer, judged by the HTTP status alone: a
    /// 2xx answer is success whatever its body holds. A typed decoding of the answer failed
    /// writes the server had made (an answer without `apiVersion` did), and the garbage
    /// collector retried such an orphaning patch for ever.
    async fn write(
        &self,
        request: std::result::Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> std::result::Result<String, kube::Error> {
        let request = request.map_err(kube::Error::BuildRequest)?;
        self.client.request_text(request).await
    }
}

/// core/v1 Events, which collectors record.
static EVENTS: std::sync::LazyLock<ApiResource> = std::sync::LazyLock::new(|| ApiResource {
    group: String::new(),
    version: "v1".into(),
    api_version: "v1".into(),
    kind: "Event".into(),
    plural: "events".into(),
});

/// The resource as kube-rs names it, at its preferred version.
pub fn api_resource(r: &ResourceInfo) -> ApiResource {
    let version = r.preferred_version();
    ApiResource {
        group: r.group.clone(),
        version: version.to_owned(),
        api_version: api_version(&r.group, version),
        kind: r.kind.clone(),
        plural: r.plural.clone(),
    }
}

/// `metav1.ObjectMeta` (kube-rs) to the collectors' view of it (also `kgc tree`'s graph).
pub fn meta(m: &kube::core::ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        namespace: m.namespace.clone().unwrap_or_default(),
        name: m.name.clone().unwrap_or_default(),
        uid: m.uid.clone().unwrap_or_default(),
        resource_version: m.resource_version.clone().unwrap_or_default(),
        deletion_timestamp: m.deletion_timestamp.as_ref().map(|t| t.0.to_string()),
        finalizers: m.finalizers.clone().unwrap_or_default(),
        owner_references: m
            .owner_references
            .iter()
            .flatten()
            .map(|r| OwnerReference {
                api_version: r.api_version.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
                uid: r.uid.clone(),
                controller: r.controller,
                block_owner_deletion: r.block_owner_deletion,
            })
            .collect(),
    }
}

fn uid_conflict(gr: &GroupResource, name: &str, want: &str, have: &str) -> Error {
    Error::Api(Status::conflict(
        gr,
        name,
        &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {have}"),
    ))
}

/// A `StatusReason` string; unknown or missing reasons are inferred from the code, as
/// apimachinery's `ReasonForError` callers effectively do for reason-less bodies.
fn reason(reason: &str, code: u16) -> Reason {
    match reason {
        "NotFound" => Reason::NotFound,
        "AlreadyExists" => Reason::AlreadyExists,
        "Conflict" => Reason::Conflict,
        "Invalid" => Reason::Invalid,
        "BadRequest" => Reason::BadRequest,
        "Forbidden" => Reason::Forbidden,
        "Expired" | "Gone" => Reason::Expired,
        "MethodNotAllowed" => Reason::MethodNotAllowed,
        "UnsupportedMediaType" => Reason::UnsupportedMediaType,
        "NotAcceptable" => Reason::NotAcceptable,
        "RequestEntityTooLarge" => Reason::RequestEntityTooLarge,
        "InternalError" => Reason::InternalError,
        "Timeout" | "ServerTimeout" => Reason::Timeout,
        _ => match code {
            400 => Reason::BadRequest,
            403 => Reason::Forbidden,
            404 => Reason::NotFound,
            405 => Reason::MethodNotAllowed,
            406 => Reason::NotAcceptable,
            409 => Reason::Conflict,
            410 => Reason::Expired,
            413 => Reason::RequestEntityTooLarge,
            415 => Reason::UnsupportedMediaType,
            422 => Reason::Invalid,
            500 => Reason::InternalError,
            504 => Reason::Timeout,
            _ => Reason::Unknown,
        },
    }
}

/// A kube-rs `Status` as the collectors' [`Status`]: code, reason, message and details kept.
pub(crate) fn status(s: &kube::core::Status) -> Status {
    let details = s.details.as_ref();
    Status {
        code: s.code,
        reason: reason(&s.reason, s.code),
        message: s.message.clone(),
        name: details.map(|d| d.name.clone()).unwrap_or_default(),
        group: details.map(|d| d.group.clone()).unwrap_or_default(),
        kind: details.map(|d| d.kind.clone()).unwrap_or_default(),
        causes: details
            .map(|d| {
                d.causes
                    .iter()
                    .map(|c| Cause {
                        kind: c.reason.clone(),
                        message: c.message.clone(),
                        field: c.field.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        retry_after_seconds: details.map(|d| d.retry_after_seconds).filter(|s| *s > 0),
    }
}

/// API answers keep their status; everything else is the transport failing (a refused
/// connection said as kubectl says it).
pub(crate) fn from_kube(e: kube::Error) -> Error {
    match e {
        kube::Error::Api(s) => Error::Api(status(&s)),
        other => match Refused::find(&other) {
            Some(r) => Error::Refused(r.clone()),
            None => Error::Transport(other.to_string()),
        },
    }
}

/// What a DELETE's answer says: a `Status` means the object is gone; an object is still there
/// (being deleted) when it carries a deletion timestamp, and is otherwise the deleted object
/// itself, which some kinds return (`ReturnDeletedObject`). Read from the JSON as it is, so an
/// answer missing fields a typed decoding wants never fails a delete that was made.
fn deleted(answer: &str) -> Deleted {
    let v: Value = serde_json::from_str(answer).unwrap_or(Value::Null);
    let pending = v["kind"] != "Status"
        && v["metadata"]["deletionTimestamp"]
            .as_str()
            .is_some_and(|t| !t.is_empty());
    if pending {
        Deleted::Pending(ObjectMeta::from_object(&v))
    } else {
        Deleted::Gone
    }
}

/// `kgc_meta::DeleteOptions` as kube-rs `DeleteParams`.
fn delete_params(o: &DeleteOptions) -> DeleteParams {
    use kube::api::PropagationPolicy as P;
    let policy = o.propagation_policy.or(match o.orphan_dependents {
        Some(true) => Some(PropagationPolicy::Orphan),
        Some(false) => Some(PropagationPolicy::Background),
        None => None,
    });
    let preconditions = (o.preconditions.uid.is_some()
        || o.preconditions.resource_version.is_some())
    .then(|| kube::api::Preconditions {
        uid: o.preconditions.uid.clone(),
        resource_version: o.preconditions.resource_version.clone(),
    });
    DeleteParams {
        dry_run: o.dry_run,
        grace_period_seconds: o
            .grace_period_seconds
            .map(|g| u32::try_from(g.max(0)).unwrap_or(u32::MAX)),
        propagation_policy: policy.map(|p| match p {
            PropagationPolicy::Orphan => P::Orphan,
            PropagationPolicy::Background => P::Background,
            PropagationPolicy::Foreground => P::Foreground,
        }),
        preconditions,
    }
}

/// client-go `retry.DefaultBackoff`: 4 steps, 10 ms, ×5, 10 % jitter.
const RETRY_STEPS: u32 = 4;
const RETRY_INITIAL: Duration = Duration::from_millis(10);
const RETRY_FACTOR: u32 = 5;

fn jittered(d: Duration) -> Duration {
    // 0–10 % extra, from the clock's sub-microsecond noise: no RNG dependency for this.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.subsec_nanos())
        .unwrap_or(0);
    d + d.mul_f64(f64::from(nanos % 1000) / 10_000.0)
}

fn refs_json(refs: &[OwnerReference]) -> Value {
    if refs.is_empty() {
        // Upstream marshals a nil slice: `null`, which removes the field.
        Value::Null
    } else {
        Value::Array(refs.iter().map(OwnerReference::to_json).collect())
    }
}

/// How long a failing watch must go without an error before it is said to have recovered:
/// longer than a re-list and the watch request after it take, so that a server that lists but
/// refuses watches is one failure, not a failure and a recovery per attempt.
const RECOVERED_AFTER: Duration = Duration::from_secs(10);

/// A watch of `resource` that re-opens itself after an error only once client-go's reflector
/// back-off has passed ([`Backoff::reflector`]), and says so once when it starts failing and
/// once when it has recovered, not at every attempt. The list-and-watch loop re-opens a failed
/// watch at its next poll; unpaced, a server answering every watch with an error Status had
/// each one re-opened ten times a second. An expired watch (410) is re-listed after the same back-off
/// (client-go waits between any two `ListAndWatch` runs) without being called a failure.
fn paced<T: Send + 'static>(
    resource: GroupResource,
    events: BoxStream<'static, Result<ObjectEvent<T>>>,
) -> BoxStream<'static, Result<ObjectEvent<T>>> {
    struct State<T> {
        resource: GroupResource,
        events: BoxStream<'static, Result<ObjectEvent<T>>>,
        backoff: Backoff,
        /// Waited before the watch is polled again, after an error.
        pause: Option<Duration>,
        failing: bool,
        /// While failing: when the watch counts as recovered if no error comes first.
        recovers_at: Option<Instant>,
    }
    enum Next<T> {
        Event(Option<Result<ObjectEvent<T>>>),
        Recovered,
    }
    let state = State {
        resource,
        events,
        backoff: Backoff::reflector(),
        pause: None,
        failing: false,
        recovers_at: None,
    };
    futures::stream::unfold(state, |mut st| async move {
        if let Some(pause) = st.pause.take() {
            tokio::time::sleep(pause).await;
        }
        loop {
            let next = match st.recovers_at {
                Some(at) => tokio::select! {
                    event = st.events.next() => Next::Event(event),
                    () = tokio::time::sleep_until(at) => Next::Recovered,
                },
                None => Next::Event(st.events.next().await),
            };
            let event = match next {
                Next::Recovered => {
                    tracing::info!(resource = %st.resource, "watch recovered");
                    st.failing = false;
                    st.recovers_at = None;
                    continue;
                }
                Next::Event(None) => return None,
                Next::Event(Some(event)) => event,
            };
            match &event {
                Err(e) if e.is(Reason::Expired) && !st.failing => {
                    tracing::debug!(resource = %st.resource, error = %e, "watch expired; re-listing");
                }
                Err(e) if st.failing => {
                    tracing::debug!(resource = %st.resource, error = %e, "watch still failing");
                }
                Err(e) => {
                    tracing::warn!(resource = %st.resource, error = %e, "watch failing; re-opening it with back-off");
                    st.failing = true;
                }
                Ok(_) => {
                    if st.failing && st.recovers_at.is_none() {
                        st.recovers_at = Some(Instant::now() + RECOVERED_AFTER);
                    }
                    return Some((event, st));
                }
            }
            st.recovers_at = None;
            st.pause = Some(st.backoff.next_delay());
            return Some((event, st));
        }
    })
    .boxed()
}

impl Cluster for Remote {
    async fn resources(&self) -> Result<Vec<Arc<ResourceInfo>>> {
        crate::discovery::remote(&self.client, &self.legacy_discovery).await
    }

    fn watch(
        &self,
        resource: Arc<ResourceInfo>,
    ) -> BoxStream<'static, Result<ObjectEvent<ObjectMeta>>> {
        let api: MetaApi = Api::all_with(self.client.clone(), &api_resource(&resource));
        let events = crate::reflector::list_and_watch(api, |o| meta(&o.metadata));
        paced(resource.group_resource(), events)
    }

    async fn get(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ObjectMeta>> {
        let api = self.api(resource, namespace)?;
        Ok(api
            .get_metadata_opt(name)
            .await
            .map_err(from_kube)?
            .map(|m| meta(&m.metadata)))
    }

    async fn delete(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Deleted> {
        let api = self.api(resource, namespace)?;
        let answer = self
            .write(Request::new(api.resource_url()).delete(name, &delete_params(options)))
            .await
            .map_err(from_kube)?;
        Ok(deleted(&answer))
    }

    async fn remove_owner_references(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
        owners: &[String],
    ) -> Result<()> {
        // Upstream `deleteOwnerRefStrategicMergePatch`.
        let deletes: Vec<Value> = owners
            .iter()
            .map(|o| json!({"$patch": "delete", "uid": o}))
            .collect();
        let mut strategic = json!({"metadata": {"ownerReferences": deletes}});
        if !uid.is_empty() {
            strategic["metadata"]["uid"] = Value::from(uid);
        }
        // Upstream `deleteOwnerRefJSONMergePatch`.
        let fallback = |live: &ObjectMeta| {
            let remaining: Vec<OwnerReference> = live
                .owner_references
                .iter()
                .filter(|r| !owners.contains(&r.uid))
                .cloned()
                .collect();
            (remaining.len() != live.owner_references.len()).then(|| {
                json!({"metadata": {
                    "resourceVersion": live.resource_version,
                    "ownerReferences": refs_json(&remaining),
                }})
            })
        };
        self.patch_metadata(resource, namespace, name, uid, Some(strategic), fallback)
            .await
    }

    async fn unblock_owner_references(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<()> {
        // Upstream builds the strategic patch from the graph's owners; the trait hands over no
        // owners, so they are read first.
        let api = self.api(resource, namespace)?;
        let live = self.get_exact(&api, resource, name, uid).await?;
        let blocking: Vec<OwnerReference> = live
            .owner_references
            .iter()
            .filter(|r| r.block_owner_deletion == Some(true))
            .map(|r| OwnerReference {
                block_owner_deletion: Some(false),
                ..r.clone()
            })
            .collect();
        if blocking.is_empty() {
            return Ok(());
        }
        let mut strategic = json!({"metadata": {"ownerReferences": refs_json(&blocking)}});
        if !uid.is_empty() {
            strategic["metadata"]["uid"] = Value::from(uid);
        }
        // Upstream `unblockOwnerReferencesJSONMergePatch`.
        let fallback = |live: &ObjectMeta| {
            let all: Vec<OwnerReference> = live
                .owner_references
                .iter()
                .map(|r| OwnerReference {
                    block_owner_deletion: r.block_owner_deletion.map(|_| false),
                    ..r.clone()
                })
                .collect();
            (all != live.owner_references).then(|| {
                json!({"metadata": {
                    "resourceVersion": live.resource_version,
                    "ownerReferences": refs_json(&all),
                }})
            })
        };
        self.patch_metadata(resource, namespace, name, uid, Some(strategic), fallback)
            .await
    }

    async fn remove_finalizer(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
        finalizer: &str,
    ) -> Result<()> {
        // Upstream `removeFinalizer`: `retry.RetryOnConflict(retry.DefaultBackoff, ...)`.
        let api = self.api(resource, namespace)?;
        let mut delay = RETRY_INITIAL;
        let mut attempt = 1;
        loop {
            let live = match self.get_exact(&api, resource, name, uid).await {
                Err(e) if e.is(Reason::NotFound) => return Ok(()),
                other => other?,
            };
            if !live.has_finalizer(finalizer) {
                return Ok(());
            }
            let remaining: Vec<&String> =
                live.finalizers.iter().filter(|f| *f != finalizer).collect();
            let patch = json!({"metadata": {
                "resourceVersion": live.resource_version,
                "finalizers": if remaining.is_empty() { Value::Null } else { json!(remaining) },
            }});
            match self
                .write(Request::new(api.resource_url()).patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                ))
                .await
                .map_err(from_kube)
            {
                Ok(_) => return Ok(()),
                Err(e) if e.is(Reason::NotFound) => return Ok(()),
                Err(e) if e.is(Reason::Conflict) && attempt < RETRY_STEPS => {
                    tokio::time::sleep(jittered(delay)).await;
                    delay *= RETRY_FACTOR;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn create_event(&self, event: Value) -> Result<()> {
        let namespace = event["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_owned();
        let body = serde_json::to_vec(&event)
            .map_err(|e| Error::Api(Status::bad_request(format!("invalid event: {e}"))))?;
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &namespace, &*EVENTS);
        self.write(Request::new(api.resource_url()).create(&PostParams::default(), body))
            .await
            .map(|_| ())
            .map_err(from_kube)
    }

    async fn patch_event(&self, namespace: &str, name: &str, patch: Value) -> Result<()> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &*EVENTS);
        self.merge_patch(api.resource_url(), name, &patch).await
    }

    fn watch_objects(
        &self,
        resource: Arc<ResourceInfo>,
    ) -> BoxStream<'static, Result<ObjectEvent>> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &api_resource(&resource));
        let events = crate::reflector::list_and_watch(api, cached);
        paced(resource.group_resource(), events)
    }

    async fn get_object(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>> {
        let api: Api<DynamicObject> = self.api_of(resource, namespace)?;
        Ok(api
            .get_opt(name)
            .await
            .map_err(from_kube)?
            .map(|o| to_json(&o)))
    }

    async fn replace_subresource(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        subresource: &str,
        object: Value,
    ) -> Result<Value> {
        let api: Api<DynamicObject> = self.api_of(resource, namespace)?;
        let body = serde_json::to_vec(&object).map_err(|e| {
            Error::Api(Status::bad_request(format!(
                "invalid {} {name}: {e}",
                resource.kind
            )))
        })?;
        let answer = self
            .write(Request::new(api.resource_url()).replace_subresource(
                subresource,
                name,
                &PostParams::default(),
                body,
            ))
            .await
            .map_err(from_kube)?;
        serde_json::from_str(&answer).map_err(|e| {
            Error::Transport(format!(
                "the {subresource} of {} {name} was written, but the answer is not JSON: {e}",
                resource.kind
            ))
        })
    }

    async fn list(&self, resource: &ResourceInfo, namespace: &str) -> Result<Vec<ObjectMeta>> {
        let api: MetaApi = if namespace.is_empty() {
            Api::all_with(self.client.clone(), &api_resource(resource))
        } else {
            self.api(resource, namespace)?
        };
        let mut out = Vec::new();
        let mut params = ListParams::default().limit(500);
        loop {
            let page = api.list_metadata(&params).await.map_err(from_kube)?;
            out.extend(page.items.iter().map(|o| meta(&o.metadata)));
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => return Ok(out),
            }
        }
    }

    async fn delete_collection(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        options: &DeleteOptions,
    ) -> Result<()> {
        let api: MetaApi = if namespace.is_empty() {
            Api::all_with(self.client.clone(), &api_resource(resource))
        } else {
            self.api(resource, namespace)?
        };
        // Judged by its status only: the answer (a list or a Status) is not needed.
        self.write(
            Request::new(api.resource_url())
                .delete_collection(&delete_params(options), &ListParams::default()),
        )
        .await
        .map(|_| ())
        .map_err(from_kube)
    }
}

/// A kube-rs dynamic object as the JSON the server sent (`DynamicObject` serializes back to
/// exactly that shape).
fn to_json(o: &DynamicObject) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}

/// An object as caches keep it (`Cluster::watch_objects`): without its managedFields.
fn cached(o: &DynamicObject) -> Value {
    let mut object = to_json(o);
    kgc_meta::trim::strip_managed_fields(&mut object);
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_keep_code_reason_and_message() {
        let s: kube::core::Status = serde_json::from_value(json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 409,
            "reason": "Conflict", "message": "Operation cannot be fulfilled",
            "details": {"name": "a", "kind": "configmaps",
                        "causes": [{"reason": "FieldValueInvalid", "message": "m", "field": "f"}]}
        }))
        .unwrap();
        let st = status(&s);
        assert_eq!(st.code, 409);
        assert_eq!(st.reason, Reason::Conflict);
        assert_eq!(st.message, "Operation cannot be fulfilled");
        assert_eq!(st.name, "a");
        assert_eq!(st.kind, "configmaps");
        assert_eq!(st.causes.len(), 1);
        assert_eq!(st.causes[0].field, "f");
    }

    #[test]
    fn reasonless_statuses_are_inferred_from_the_code() {
        assert_eq!(reason("", 404), Reason::NotFound);
        assert_eq!(
            reason("Failed to parse error data", 415),
            Reason::UnsupportedMediaType
        );
        assert_eq!(reason("", 418), Reason::Unknown);
        assert_eq!(reason("Gone", 410), Reason::Expired);
    }

    #[test]
    fn delete_options_become_delete_params() {
        let dp = delete_params(&DeleteOptions {
            propagation_policy: Some(PropagationPolicy::Foreground),
            preconditions: kgc_meta::Preconditions {
                uid: Some("u".into()),
                resource_version: Some("7".into()),
            },
            grace_period_seconds: Some(-3),
            ..DeleteOptions::default()
        });
        assert_eq!(
            serde_json::to_value(&dp).unwrap(),
            json!({"propagationPolicy": "Foreground", "gracePeriodSeconds": 0,
                   "preconditions": {"uid": "u", "resourceVersion": "7"}})
        );
        let dp = delete_params(&DeleteOptions::default());
        assert_eq!(serde_json::to_value(&dp).unwrap(), json!({}));
    }

    #[test]
    fn empty_reference_lists_are_null() {
        assert_eq!(refs_json(&[]), Value::Null);
    }
}
