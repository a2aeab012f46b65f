//! CREATE and UPDATE with the registry's rules: system-owned metadata, generation, the status
//! and finalize subresources, optimistic concurrency, no-op detection, and the deletion that
//! completes when an update removes the last finalizer.

use std::sync::Arc;

use kgc_meta::validation::{
    validate_object_meta, validate_object_meta_generic, validate_object_meta_update,
};
use kgc_meta::{GroupResource, ResourceInfo, Status};
use serde_json::{Value, json};

use crate::crd::is_crd;
use crate::namespace::{admit_create, namespaces};
use crate::object::{Meta, spec_changed, str_list};
use crate::watch::EventType;
use crate::{
    CONFLICT_RETRIES, Change, Pending, Result, State, Store, StoredObject, Written, stamp,
};
use kgc_meta::time::format_time;

/// What an update did.
#[derive(Debug, Clone)]
pub enum Updated {
    /// Written with a new revision.
    Changed(Arc<StoredObject>),
    /// Identical to the stored object: no revision, no event.
    Unchanged(Arc<StoredObject>),
    /// The update removed the last finalizer of a deleting object, which is now gone.
    Deleted(Arc<StoredObject>),
}

impl Updated {
    pub fn object(&self) -> &Arc<StoredObject> {
        match self {
            Updated::Changed(o) | Updated::Unchanged(o) | Updated::Deleted(o) => o,
        }
    }
}

impl Store {
    /// `object` (of `gr`) as it landed at `rv`: on etcd a write's revision is the one etcd gave
    /// it, not the placeholder it was planned with. The watch has already brought it into
    /// memory stamped so (see [`Store::written`]): that one is answered, unless a later change
    /// replaced it there or it was deleted; then it is stamped again here.
    pub(crate) fn landed(
        &self,
        gr: &GroupResource,
        object: Arc<StoredObject>,
        rv: Option<&u64>,
    ) -> Result<Arc<StoredObject>> {
        match rv {
            Some(&rv) if rv != object.resource_version => {
                match self.get(gr, &object.namespace, &object.name) {
                    Some(held) if held.resource_version == rv => Ok(held),
                    _ => stamp(&mut object.value(), rv),
                }
            }
            _ => Ok(object),
        }
    }
}

/// Characters of generated name suffixes (apiserver `names.SimpleNameGenerator`: no vowels, no
/// look-alike digits).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Five random characters of upstream's name alphabet, as `generateName` appends
/// (kubernetes/apiserver `pkg/storage/names/generate.go`); admission plugins name what they
/// add the same way.
pub fn random_suffix() -> String {
    uuid::Uuid::new_v4().as_bytes()[..5]
        .iter()
        .map(|b| NAME_ALPHABET[*b as usize % NAME_ALPHABET.len()] as char)
        .collect()
}

/// The longest `generateName` prefix kept: a generated name stays a valid 63-character label
/// (kubernetes/apiserver `pkg/storage/names/generate.go` `MaxGeneratedNameLength`).
const MAX_GENERATED_PREFIX: usize = 63 - 5;

/// How many names are tried before giving up (kubernetes/apiserver
/// `pkg/registry/generic/registry/store.go` `maxNameGenerationCreateAttempts`).
const NAME_GENERATION_ATTEMPTS: usize = 8;

/// A name from `prefix` (cut to [`MAX_GENERATED_PREFIX`] bytes at a character boundary) and a
/// random suffix that `free` accepts, trying as many times as upstream's create retries do; the
/// last name tried when every try collided.
fn generate_name(prefix: &str, free: impl Fn(&str) -> bool) -> Result<String, String> {
    let mut cut = prefix.len().min(MAX_GENERATED_PREFIX);
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    let prefix = &prefix[..cut];
    let mut last = String::new();
    for _ in 0..NAME_GENERATION_ATTEMPTS {
        last = format!("{prefix}{}", random_suffix());
        if free(&last) {
            return Ok(last);
        }
    }
    Err(last)
}

/// The 409 after every generated name collided (apimachinery `NewGenerateNameConflict`).
fn generate_name_conflict(gr: &GroupResource, name: &str) -> Status {
    let mut s = Status::already_exists(gr, name);
    s.message = format!(
        "{gr} \"{name}\" already exists, the server was not able to generate a unique name for the object"
    );
    s.retry_after_seconds = Some(1);
    s
}

