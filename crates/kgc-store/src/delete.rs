//! DELETE and DELETECOLLECTION exactly as kube-apiserver's registry performs them
//! (kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`
//! `Delete`, `staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go` `BeforeDelete`):
//! preconditions, graceful deletion of pods, the finalizers a propagation policy adds or removes,
//! `markAsDeleting`, and immediate removal.

use std::sync::Arc;

use kgc_meta::deletion::deletion_finalizers;
use kgc_meta::{DeleteOptions, GroupResource, ResourceInfo, Status};
use serde_json::{Map, Value};

use crate::object::Meta;
use crate::read::ListOptions;
use crate::shallow::{PodFacts, Shallow};
use crate::watch::EventType;
use crate::{CONFLICT_RETRIES, Change, Result, State, Store, StoredObject, Written};
use kgc_meta::time::format_time;

/// What a DELETE did.
#[derive(Debug, Clone)]
pub struct Deleted {
    /// The object as it now is (still stored) or as it was last (gone).
    pub object: Arc<StoredObject>,
    /// True when the object no longer exists; false when finalizers or a grace period keep it.
    pub gone: bool,
}

/// `rest.BeforeDelete`'s precondition check, with upstream's messages.
pub(crate) fn check_preconditions(
    gr: &GroupResource,
    stored: &StoredObject,
    opts: &DeleteOptions,
) -> Result<(), Status> {
    if let Some(uid) = &opts.preconditions.uid
        && uid != &stored.uid
    {
        return Err(Status::conflict(
            gr,
            &stored.name,
            &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                stored.uid
            ),
        ));
    }
    if let Some(rv) = &opts.preconditions.resource_version
        && rv != &stored.resource_version.to_string()
    {
        return Err(Status::conflict(
            gr,
            &stored.name,
            &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                stored.resource_version
            ),
        ));
    }
    Ok(())
}

