//! Admission webhooks: the MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins
//! (kubernetes/apiserver `pkg/admission/plugin/webhook/generic`, `mutating/dispatcher.go`,
//! `validating/dispatcher.go`, `errors/statuserror.go`).
//!
//! Both run after the built-in plugins, mutating first (kubernetes/kubernetes
//! `pkg/kubeapiserver/options/plugins.go` `AllOrderedPlugins`): mutating webhooks one after the
//! other, each seeing what the previous one made, `IfNeeded` ones called once more when a later
//! one changed the object; then validating webhooks, all at once. A webhook sees the object in
//! the version its rules name (`matchPolicy: Equivalent`), the stored object as `oldObject`.

mod client;
pub(crate) mod config;
pub(crate) mod review;
mod rules;

use futures::future::join_all;
use kgc_meta::{ResourceInfo, Status};
use kgc_store::Updated;
use serde_json::{Value, json};

use crate::ApiServer;
use crate::admission::{self, FieldValidation, Written};
use crate::conversion;
use crate::matchconditions::Matched;
use crate::request::{Query, RequestInfo};

pub(crate) use client::ClientConfig;
use config::Hook;
pub(crate) use config::Webhooks;
pub(crate) use rules::{Rule, Selector, Target, labels_of, matching_version, selectors_match};

/// One write, as the webhooks are told of it.
pub(crate) struct Call<'a> {
    pub info: &'a ResourceInfo,
    pub req: &'a RequestInfo,
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: &'static str,
    pub dry_run: bool,
    /// The request's `CreateOptions`, `UpdateOptions` or `DeleteOptions`.
    pub options: Value,
}

impl<'a> Call<'a> {
    /// A create or update: its options from the query, as upstream's handler decodes them.
    pub fn new(
        info: &'a ResourceInfo,
        req: &'a RequestInfo,
        operation: &'static str,
        query: &Query,
    ) -> Result<Self, Status> {
        let dry_run = query.dry_run()?;
        let kind = match operation {
            "CREATE" => "CreateOptions",
            "UPDATE" => "UpdateOptions",
            _ => "DeleteOptions",
        };
        let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
        if dry_run {
            options["dryRun"] = json!(["All"]);
        }
        if let Some(m) = query.get("fieldManager") {
            options["fieldManager"] = json!(m);
        }
        Ok(Self {
            info,
            req,
            operation,
            dry_run,
            options,
        })
    }

    /// The subresource the request writes when it speaks a kind of its own (`autoscaling/v1
    /// Scale` for `deployments/scale`, `v1 Binding`, `policy/v1 Eviction`), not the resource's.
    pub fn own_kind(&self) -> Option<&'a kgc_meta::catalog::Subresource> {
        let info = self.info;
        self.req
            .subresource
            .as_deref()
            .and_then(|s| info.subresource(s))
            .filter(|s| s.kind != info.kind || s.group != info.group)
    }

    /// The kind of the object written, as the webhooks are told of it (`attr.GetKind()`): the
    /// subresource's own kind, else the resource's in `version`.
    pub fn kind<'s>(&'s self, version: &'s str) -> review::Gvx<'s> {
        match self.own_kind() {
            Some(s) => review::Gvx {
                group: &s.group,
                version: &s.version,
                name: &s.kind,
            },
            None => review::Gvx {
                group: &self.info.group,
                version,
                name: &self.info.kind,
            },
        }
    }

    /// The name the request is about (`attr.GetName()`): the URL's, else on a create the
    /// body's. A DELETECOLLECTION has none, though each object it deletes is admitted
    /// (rest/delete.go `AdmissionToValidateObjectDeleteFunc` keeps the handler's empty name).
    pub fn name<'s>(&'s self, obj: Option<&'s Value>, old: Option<&'s Value>) -> &'s str {
        if self.operation == "DELETE" {
            return self.req.name.as_deref().unwrap_or_default();
        }
        obj.or(old)
            .and_then(|o| o["metadata"]["name"].as_str())
            .or(self.req.name.as_deref())
            .unwrap_or_default()
    }

    pub fn target<'s>(&'s self, version: &'s str) -> Target<'s> {
        Target {
            operation: self.operation,
            group: &self.info.group,
            version,
            resource: &self.info.plural,
            subresource: self.req.subresource.as_deref().unwrap_or(""),
            namespace: self.req.namespace.as_deref().unwrap_or(""),
        }
    }
}