fn invalid(info: &ResourceInfo, name: &str, errs: &[kgc_meta::FieldError]) -> Status {
    Status::invalid(&info.group, &info.kind, name, errs)
}

impl Store {
    /// Creates an object in `namespace` (ignored for cluster-scoped kinds). `obj` must already
    /// carry the right `apiVersion` and `kind`.
    pub async fn create(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        obj: Value,
        dry_run: bool,
    ) -> Result<Arc<StoredObject>> {
        let catalog = self.catalog();
        let request_group = info.group.as_str();
        let info = catalog.stored_as(info);
        if info.namespaced() {
            self.latest_if_missing(&namespaces(), "", namespace).await?;
        }
        let mut obj = Some(obj);
        for _ in 0..CONFLICT_RETRIES {
            // Kept for another plan only where one can be needed.
            let body = match self.is_replicated() {
                true => obj.clone(),
                false => obj.take(),
            }
            .unwrap_or_default();
            let (out, pending) = {
                let mut st = self.write_lock()?;
                let (out, change) =
                    self.plan_create(&mut st, info, request_group, namespace, body, dry_run)?;
                let pending = match change {
                    Some(c) => self.commit(&mut st, vec![c])?,
                    None => Pending(None),
                };
                (out, pending)
            };
            // A conflict: another replica created the name; planned again, it already exists.
            if let Written::At(revisions) = self.written(pending).await? {
                return self.landed(&info.group_resource(), out, revisions.first());
            }
        }
        let name = obj
            .as_ref()
            .map(|o| o.name().to_owned())
            .unwrap_or_default();
        Err(Status::already_exists(&info.group_resource(), &name).into())
    }