impl Store {
    /// Deletes one object.
    pub async fn delete(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted> {
        let catalog = self.catalog();
        let info = catalog.stored_as(info);
        // Reading the object is most of a delete's work: do it before taking the write lock,
        // so that concurrent deletes (the garbage collector's workers) read in parallel. Under
        // the lock the reading is used only if the object is still that same version.
        let ns = if info.namespaced() { namespace } else { "" };
        self.latest_if_missing(&info.group_resource(), ns, name)
            .await?;
        let mut read = self
            .get(&info.group_resource(), ns, name)
            .map(|o| Reading::of(info, o, opts));
        for _ in 0..CONFLICT_RETRIES {
            let (out, pending) = {
                let mut st = self.write_lock()?;
                let (out, change) =
                    self.plan_delete(&mut st, info, namespace, name, opts, read.take())?;
                let pending = self.commit(&mut st, change.into_iter().collect())?;
                (out, pending)
            };
            // A conflict: another replica changed the object; the deletion is planned again
            // on the fresh object, its preconditions checked again (`etcd3/store.go` `Delete`).
            if let Written::At(revisions) = self.written(pending).await? {
                return Ok(Deleted {
                    object: self.landed(&info.group_resource(), out.object, revisions.first())?,
                    gone: out.gone,
                });
            }
        }
        Err(Status::stale(&info.group_resource(), name).into())
    }

    /// Deletes every object a list selects, each with `opts`, in one commit. Objects that vanish
    /// meanwhile are skipped.
    pub async fn delete_collection(
        &self,
        info: &ResourceInfo,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Vec<Deleted>> {
        let catalog = self.catalog();
        let info = catalog.stored_as(info);
        let gr = info.group_resource();
        let items = self.list(&gr, list)?.items;
        if self.is_replicated() {
            // etcd commits one key a transaction: each deletion on its own, with its retries.
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match self.delete(info, &item.namespace, &item.name, opts).await {
                    Ok(d) => out.push(d),
                    Err(crate::Error::Api(s)) if s.is(kgc_meta::Reason::NotFound) => {}
                    Err(e) => return Err(e),
                }
            }
            return Ok(out);
        }
        let (out, pending) = {
            let mut st = self.write_lock()?;
            let mut out = Vec::with_capacity(items.len());
            let mut changes = Vec::new();
            for item in items {
                match self.plan_delete(&mut st, info, &item.namespace, &item.name, opts, None) {
                    Ok((d, c)) => {
                        out.push(d);
                        changes.extend(c);
                    }
                    Err(crate::Error::Api(s)) if s.is(kgc_meta::Reason::NotFound) => {}
                    Err(e) => return Err(e),
                }
            }
            (out, self.commit(&mut st, changes)?)
        };
        pending.wait().await?;
        Ok(out)
    }

    /// One object's deletion, under the write lock; `read` is the object possibly read already
    /// (from the version it names).
    pub(crate) fn plan_delete(
        &self,
        st: &mut State,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
        read: Option<Reading>,
    ) -> Result<(Deleted, Option<Change>)> {
        opts.validate()?;
        let gr = info.group_resource();
        let ns = if info.namespaced() { namespace } else { "" };
        let stored = st
            .get(&gr, ns, name)
            .cloned()
            .ok_or_else(|| Status::not_found(&gr, name))?;
        check_preconditions(&gr, &stored, opts)?;
        let read = match read {
            Some(r) if Arc::ptr_eq(&r.version, &stored) => r.read,
            _ => Reading::of(info, Arc::clone(&stored), opts).read,
        };
        let mut obj = match read {
            Read::Doc(doc) => doc,
            Read::Unparsed(span) => {
                let rv = if opts.dry_run { st.rv } else { st.next_rv() };
                let object = respliced(&stored, span, rv);
                let change = (!opts.dry_run).then(|| Change {
                    gr,
                    kind: EventType::Deleted,
                    object: Arc::clone(&object),
                    prev: Some(stored),
                });
                return Ok((Deleted { object, gone: true }, change));
            }
        };
        if is_namespace(info) {
            let mut ns = obj.into_whole(&stored);
            let step = crate::namespace::prepare_delete(&mut ns, info, opts, self.clock())?;
            obj = Doc::Whole(ns);
            match step {
                crate::namespace::NamespaceDelete::Proceed => {}
                crate::namespace::NamespaceDelete::Keep => {
                    return self.persist_kept(st, &gr, stored, obj, opts.dry_run);
                }
            }
        }
        let now = self.clock().now();
        if crate::crd::is_crd(&gr) {
            let mut crd = obj.into_whole(&stored);
            crate::crd::prepare_delete(&mut crd, &format_time(now));
            obj = Doc::Whole(crd);
        }
        let mut graceful = false;
        if info.graceful {
            let pod = obj.pod_facts();
            match graceful_deletion(&mut obj, &pod, opts, now) {
                Grace::Pending => {
                    return Ok((
                        Deleted {
                            object: stored,
                            gone: false,
                        },
                        None,
                    ));
                }
                Grace::Wait => graceful = true,
                Grace::Now => {}
            }
        }
        let finalizers = obj.finalizers();
        if let Some(next) = deletion_finalizers(info.gc_policy, opts, &finalizers) {
            obj.set_finalizers(next);
        }
        let pending_finalizers = !obj.finalizers().is_empty();
        if !graceful && pending_finalizers {
            // `markAsDeleting`.
            if obj.deletion_timestamp().is_none() {
                let generation = obj.generation();
                if generation > 0 {
                    obj.set("generation", generation + 1);
                }
                obj.set("deletionTimestamp", format_time(now));
            }
            obj.set("deletionGracePeriodSeconds", 0);
        }
        if graceful || pending_finalizers {
            return self.persist_kept(st, &gr, stored, obj, opts.dry_run);
        }
        let rv = if opts.dry_run { st.rv } else { st.next_rv() };
        let object = stamp_removed(&mut obj, rv, &stored)?;
        let change = (!opts.dry_run).then(|| Change {
            gr,
            kind: EventType::Deleted,
            object: Arc::clone(&object),
            prev: Some(stored),
        });
        Ok((Deleted { object, gone: true }, change))
    }

    /// Writes an object that a DELETE keeps (finalizers or a grace period pending), unless
    /// nothing changed.
    fn persist_kept(
        &self,
        st: &mut State,
        gr: &GroupResource,
        stored: Arc<StoredObject>,
        mut obj: Doc,
        dry_run: bool,
    ) -> Result<(Deleted, Option<Change>)> {
        if obj.unchanged(&stored) {
            return Ok((
                Deleted {
                    object: stored,
                    gone: false,
                },
                None,
            ));
        }
        let rv = if dry_run { st.rv } else { st.next_rv() };
        obj.set("resourceVersion", rv.to_string());
        let object = StoredObject::from_meta(obj.meta(), obj.text(&stored)?.into_boxed_str())?;
        let change = (!dry_run).then(|| Change {
            gr: gr.clone(),
            kind: EventType::Modified,
            object: Arc::clone(&object),
            prev: Some(stored),
        });
        Ok((
            Deleted {
                object,
                gone: false,
            },
            change,
        ))
    }
}

/// The last state of a removed object: `obj` (the stored version, its finalizers possibly
/// changed) at resourceVersion `rv`. Only the resourceVersion and finalizers can differ from
/// `stored`, so its indexed fields are copied rather than read back from the JSON.
fn stamp_removed(obj: &mut Doc, rv: u64, stored: &StoredObject) -> Result<Arc<StoredObject>> {
    obj.set("resourceVersion", rv.to_string());
    let raw = obj.text(stored)?;
    Ok(Arc::new(StoredObject {
        namespace: stored.namespace.clone(),
        name: stored.name.clone(),
        uid: stored.uid.clone(),
        resource_version: rv,
        deleting: obj.deletion_timestamp().is_some(),
        labels: stored.labels.clone(),
        raw: raw.into_boxed_str(),
    }))
}

fn is_namespace(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == "namespaces"
}

/// How a DELETE reads an object: done before the write lock is taken, and used under it only if
/// the object is still the version read.
pub(crate) struct Reading {
    version: Arc<StoredObject>,
    read: Read,
}

enum Read {
    /// Removed at once without looking inside ([`removable_unparsed`]): where its
    /// resourceVersion pair is.
    Unparsed(std::ops::Range<usize>),
    Doc(Doc),
}

impl Reading {
    fn of(info: &ResourceInfo, stored: Arc<StoredObject>, opts: &DeleteOptions) -> Self {
        let read = match removable_unparsed(info, &stored, opts) {
            Some(span) => Read::Unparsed(span),
            None => Read::Doc(Doc::read(info, &stored)),
        };
        Self {
            version: stored,
            read,
        }
    }
}

/// An object a DELETE changes: a namespace or CRD (whose delete-time rules touch `spec` and
/// `status`) parsed whole, any other kind only as deep as its `metadata` ([`Shallow`]).
enum Doc {
    Whole(Value),
    Shallow(Shallow),
}

impl Doc {
    fn read(info: &ResourceInfo, stored: &StoredObject) -> Self {
        if is_namespace(info) || crate::crd::is_crd(&info.group_resource()) {
            return Self::Whole(stored.value());
        }
        Shallow::read(stored).map_or_else(|| Self::Whole(stored.value()), Self::Shallow)
    }