/// The configurations themselves are never sent to webhooks, so a broken webhook cannot lock
/// its own configuration (generic/webhook.go `IsExemptAdmissionConfigurationResource`).
fn exempt(info: &ResourceInfo) -> bool {
    info.group == "admissionregistration.k8s.io"
}

/// `admission webhook "<name>" denied the request: <message>` with the webhook's code and
/// reason (errors/statuserror.go `ToStatusErr`).
fn denied(name: &str, status: &Value) -> Status {
    let denied_by = format!("admission webhook {name:?} denied the request");
    let message = match (status["message"].as_str(), status["reason"].as_str()) {
        (Some(m), _) if !m.is_empty() => format!("{denied_by}: {m}"),
        (_, Some(r)) if !r.is_empty() => format!("{denied_by}: {r}"),
        _ => format!("{denied_by} without explanation"),
    };
    let code = status["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let mut s = Status::unknown(code, message);
    s.reason = reason(status["reason"].as_str().unwrap_or_default());
    s
}

/// A `metav1.StatusReason` kgc knows; any other is sent without one.
pub(crate) fn reason(r: &str) -> kgc_meta::Reason {
    use kgc_meta::Reason::*;
    [
        NotFound,
        AlreadyExists,
        Conflict,
        Invalid,
        BadRequest,
        Unauthorized,
        Forbidden,
        Expired,
        MethodNotAllowed,
        InternalError,
        Timeout,
    ]
    .into_iter()
    .find(|x| x.as_str() == r)
    .unwrap_or(Unknown)
}

/// A webhook's `auditAnnotations`, into the request's audit event as `<webhook name>/<key>`
/// (the dispatchers' `AddAnnotation`).
fn record_annotations(hook: &Hook, annotations: Vec<(String, String)>) {
    for (key, value) in annotations {
        crate::audit::annotate(format!("{}/{key}", hook.name), value);
    }
}

/// The audit annotations of one call of a mutating webhook, keyed by the round (1: called
/// again, `reinvocationPolicy: IfNeeded`) and its index among the mutating webhooks
/// (mutating/dispatcher.go `webhookAnnotator`): `mutation.webhook.admission.k8s.io/…` at
/// `Metadata` when dropped, `patch.webhook.admission.k8s.io/…` with the patch at `Request`,
/// `failed-open.mutation.webhook.admission.k8s.io/…` when `failurePolicy: Ignore` let a
/// failure through.
struct Annotator<'a> {
    hook: &'a Hook,
    key: String,
    mutated: bool,
}

impl Annotator<'_> {
    /// A patch applied: the object `changed`, or not. Upstream marshals its annotation structs,
    /// so their fields come in this order.
    fn patched(&mut self, patch: &Value, changed: bool) {
        self.mutated = changed;
        if patch.as_array().is_none_or(Vec::is_empty) {
            return;
        }
        let value = format!(
            "{{\"configuration\":{},\"webhook\":{},\"patch\":{patch},\"patchType\":\"JSONPatch\"}}",
            json!(self.hook.configuration),
            json!(self.hook.name),
        );
        crate::audit::annotate_at(
            kgc_audit::Level::Request,
            format!("patch.webhook.admission.k8s.io/{}", self.key),
            value,
        );
    }

    fn failed_open(&self) {
        crate::audit::annotate(
            format!("failed-open.mutation.webhook.admission.k8s.io/{}", self.key),
            self.hook.name.clone(),
        );
    }
}

impl Drop for Annotator<'_> {
    fn drop(&mut self) {
        let value = format!(
            "{{\"configuration\":{},\"webhook\":{},\"mutated\":{}}}",
            json!(self.hook.configuration),
            json!(self.hook.name),
            self.mutated
        );
        crate::audit::annotate(
            format!("mutation.webhook.admission.k8s.io/{}", self.key),
            value,
        );
    }
}