    /// `request_group` is the group the request came through: events.k8s.io Events are stored
    /// as core ones but validated by that API's rules.
    fn plan_create(
        &self,
        st: &mut State,
        info: &ResourceInfo,
        request_group: &str,
        namespace: &str,
        mut obj: Value,
        dry_run: bool,
    ) -> Result<(Arc<StoredObject>, Option<Change>)> {
        if !obj.is_object() {
            return Err(Status::bad_request("the object must be a JSON object").into());
        }
        let gr = info.group_resource();
        if info.namespaced() {
            match obj.meta_str("namespace") {
                Some(ns) if !ns.is_empty() && ns != namespace => {
                    return Err(Status::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    )
                    .into());
                }
                _ => obj.set("namespace", namespace),
            }
        } else {
            obj.meta_mut().remove("namespace");
        }
        if obj
            .meta_str("resourceVersion")
            .is_some_and(|rv| !rv.is_empty())
        {
            return Err(Status::unknown(
                500,
                "resourceVersion should not be set on objects to be created",
            )
            .into());
        }
        if obj.name().is_empty()
            && let Some(prefix) = obj.meta_str("generateName").map(str::to_owned)
            && !prefix.is_empty()
        {
            let name = generate_name(&prefix, |n| st.get(&gr, namespace, n).is_none())
                .map_err(|last| generate_name_conflict(&gr, &last))?;
            obj.set("name", name);
        }
        let name = obj.name().to_owned();
        if info.namespaced() {
            admit_create(st, &gr, &name, namespace)?;
        }
        if info.custom {
            self.admit_custom_create(st, info, &name)?;
        }
        let errs = object_meta_rules(info)(&obj["metadata"], info.namespaced(), info.name_rule);
        if !errs.is_empty() {
            return Err(invalid(info, &name, &errs).into());
        }
        let ns = if info.namespaced() { namespace } else { "" };
        if st.get(&gr, ns, &name).is_some() {
            return Err(Status::already_exists(&gr, &name).into());
        }
        let meta = obj.meta_mut();
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.insert("uid".into(), uuid::Uuid::new_v4().to_string().into());
        meta.insert(
            "creationTimestamp".into(),
            format_time(self.clock().now()).into(),
        );
        if info.tracks_generation {
            meta.insert("generation".into(), 1.into());
        } else {
            meta.remove("generation");
        }
        prepare_for_create(info, &mut obj);
        normalize(info, &mut obj);
        print_as_stored(info, &mut obj);
        if is_crd(&gr) {
            self.prepare_crd(&mut obj, None)?;
        }
        let errs = validate_kind(info, request_group, &obj, None, None);
        if !errs.is_empty() {
            return Err(invalid(info, &name, &errs).into());
        }
        let rv = if dry_run { st.rv } else { st.next_rv() };
        let object = stamp(&mut obj, rv)?;
        let change = (!dry_run).then(|| Change {
            gr,
            kind: EventType::Added,
            object: Arc::clone(&object),
            prev: None,
        });
        Ok((object, change))
    }

    /// Reads, changes and writes one object atomically: `change` sees the current object and
    /// returns the desired one (a PUT body, a patched copy). `subresource` is `None`, `status`
    /// or `finalize`. A `metadata.resourceVersion` in the result must match the stored one.
    /// On etcd, when another replica changed the object first, the body `change` made is
    /// written again over the fresh object, as a PUT's is: one naming the resourceVersion it
    /// read is then a 409 (see [`Store::update_retrying`] for a change that can run again).
    pub async fn update(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        dry_run: bool,
        change: impl FnOnce(Value) -> Result<Value, Status>,
    ) -> Result<Updated> {
        let keep = self.is_replicated();
        let mut change = Some(change);
        let mut made: Option<Value> = None;
        let again = |current| match change.take() {
            Some(f) => {
                let new = f(current)?;
                if keep {
                    made = Some(new.clone());
                }
                Ok(new)
            }
            None => made
                .clone()
                .ok_or_else(|| Status::internal("an update planned twice without its body")),
        };
        self.update_retrying(info, namespace, name, subresource, dry_run, again)
            .await
    }

    /// [`Store::update`] with a change that can run again: on etcd, when another replica
    /// changed the object first, `change` runs again on the fresh object, as kube-apiserver's
    /// `GuaranteedUpdate` calls its update function again (how internal updates, such as a
    /// collector removing a finalizer, never fail for a concurrent change).
    pub async fn update_retrying(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        dry_run: bool,
        mut change: impl FnMut(Value) -> Result<Value, Status>,
    ) -> Result<Updated> {
        let catalog = self.catalog();
        let request_group = info.group.as_str();
        let info = catalog.stored_as(info);
        let ns = if info.namespaced() { namespace } else { "" };
        self.latest_if_missing(&info.group_resource(), ns, name)
            .await?;
        for _ in 0..CONFLICT_RETRIES {
            let (out, pending) = {
                let mut st = self.write_lock()?;
                let (out, c) = self.plan_update(
                    &mut st,
                    info,
                    request_group,
                    namespace,
                    name,
                    subresource,
                    dry_run,
                    &mut change,
                )?;
                let pending = match c {
                    Some(c) => self.commit(&mut st, vec![c])?,
                    None => Pending(None),
                };
                (out, pending)
            };
            // A conflict: planned again on the fresh object, as `GuaranteedUpdate` calls its
            // update function again; a body that names the old resourceVersion is then a 409.
            if let Written::At(revisions) = self.written(pending).await? {
                let (gr, rv) = (info.group_resource(), revisions.first());
                return Ok(match out {
                    Updated::Changed(o) => Updated::Changed(self.landed(&gr, o, rv)?),
                    Updated::Deleted(o) => Updated::Deleted(self.landed(&gr, o, rv)?),
                    unchanged @ Updated::Unchanged(_) => unchanged,
                });
            }
        }
        Err(Status::stale(&info.group_resource(), name).into())
    }

    #[allow(clippy::too_many_arguments)]
    /// `request_group` as in [`Store::plan_create`].
    pub(crate) fn plan_update(
        &self,
        st: &mut State,
        info: &ResourceInfo,
        request_group: &str,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        dry_run: bool,
        change: &mut impl FnMut(Value) -> Result<Value, Status>,
    ) -> Result<(Updated, Option<Change>)> {
        let gr = info.group_resource();
        let ns = if info.namespaced() { namespace } else { "" };
        let stored = st
            .get(&gr, ns, name)
            .cloned()
            .ok_or_else(|| Status::not_found(&gr, name))?;
        let current = stored.value();
        let mut new = change(current.clone())?;
        if !new.is_object() {
            return Err(Status::bad_request("the object must be a JSON object").into());
        }
        if let Some(rv) = new.meta_str("resourceVersion").filter(|rv| !rv.is_empty())
            && rv != stored.resource_version.to_string()
        {
            return Err(Status::stale(&gr, name).into());
        }
        // apiserver `checkName`: the body names the object it replaces, exactly.
        match new.meta().and_then(|m| m.get("name")) {
            Some(Value::String(n)) if n == name => {}
            Some(v) if !v.is_string() && !v.is_null() => {
                return Err(invalid(
                    info,
                    name,
                    &[kgc_meta::FieldError::invalid_value(
                        "metadata.name",
                        v,
                        "must be of type string",
                    )],
                )
                .into());
            }
            other => {
                let n = other.and_then(Value::as_str).unwrap_or_default();
                return Err(Status::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                ))
                .into());
            }
        }
        if info.namespaced() {
            match new.meta_str("namespace") {
                Some(n) if !n.is_empty() && n != ns => {
                    return Err(Status::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    )
                    .into());
                }
                _ => new.set("namespace", ns),
            }
        }
        let mut new = shape_for_subresource(info, subresource, &current, new)?;
        // apiserver `rest.BeforeUpdate`: the server owns these.
        if new.uid().is_empty() {
            new.set("uid", stored.uid.clone());
        }
        for key in ["creationTimestamp", "deletionTimestamp"] {
            match current.meta().and_then(|m| m.get(key)).cloned() {
                Some(v) => new.set(key, v),
                None => {
                    new.meta_mut().remove(key);
                }
            }
        }
        if let Some(g) = current.deletion_grace()
            && new.deletion_grace().is_none()
        {
            new.set("deletionGracePeriodSeconds", g);
        }
        if info.tracks_generation {
            let mut generation = current.generation();
            if subresource.is_none() && spec_changed(&current, &new) {
                generation += 1;
            }
            new.set("generation", generation);
        } else {
            new.meta_mut().remove("generation");
        }
        normalize(info, &mut new);
        print_as_stored(info, &mut new);
        let mut errs = object_meta_rules(info)(&new["metadata"], info.namespaced(), info.name_rule);
        errs.extend(validate_object_meta_update(
            &new["metadata"],
            &current["metadata"],
        ));
        errs.extend(validate_kind(
            info,
            request_group,
            &new,
            Some(&current),
            subresource,
        ));
        if !errs.is_empty() {
            return Err(invalid(info, name, &errs).into());
        }
        if is_crd(&gr) && subresource.is_none() {
            self.prepare_crd(&mut new, Some(&current))?;
        }
        // apiserver `ShouldDeleteDuringUpdate`: removing the last finalizer of a deleting object
        // (no grace period pending) deletes it; namespaces also need `spec.finalizers` empty.
        let completes_deletion = current.deletion_timestamp().is_some()
            && new.finalizers().is_empty()
            && current.deletion_grace().unwrap_or(0) == 0
            && (!is_namespace(info) || str_list(new.pointer("/spec/finalizers")).is_empty());
        if completes_deletion {
            let rv = if dry_run { st.rv } else { st.next_rv() };
            let object = stamp(&mut new, rv)?;
            let change = (!dry_run).then(|| Change {
                gr,
                kind: EventType::Deleted,
                object: Arc::clone(&object),
                prev: Some(stored),
            });
            return Ok((Updated::Deleted(object), change));
        }
        new.set("resourceVersion", stored.resource_version.to_string());
        if new == current {
            return Ok((Updated::Unchanged(stored), None));
        }
        let rv = if dry_run { st.rv } else { st.next_rv() };
        let object = stamp(&mut new, rv)?;
        let change = (!dry_run).then(|| Change {
            gr,
            kind: EventType::Modified,
            object: Arc::clone(&object),
            prev: Some(stored),
        });
        Ok((Updated::Changed(object), change))
    }
}