    /// The whole object (`stored` with the changes so far), to change beyond its metadata.
    fn into_whole(self, stored: &StoredObject) -> Value {
        match self {
            Self::Whole(v) => v,
            Self::Shallow(s) => s.into_whole(stored),
        }
    }

    fn pod_facts(&self) -> PodFacts {
        match self {
            Self::Whole(v) => PodFacts::of(v),
            Self::Shallow(s) => s.pod.clone(),
        }
    }

    /// Whether nothing changed since `stored`.
    fn unchanged(&self, stored: &StoredObject) -> bool {
        match self {
            Self::Whole(v) => *v == stored.value(),
            Self::Shallow(s) => s.unchanged(stored),
        }
    }

    /// The object's JSON text.
    fn text(&self, stored: &StoredObject) -> Result<String, Status> {
        let text = match self {
            Self::Whole(v) => {
                // Sized for the stored text, so that serializing does not grow the buffer step
                // by step.
                let mut raw = Vec::with_capacity(stored.raw.len() + 64);
                serde_json::to_writer(&mut raw, v)
                    .map(|()| raw)
                    .and_then(|raw| {
                        String::from_utf8(raw).map_err(|e| serde::ser::Error::custom(e.to_string()))
                    })
            }
            Self::Shallow(s) => s.text(stored),
        };
        text.map_err(|e| Status::internal(format!("serializing object: {e}")))
    }
}

impl Meta for Doc {
    fn meta(&self) -> Option<&Map<String, Value>> {
        match self {
            Self::Whole(v) => v.meta(),
            Self::Shallow(s) => s.meta(),
        }
    }