/// A webhook that could not be called or answered nonsense (`ErrCallingWebhook`): a 500 under
/// `failurePolicy: Fail`, skipped under `Ignore`.
fn failed(name: &str, reason: &str) -> Status {
    Status::internal(format!("failed calling webhook {name:?}: {reason}"))
}

/// The object a webhook sees: in `version`, which the request's rules matched.
pub(crate) fn in_version(call: &Call<'_>, version: &str, stored: &Value) -> Value {
    let mut v = stored.clone();
    if call.req.subresource.is_none() || call.req.subresource.as_deref() == Some("status") {
        conversion::from_storage(call.info, version, &mut v);
    }
    v
}

impl Webhooks {
    /// Whether any webhook's rules name this request (before its objects are looked at): when
    /// none do, the write takes its usual path.
    pub fn applies(&self, call: &Call<'_>) -> bool {
        if exempt(call.info) {
            return false;
        }
        let catalog = self.store().catalog();
        let target = call.target(&call.req.version);
        [true, false].into_iter().any(|m| {
            self.hooks(m)
                .iter()
                .any(|h| matching_version(&h.rules, h.equivalent, &catalog, &target).is_some())
        }) || self.policies.applies(call)
    }

    /// The labels `namespaceSelector` is matched against: the namespace's, or a Namespace's
    /// own; `None` for other cluster-scoped objects, which every namespaceSelector matches.
    pub(crate) fn namespace_labels(
        &self,
        call: &Call<'_>,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Option<std::collections::BTreeMap<String, String>> {
        if call.info.group.is_empty() && call.info.plural == "namespaces" {
            return obj.or(old).map(labels_of);
        }
        let ns = call.req.namespace.as_deref().filter(|n| !n.is_empty())?;
        Some(
            self.store()
                .get(&kgc_meta::GroupResource::new("", "namespaces"), "", ns)
                .map(|n| n.labels.clone())
                .unwrap_or_default(),
        )
    }