/// The kind's own rules (kgc-validation, upstream's `pkg/apis/*/validation`) for a built-in
/// object as it would be stored: after defaults and the kind's `PrepareForCreate`, as the
/// registry's strategy validates it. Custom resources are validated against their schema by the
/// API server instead. The rules are those of the group the request came through
/// (`request_group`), as upstream's event strategy validates by the request's version: an
/// events.k8s.io/v1 Event gets that API's strict rules, though stored as a core one.
fn validate_kind(
    info: &ResourceInfo,
    request_group: &str,
    obj: &Value,
    old: Option<&Value>,
    subresource: Option<&str>,
) -> Vec<kgc_meta::FieldError> {
    if info.custom {
        return Vec::new();
    }
    kgc_validation::validate(request_group, &info.kind, obj, old, subresource)
}

fn is_namespace(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == "namespaces"
}

/// Which part of the body an update may change: the main resource leaves `status` (when it is a
/// subresource) and a namespace's `spec.finalizers` alone; `/status` changes only `status`;
/// `/finalize` only `spec.finalizers`; a CertificateSigningRequest's `/approval` only
/// `status.conditions`.
fn shape_for_subresource(
    info: &ResourceInfo,
    subresource: Option<&str>,
    current: &Value,
    new: Value,
) -> Result<Value, Status> {
    match subresource {
        None => {
            let mut new = new;
            if info.has_status() {
                new = only_changes(&new, current, &["status"], None);
            }
            if is_namespace(info) {
                new = only_changes(
                    &new,
                    current,
                    &["spec", "finalizers"],
                    Some(Value::Array(vec![])),
                );
            }
            Ok(new)
        }
        Some("status") if info.has_status() => Ok(only_changes(current, &new, &["status"], None)),
        Some("finalize") if is_namespace(info) => Ok(only_changes(
            current,
            &new,
            &["spec", "finalizers"],
            Some(Value::Array(vec![])),
        )),
        // `pods/binding` (kgc-apiserver's `BindingREST`) writes the whole bound pod.
        Some("binding") if info.group.is_empty() && info.plural == "pods" => Ok(new),
        // certificates.k8s.io `csrApprovalStrategy`: only the conditions change.
        Some("approval") if info.group == "certificates.k8s.io" => Ok(only_changes(
            current,
            &new,
            &["status", "conditions"],
            Some(Value::Null),
        )),
        Some(_) => Err(Status::no_such_resource()),
    }
}