    fn meta_mut(&mut self) -> &mut Map<String, Value> {
        match self {
            Self::Whole(v) => v.meta_mut(),
            Self::Shallow(s) => s.meta_mut(),
        }
    }
}

/// Whether a DELETE removes this object at once without looking inside it, and if so where its
/// `"resourceVersion":"N"` pair is: a kind with no delete-time rules (not a namespace, a CRD or
/// a graceful kind), no finalizers, options that add none, and that pair exactly once in the
/// text. (A JSON string escapes its quotes, so `"finalizers":` or the pair can only match a
/// key; without one anywhere, the object has no finalizers.) This is most of what the garbage
/// collector deletes; skipping the parse and re-serialization halves such a delete's cost.
fn removable_unparsed(
    info: &ResourceInfo,
    stored: &StoredObject,
    opts: &DeleteOptions,
) -> Option<std::ops::Range<usize>> {
    if info.graceful
        || crate::crd::is_crd(&info.group_resource())
        || is_namespace(info)
        || stored.raw.contains("\"finalizers\":")
        || deletion_finalizers(info.gc_policy, opts, &[]).is_some()
    {
        return None;
    }
    let pair = format!("\"resourceVersion\":\"{}\"", stored.resource_version);
    let at = stored.raw.find(&pair)?;
    let end = at + pair.len();
    (!stored.raw[end..].contains(&pair)).then_some(at..end)
}

/// `stored` at resourceVersion `rv`, its resourceVersion pair (at `span`) rewritten: the text a
/// parse, set and re-serialization would produce.
fn respliced(stored: &StoredObject, span: std::ops::Range<usize>, rv: u64) -> Arc<StoredObject> {
    let rv_text = rv.to_string();
    let mut raw = String::with_capacity(stored.raw.len() + rv_text.len());
    raw.push_str(&stored.raw[..span.start]);
    raw.push_str("\"resourceVersion\":\"");
    raw.push_str(&rv_text);
    raw.push('"');
    raw.push_str(&stored.raw[span.end..]);
    Arc::new(StoredObject {
        namespace: stored.namespace.clone(),
        name: stored.name.clone(),
        uid: stored.uid.clone(),
        resource_version: rv,
        deleting: stored.deleting,
        labels: stored.labels.clone(),
        raw: raw.into_boxed_str(),
    })
}

/// The outcome of the graceful-deletion step for a pod.
enum Grace {
    /// A longer-or-equal graceful deletion is already under way: return the object unchanged.
    Pending,
    /// Stays until its `deletionTimestamp`, the end of the grace period (the kubelet, or
    /// the pod-termination controller standing in for it, then deletes it).
    Wait,
    /// Grace period zero: continue as a non-graceful deletion.
    Now,
}

/// The pod grace period a DELETE asks for (`podStrategy.CheckGracefulDelete`): the request's,
/// else `spec.terminationGracePeriodSeconds` (default 30); zero for unscheduled or terminated
/// pods; a negative request counts as 1.
fn requested_grace(pod: &PodFacts, opts: &DeleteOptions) -> i64 {
    let mut grace = negative_as_one(
        opts.grace_period_seconds
            .unwrap_or_else(|| pod.termination_grace.unwrap_or(30)),
    );
    if !pod.scheduled || pod.terminal {
        grace = 0;
    }
    grace
}

/// A negative grace period counts as one second on the delete path (`rest.BeforeDelete`).
fn negative_as_one(seconds: i64) -> i64 {
    if seconds < 0 { 1 } else { seconds }
}

/// `rest.BeforeDelete` for graceful kinds: `pod` is the object's metadata to change, `facts`
/// what the grace period depends on.
fn graceful_deletion(
    pod: &mut impl Meta,
    facts: &PodFacts,
    opts: &DeleteOptions,
    now: jiff::Timestamp,
) -> Grace {
    let parse = |s: &str| s.parse::<jiff::Timestamp>().ok();
    if let Some(ts) = pod.deletion_timestamp().and_then(parse) {
        // Already terminating (`rest.BeforeDelete`): a stored negative period counts as 1, none
        // or zero means an earlier immediate deletion did not finish; only a shorter period the
        // request names explicitly changes anything (the spec's default and the unscheduled or
        // terminal zero apply to the first DELETE only).
        let existing = pod.deletion_grace().map(negative_as_one).unwrap_or(0);
        if existing == 0 {
            return Grace::Now;
        }
        let Some(requested) = opts.grace_period_seconds.map(negative_as_one) else {
            return Grace::Pending;
        };
        if requested >= existing {
            return Grace::Pending;
        }
        // Shorten: the original request time plus the new period.
        let start = ts
            .checked_sub(jiff::SignedDuration::from_secs(existing))
            .unwrap_or(ts);
        let deadline = start
            .checked_add(jiff::SignedDuration::from_secs(requested))
            .unwrap_or(start);
        pod.set("deletionTimestamp", format_time(deadline));
        pod.set("deletionGracePeriodSeconds", requested);
        return if requested > 0 {
            Grace::Wait
        } else {
            Grace::Now
        };
    }
    let requested = requested_grace(facts, opts);
    let deadline = now
        .checked_add(jiff::SignedDuration::from_secs(requested))
        .unwrap_or(now);
    pod.set("deletionTimestamp", format_time(deadline));
    pod.set("deletionGracePeriodSeconds", requested);
    let generation = pod.generation();
    if generation > 0 {
        pod.set("generation", generation + 1);
    }
    if requested > 0 {
        Grace::Wait
    } else {
        Grace::Now
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unparsed_removal_writes_what_the_full_path_would() {
        let cm = kgc_meta::catalog::Catalog::builtin()
            .get("", "v1", "configmaps")
            .cloned()
            .expect("configmaps");
        let opts = DeleteOptions::default();
        let stored = |v: serde_json::Value| StoredObject::from_value(&v).expect("stored");
        let plain = stored(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                         "annotations": {"x": "\"resourceVersion\":\"7\" \"finalizers\":"}},
            "data": {"resourceVersion": "6"}}));
        let span = removable_unparsed(&cm, &plain, &opts).expect("removable");
        let mut full = plain.value();
        let want = crate::stamp(&mut full, 8).expect("stamp");
        assert_eq!(respliced(&plain, span, 8), want);
        let ambiguous = stored(json!({"metadata": {"name": "a", "resourceVersion": "7"},
                                      "data": {"resourceVersion": "7"}}));
        assert!(removable_unparsed(&cm, &ambiguous, &opts).is_none());
        let finalized = stored(json!({"metadata": {"name": "a", "resourceVersion": "7",
                                                   "finalizers": ["x/y"]}}));
        assert!(removable_unparsed(&cm, &finalized, &opts).is_none());
        let foreground = DeleteOptions {
            propagation_policy: Some(kgc_meta::PropagationPolicy::Foreground),
            ..Default::default()
        };
        assert!(removable_unparsed(&cm, &plain, &foreground).is_none());
    }

    #[test]
    fn pod_grace_rules() {
        let scheduled =
            PodFacts::of(&json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}));
        let d = DeleteOptions::default();
        assert_eq!(requested_grace(&scheduled, &d), 30);
        let custom =
            PodFacts::of(&json!({"spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 5}}));
        assert_eq!(requested_grace(&custom, &d), 5);
        let g = |s| DeleteOptions {
            grace_period_seconds: Some(s),
            ..Default::default()
        };
        assert_eq!(requested_grace(&scheduled, &g(-3)), 1);
        assert_eq!(requested_grace(&scheduled, &g(0)), 0);
        assert_eq!(
            requested_grace(&PodFacts::of(&json!({"spec": {}})), &g(10)),
            0
        );
        let done =
            PodFacts::of(&json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Succeeded"}}));
        assert_eq!(requested_grace(&done, &g(10)), 0);
    }

    #[test]
    fn second_delete_only_shortens() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut pod = json!({"metadata": {"generation": 1}, "spec": {"nodeName": "n1"}});
        let facts = PodFacts::of(&pod);
        assert!(matches!(
            graceful_deletion(&mut pod, &facts, &DeleteOptions::default(), now),
            Grace::Wait
        ));
        assert_eq!(pod["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z");
        assert_eq!(pod["metadata"]["generation"], 2);
        let longer = DeleteOptions {
            grace_period_seconds: Some(60),
            ..Default::default()
        };
        assert!(matches!(
            graceful_deletion(&mut pod, &facts, &longer, now),
            Grace::Pending
        ));
        let shorter = DeleteOptions {
            grace_period_seconds: Some(10),
            ..Default::default()
        };
        assert!(matches!(
            graceful_deletion(&mut pod, &facts, &shorter, now),
            Grace::Wait
        ));
        assert_eq!(pod["metadata"]["deletionTimestamp"], "2026-01-01T00:00:10Z");
        assert_eq!(pod["metadata"]["generation"], 2);
    }

    /// Upstream `rest.BeforeDelete`: once a pod is terminating, a DELETE that names no grace
    /// period is pending whatever the spec's default is, or whether the pod has finished since
    /// (the collector's plain DELETE of a terminating pod must not shorten its grace).
    #[test]
    fn second_delete_without_a_period_is_pending() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut pod = json!({"metadata": {}, "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30}});
        let facts = PodFacts::of(&pod);
        let longer = DeleteOptions {
            grace_period_seconds: Some(60),
            ..Default::default()
        };
        assert!(matches!(
            graceful_deletion(&mut pod, &facts, &longer, now),
            Grace::Wait
        ));
        assert_eq!(pod["metadata"]["deletionTimestamp"], "2026-01-01T00:01:00Z");
        pod["status"] = json!({"phase": "Succeeded"});
        let finished = PodFacts::of(&pod);
        for facts in [&facts, &finished] {
            assert!(matches!(
                graceful_deletion(&mut pod, facts, &DeleteOptions::default(), now),
                Grace::Pending
            ));
            assert_eq!(pod["metadata"]["deletionTimestamp"], "2026-01-01T00:01:00Z");
            assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 60);
        }
        // A stored negative period counts as one second: zero still shortens it.
        pod["metadata"]["deletionGracePeriodSeconds"] = json!(-3);
        let now_please = DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        assert!(matches!(
            graceful_deletion(&mut pod, &facts, &now_please, now),
            Grace::Now
        ));
    }
}