    /// The version `hook` is called with, when it is called for this request at all.
    fn version_for(
        &self,
        hook: &Hook,
        call: &Call<'_>,
        ns_labels: Option<&std::collections::BTreeMap<String, String>>,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Option<String> {
        let catalog = self.store().catalog();
        let version = matching_version(
            &hook.rules,
            hook.equivalent,
            &catalog,
            &call.target(&call.req.version),
        )?;
        selectors_match(
            &hook.namespace_selector,
            &hook.object_selector,
            ns_labels,
            obj,
            old,
        )
        .then_some(version)
    }

    /// Calls one webhook; `Ok(None)` when it failed and `failurePolicy: Ignore` lets the
    /// request through.
    async fn call_hook(
        &self,
        hook: &Hook,
        call: &Call<'_>,
        version: &str,
        obj: Option<&Value>,
        old: Option<&Value>,
        mutating: bool,
    ) -> Result<Option<review::Response>, Status> {
        if call.dry_run && !hook.dry_run_safe {
            return Err(Status::bad_request(format!(
                "admission webhook {:?} does not support dry run",
                hook.name
            )));
        }
        let outcome = self.send(hook, call, version, obj, old, mutating).await;
        match outcome {
            Ok(r) => Ok(Some(r)),
            Err(reason) if hook.fail => Err(failed(&hook.name, &reason)),
            Err(reason) => {
                tracing::warn!(webhook = %hook.name, %reason, "failed calling webhook, ignored (failurePolicy: Ignore)");
                Ok(None)
            }
        }
    }

    /// The request `hook` is told of, in `version`.
    pub(crate) fn review_request<'s>(
        call: &'s Call<'_>,
        version: &'s str,
        uid: &'s str,
        user: Option<&'s kgc_auth::UserInfo>,
        obj: Option<&'s Value>,
        old: Option<&'s Value>,
    ) -> review::Request<'s> {
        let (group, plural) = (&call.info.group, &call.info.plural);
        let name = call.name(obj, old);
        review::Request {
            uid,
            kind: call.kind(version),
            resource: review::Gvx {
                group,
                version,
                name: plural,
            },
            sub_resource: call.req.subresource.as_deref().unwrap_or(""),
            request_kind: call.kind(&call.req.version),
            request_resource: review::Gvx {
                group,
                version: &call.req.version,
                name: plural,
            },
            name,
            namespace: call.req.namespace.as_deref().unwrap_or(""),
            operation: call.operation,
            user,
            object: obj,
            old_object: old,
            dry_run: call.dry_run,
            options: &call.options,
        }
    }

    /// Whether `hook`'s `matchConditions` let it be called (generic/webhook.go
    /// `ShouldCallHook`): an evaluation error is a 403 under `failurePolicy: Fail`, a skip
    /// under `Ignore`.
    fn conditions_match(
        hook: &Hook,
        call: &Call<'_>,
        version: &str,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<bool, Status> {
        if hook.match_conditions.is_empty() {
            return Ok(true);
        }
        let user = crate::authn::current_user();
        let request = review::request(&Self::review_request(
            call,
            version,
            "",
            user.as_deref(),
            None,
            None,
        ));
        match hook
            .match_conditions
            .evaluate(&crate::matchconditions::input(&request, obj, old))
        {
            Matched::Yes => Ok(true),
            Matched::No => Ok(false),
            Matched::Failed(e) if hook.fail => Err(Status::forbidden(
                &call.info.group_resource(),
                call.name(obj, old),
                &e,
            )),
            Matched::Failed(e) => {
                tracing::warn!(webhook = %hook.name, error = %e, "failed evaluating match conditions, ignored (failurePolicy: Ignore)");
                Ok(false)
            }
        }
    }

    async fn send(
        &self,
        hook: &Hook,
        call: &Call<'_>,
        version: &str,
        obj: Option<&Value>,
        old: Option<&Value>,
        mutating: bool,
    ) -> Result<review::Response, String> {
        let review_version = hook.review_version.ok_or_else(|| {
            "none of the webhook's admissionReviewVersions is v1 or v1beta1".to_owned()
        })?;
        let uid = uuid::Uuid::new_v4().to_string();
        let user = crate::authn::current_user();
        let body = review::body(
            review_version,
            &Self::review_request(call, version, &uid, user.as_deref(), obj, old),
        );
        let answer = hook
            .client
            .post(self.store(), hook.timeout, body)
            .await
            .map_err(|e| format!("failed to call webhook: {e}"))?;
        review::parse(review_version, &uid, mutating, &answer)
            .map_err(|e| format!("received invalid webhook response: {e}"))
    }

    /// Runs the mutating webhooks `which` (indices into `hooks`) over `obj`; returns the
    /// `IfNeeded` ones called, each with the object it left.
    #[allow(clippy::too_many_arguments)]
    async fn mutate(
        &self,
        hooks: &[Hook],
        which: &[usize],
        round: u8,
        call: &Call<'_>,
        obj: &mut Option<&mut Value>,
        old: Option<&Value>,
        ns_labels: Option<&std::collections::BTreeMap<String, String>>,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<(usize, Value)>, Status> {
        let mut reinvocable = Vec::new();
        for &i in which {
            let hook = &hooks[i];
            let Some(version) = self.version_for(hook, call, ns_labels, obj.as_deref(), old) else {
                continue;
            };
            let versioned = obj.as_deref().map(|o| in_version(call, &version, o));
            let old_versioned = old.map(|o| in_version(call, &version, o));
            if !Self::conditions_match(
                hook,
                call,
                &version,
                versioned.as_ref(),
                old_versioned.as_ref(),
            )? {
                continue;
            }
            // Whatever the call's outcome, the event says whether it mutated (the dispatcher's
            // deferred `addMutationAnnotation`).
            let mut annotator = Annotator {
                hook,
                key: format!("round_{round}_index_{i}"),
                mutated: false,
            };
            let Some(answer) = self
                .call_hook(
                    hook,
                    call,
                    &version,
                    versioned.as_ref(),
                    old_versioned.as_ref(),
                    true,
                )
                .await?
            else {
                annotator.failed_open();
                continue;
            };
            warnings.extend(answer.warnings);
            record_annotations(hook, answer.audit_annotations);
            if !answer.allowed {
                return Err(denied(&hook.name, &answer.status));
            }
            if let (Some(patch), Some(target), Some(mut versioned)) =
                (answer.patch, obj.as_deref_mut(), versioned)
            {
                let before = versioned.clone();
                kgc_patch::json_patch(&mut versioned, &patch).map_err(|e| {
                    Status::internal(format!(
                        "admission webhook {:?} returned a patch that does not apply: {e}",
                        hook.name
                    ))
                })?;
                annotator.patched(&patch, before != versioned);
                // What the webhook made is admitted as a request body of that version would be;
                // a Scale, Binding or Eviction is checked by the handler that reads it.
                if call.own_kind().is_none() {
                    let req = RequestInfo {
                        version: version.clone(),
                        ..call.req.clone()
                    };
                    admission::admit(
                        call.info,
                        &req,
                        FieldValidation::Ignore,
                        Written::Object,
                        &mut versioned,
                        old_versioned.as_ref(),
                        Vec::new(),
                    )?;
                }
                if call.req.subresource.is_none()
                    || call.req.subresource.as_deref() == Some("status")
                {
                    conversion::to_storage(call.info, &version, &mut versioned);
                }
                *target = versioned;
            }
            if hook.reinvoke
                && let Some(o) = obj.as_deref()
            {
                reinvocable.push((i, o.clone()));
            }
        }
        Ok(reinvocable)
    }

    /// Mutating, then validating webhooks over a write of `obj` (absent on DELETE; in the
    /// storage version), `old` being the stored object (absent on CREATE). Returns the
    /// webhooks' warnings; an error is the request's answer and nothing is stored.
    pub async fn admit(
        &self,
        call: &Call<'_>,
        obj: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<Vec<String>, Status> {
        let mut warnings = Vec::new();
        if exempt(call.info) {
            return Ok(warnings);
        }
        let mut obj = obj;
        let ns_labels = self.namespace_labels(call, obj.as_deref(), old);
        let mutating = self.hooks(true);
        if !mutating.is_empty() {
            let all: Vec<usize> = (0..mutating.len()).collect();
            let called = self
                .mutate(
                    &mutating,
                    &all,
                    0,
                    call,
                    &mut obj,
                    old,
                    ns_labels.as_ref(),
                    &mut warnings,
                )
                .await?;
            // An `IfNeeded` webhook is called once more when a later one changed the object
            // (mutating/reinvocationcontext.go).
            let again: Vec<usize> = called
                .into_iter()
                .filter(|(_, left)| obj.as_deref().is_some_and(|o| o != left))
                .map(|(i, _)| i)
                .collect();
            if !again.is_empty() {
                self.mutate(
                    &mutating,
                    &again,
                    1,
                    call,
                    &mut obj,
                    old,
                    ns_labels.as_ref(),
                    &mut warnings,
                )
                .await?;
            }
        }
        let obj = obj.as_deref();
        // ValidatingAdmissionPolicies run after the mutating webhooks, before the validating
        // ones (`AllOrderedPlugins`).
        warnings.extend(self.policies.validate(call, obj, old, ns_labels.as_ref())?);
        let validating = self.hooks(false);
        let calls = validating.iter().filter_map(|hook| {
            let version = self.version_for(hook, call, ns_labels.as_ref(), obj, old)?;
            Some(async move {
                let versioned = obj.map(|o| in_version(call, &version, o));
                let old_versioned = old.map(|o| in_version(call, &version, o));
                let answer = match Self::conditions_match(
                    hook,
                    call,
                    &version,
                    versioned.as_ref(),
                    old_versioned.as_ref(),
                ) {
                    Ok(true) => {
                        self.call_hook(
                            hook,
                            call,
                            &version,
                            versioned.as_ref(),
                            old_versioned.as_ref(),
                            false,
                        )
                        .await
                    }
                    Ok(false) => Ok(None),
                    Err(e) => Err(e),
                };
                (hook, answer)
            })
        });
        for (hook, answer) in join_all(calls).await {
            let Some(answer) = answer? else { continue };
            warnings.extend(answer.warnings);
            record_annotations(hook, answer.audit_annotations);
            if !answer.allowed {
                return Err(denied(&hook.name, &answer.status));
            }
        }
        Ok(warnings)
    }
}

/// How many times an update through webhooks is admitted again when another writer changed
/// the object while its webhooks judged it, before it is answered 409 (kube-apiserver retries
/// without a bound; a request here is bounded in time).
const WEBHOOK_UPDATE_ATTEMPTS: u32 = 5;

impl ApiServer {
    /// The admission that follows the webhooks, on what they admitted: the CRD's
    /// `x-kubernetes-validations` rules, then a Service's ClusterIPs and NodePorts (as
    /// upstream's storage allocates them, so that what a webhook set is checked too). `old` is
    /// the stored object of an update. Returns the rules' warnings (see
    /// [`crate::validation_rules::admit`]).
    pub(crate) fn admit_after_webhooks(
        info: &ResourceInfo,
        allocation: Option<&crate::service_alloc::Allocation<'_>>,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> Result<Vec<String>, Status> {
        let warnings = crate::validation_rules::admit(info, obj, old)?;
        if let Some(a) = allocation {
            a.assign(obj, old)?;
        }
        Ok(warnings)
    }

    /// An update (PUT, PATCH, apply) through the webhooks: `change` is planned as a dry run, the
    /// webhooks see what it would store, and what they admit is written over exactly the
    /// version they saw. Without a webhook for it, a plain update whose `change` runs again on
    /// the fresh object when another writer changed it first (on etcd).
    ///
    /// Either way, when another writer changed the object first, the update starts again on
    /// the fresh object, as kube-apiserver's `GuaranteedUpdate` calls the patcher's update
    /// function again, admission included (`staging/src/k8s.io/apiserver/pkg/endpoints/
    /// handlers/patch.go`: `applyPatch` and `applyAdmission` are the update's transformers):
    /// a patch is applied to the latest object and the webhooks judge that, instead of a 409
    /// for a write the client never conditioned on a version, while a body naming the old
    /// resourceVersion is still a 409 (its dry run refuses it). At most
    /// [`WEBHOOK_UPDATE_ATTEMPTS`] rounds of webhook calls, so a hot object cannot hold a
    /// request forever.
    /// [`Self::admit_after_webhooks`] runs once per round, on the object written, with the
    /// Service allocation lock taken only after the webhooks answered.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn update_admitted(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
        query: &Query,
        namespace: &str,
        name: &str,
        dry_run: bool,
        mut change: impl FnMut(Value) -> Result<Value, Status>,
    ) -> Result<(Updated, Vec<String>), kgc_store::Error> {
        let call = Call::new(info, req, "UPDATE", query)?;
        let sub = req.subresource.as_deref();
        if !self.webhooks.applies(&call) {
            let allocation = self.service_allocation(info, req).await?;
            let mut warnings = Vec::new();
            let updated = self
                .store
                .update_retrying(info, namespace, name, sub, dry_run, |current| {
                    let mut new = change(current.clone())?;
                    warnings = Self::admit_after_webhooks(
                        info,
                        allocation.as_ref(),
                        &mut new,
                        Some(&current),
                    )?;
                    Ok(new)
                })
                .await?;
            return Ok((updated, warnings));
        }
        let mut attempt = 1;
        loop {
            let mut seen = None;
            let planned = self
                .store
                .update(info, namespace, name, sub, true, |current| {
                    seen = Some(current.clone());
                    change(current)
                })
                .await?;
            let old = seen.ok_or_else(|| Status::internal("the update saw no object"))?;
            let mut new: Value = serde_json::from_str(&planned.object().raw)
                .map_err(|e| Status::internal(format!("the planned object: {e}")))?;
            let mut warnings = self
                .webhooks
                .admit(&call, Some(&mut new), Some(&old))
                .await?;
            // Written only over the object the webhooks saw: the store refuses a stale version.
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
            let allocation = self.service_allocation(info, req).await?;
            warnings.extend(Self::admit_after_webhooks(
                info,
                allocation.as_ref(),
                &mut new,
                Some(&old),
            )?);
            let written = self
                .store
                .update(info, namespace, name, sub, dry_run, |_| Ok(new))
                .await;
            match written {
                // The dry run accepted the client's own preconditions on this version, so a
                // conflict now is another writer's change since: start again on it.
                Err(kgc_store::Error::Api(s))
                    if s.is(kgc_meta::Reason::Conflict) && attempt < WEBHOOK_UPDATE_ATTEMPTS =>
                {
                    drop(allocation);
                    attempt += 1;
                    tracing::debug!(
                        resource = %info.group_resource(),
                        namespace,
                        name,
                        attempt,
                        "changed while its webhooks judged it; admitting the update again"
                    );
                }
                written => return Ok((written?, warnings)),
            }
        }
    }

    /// The body of a create of a subresource that speaks its own kind (`pods/binding`,
    /// `pods/eviction`, `serviceaccounts/token`) through the admission webhooks and
    /// ValidatingAdmissionPolicies, which may change it: upstream's create handler admits the
    /// Binding, Eviction or TokenRequest itself before the registry acts on it. Returns their
    /// warnings.
    pub(crate) async fn admit_subresource_create(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
        query: &Query,
        obj: &mut Value,
    ) -> Result<Vec<String>, Status> {
        let call = Call::new(info, req, "CREATE", query)?;
        if !self.webhooks.applies(&call) {
            return Ok(Vec::new());
        }
        self.webhooks.admit(&call, Some(obj), None).await
    }

    /// A DELETE through the webhooks (`oldObject` is the stored object); nothing when the
    /// object does not exist (the store answers 404).
    pub(crate) async fn admit_delete(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
        opts: &kgc_meta::DeleteOptions,
    ) -> Result<Vec<String>, Status> {
        let call = Call::delete(info, req, opts);
        if !self.webhooks.applies(&call) {
            return Ok(Vec::new());
        }
        let Some(current) = self.store.get(
            &info.group_resource(),
            req.namespace.as_deref().unwrap_or(""),
            req.name.as_deref().unwrap_or(""),
        ) else {
            return Ok(Vec::new());
        };
        self.webhooks
            .admit(&call, None, Some(&current.value()))
            .await
    }
}

impl<'a> Call<'a> {
    /// A DELETE or DELETECOLLECTION with its `DeleteOptions`.
    pub fn delete(
        info: &'a ResourceInfo,
        req: &'a RequestInfo,
        opts: &kgc_meta::DeleteOptions,
    ) -> Self {
        let mut options = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
        if opts.dry_run {
            options["dryRun"] = json!(["All"]);
        }
        if let Some(g) = opts.grace_period_seconds {
            options["gracePeriodSeconds"] = json!(g);
        }
        Self {
            info,
            req,
            operation: "DELETE",
            dry_run: opts.dry_run,
            options,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denial_words() {
        let s = denied(
            "deny.example.com",
            &json!({"message": "no", "code": 403, "reason": "Forbidden"}),
        );
        assert_eq!(
            s.message,
            "admission webhook \"deny.example.com\" denied the request: no"
        );
        assert_eq!((s.code, s.reason), (403, kgc_meta::Reason::Forbidden));
        let s = denied("d", &Value::Null);
        assert_eq!(
            s.message,
            "admission webhook \"d\" denied the request without explanation"
        );
        assert_eq!(s.code, 400);
        let s = failed(
            "d",
            "failed to call webhook: Post \"https://x\": context deadline exceeded",
        );
        assert_eq!(
            s.message,
            "Internal error occurred: failed calling webhook \"d\": failed to call webhook: Post \"https://x\": context deadline exceeded"
        );
    }
}