/// `current` with only the field at `path` (keys from the root) taken from `new` (or `absent`
/// when `new` lacks it; `None` removes the field), and `new`'s resourceVersion, which the update's
/// precondition has checked already: a subresource write, or (the other way round) a main
/// resource write that leaves a subresource's part alone.
fn only_changes(current: &Value, new: &Value, path: &[&str], absent: Option<Value>) -> Value {
    let mut out = current.clone();
    let taken = path
        .iter()
        .try_fold(new, |v, key| v.get(*key))
        .cloned()
        .or(absent);
    let (last, parents) = path.split_last().expect("a non-empty path");
    let mut at = &mut out;
    for key in parents {
        if !at[*key].is_object() {
            at[*key] = json!({});
        }
        at = &mut at[*key];
    }
    match (taken, at.as_object_mut()) {
        (Some(v), Some(fields)) => {
            fields.insert((*last).to_owned(), v);
        }
        (None, Some(fields)) => {
            fields.remove(*last);
        }
        _ => {}
    }
    if let Some(rv) = new.meta_str("resourceVersion") {
        out.set("resourceVersion", rv.to_owned());
    }
    out
}

/// What defaulting and the version conversion do to every write: API defaults of built-in kinds
/// are filled in (`kgc_meta::defaults`); empty `labels`, `annotations`, `ownerReferences`,
/// `finalizers` and `managedFields` are omitted (`omitempty`); a namespace carries the
/// `kubernetes.io/metadata.name` label; a Secret's write-only `stringData` is merged into `data`,
/// base64-encoded, as the v1 conversion does. The API server applies it to an admitted object
/// (which its typed decoding has already printed as Go prints it) to record `managedFields`; the
/// store applies it again, then the typed printing, to what it stores.
pub fn normalize(info: &ResourceInfo, obj: &mut Value) {
    if !info.custom {
        kgc_meta::defaults::apply(&info.group, &info.kind, obj);
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|k, v| {
            let empty = v.is_null()
                || v.as_object().is_some_and(serde_json::Map::is_empty)
                || v.as_array().is_some_and(Vec::is_empty);
            !(empty
                && matches!(
                    k.as_str(),
                    "labels" | "annotations" | "ownerReferences" | "finalizers" | "managedFields"
                ))
        });
    }
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "namespaces") => {
            let name = obj.name().to_owned();
            let meta = obj.meta_mut();
            let labels = meta
                .entry("labels")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(l) = labels.as_object_mut() {
                l.insert("kubernetes.io/metadata.name".into(), Value::from(name));
            }
        }
        ("", "secrets") => {
            if let Some(Value::Object(string_data)) =
                obj.as_object_mut().and_then(|o| o.remove("stringData"))
            {
                if !obj["data"].is_object() {
                    obj["data"] = json!({});
                }
                for (k, v) in string_data {
                    if let Some(text) = v.as_str() {
                        obj["data"][k] = Value::from(kgc_meta::encoding::base64(text.as_bytes()));
                    }
                }
            }
        }
        _ => {}
    }
}

/// The typed encode that ends kube-apiserver's write, last: every zero value Go prints (a
/// ReplicationController's `status.replicas: 0` after its status was reset), the objects this
/// store writes itself included. The API server has decoded the body already, so nothing here
/// can fail; the store's own writes are well-typed.
fn print_as_stored(info: &ResourceInfo, obj: &mut Value) {
    if !info.custom {
        let version = kgc_meta::catalog::api_version(&info.group, info.preferred_version());
        let _ = kgc_proto::typed::decode(&version, &info.kind, obj);
    }
}

/// Kind-specific `PrepareForCreate`: clients do not set status through the main resource, a Job
/// gets its generated selector, and a new namespace carries the `kubernetes` finalizer that its
/// content deletion removes.
fn prepare_for_create(info: &ResourceInfo, obj: &mut Value) {
    if info.has_status() {
        let initial = match (info.group.as_str(), info.plural.as_str()) {
            ("", "pods") | ("", "persistentvolumes") | ("", "persistentvolumeclaims") => {
                Some(json!({"phase": "Pending"}))
            }
            ("", "namespaces") => Some(json!({"phase": "Active"})),
            _ if info.custom => None,
            _ => Some(json!({})),
        };
        match initial {
            Some(s) => obj["status"] = s,
            None => {
                if let Some(o) = obj.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
    if info.group == "batch" && info.plural == "jobs" {
        crate::job::generate_selector(obj);
    }
    if is_namespace(info) {
        if !obj["spec"].is_object() {
            obj["spec"] = json!({});
        }
        let mut fins = str_list(obj.pointer("/spec/finalizers"));
        if !fins
            .iter()
            .any(|f| f == crate::namespace::FINALIZER_KUBERNETES)
        {
            fins.push(crate::namespace::FINALIZER_KUBERNETES.to_owned());
        }
        obj["spec"]["finalizers"] = Value::from(fins);
    }
}

/// The `metadata` rules of a kind: those of `pkg/apis/core/validation` for the built-in kinds
/// (unprefixed finalizers must be standard ones), apimachinery's alone for custom resources
/// and for the kinds of apiextensions-apiserver and kube-aggregator, which validate with
/// `k8s.io/apimachinery/pkg/api/validation` (a CRD carries the unprefixed
/// `customresourcecleanup.apiextensions.k8s.io` finalizer through its status updates).
fn object_meta_rules(
    info: &ResourceInfo,
) -> fn(&Value, bool, kgc_meta::validation::NameRule) -> Vec<kgc_meta::validation::FieldError> {
    if info.custom
        || matches!(
            info.group.as_str(),
            "apiextensions.k8s.io" | "apiregistration.k8s.io"
        )
    {
        validate_object_meta_generic
    } else {
        validate_object_meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_keep_58_characters_of_the_prefix() {
        let long = "a".repeat(250);
        let name = generate_name(&long, |_| true).unwrap();
        assert_eq!(name.len(), 63);
        assert!(name.starts_with(&"a".repeat(58)));
        assert!(name[58..].bytes().all(|b| NAME_ALPHABET.contains(&b)));
        // A multi-byte character is never cut in half.
        let name = generate_name(&format!("{}é", "a".repeat(57)), |_| true).unwrap();
        assert!(name.starts_with(&"a".repeat(57)) && name.len() == 62);
    }

    #[test]
    fn generate_name_gives_up_after_upstreams_attempts() {
        let tries = std::cell::Cell::new(0);
        let last = generate_name("web-", |_| {
            tries.set(tries.get() + 1);
            false
        })
        .unwrap_err();
        assert_eq!(tries.get(), NAME_GENERATION_ATTEMPTS);
        let s = generate_name_conflict(&kgc_meta::GroupResource::new("", "pods"), &last);
        assert_eq!(
            s.message,
            format!(
                "pods \"{last}\" already exists, the server was not able to generate a unique name for the object"
            )
        );
        assert_eq!((s.code, s.retry_after_seconds), (409, Some(1)));
    }
}
