//! The namespace controller (kubernetes `pkg/controller/namespace/namespace_controller.go` and
//! `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`): a namespace with a
//! deletionTimestamp and the `kubernetes` finalizer has its content deleted (a collection DELETE
//! per namespaced resource, background propagation), what remains reported in its
//! `NamespaceContentRemaining`/`NamespaceFinalizersRemaining` conditions, and the finalizer
//! removed through `…/finalize` once it is empty.
//!
//! A pass costs two requests per namespaced resource (the DELETE and the LIST that checks
//! what remains) whatever the namespace holds. While content remains the namespace is looked
//! at again after an estimate, as upstream requeues (`estimate / 2 + 1` seconds): the longest
//! remaining grace period of content being deleted, or 15 s while finalizers hold content;
//! and whenever the namespace itself changes. Never on other commits.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kgc_client::Cluster;
use kgc_meta::{DeleteOptions, ObjectMeta, PropagationPolicy, Reason, ResourceInfo};
use kgc_runtime::informer::View;
use serde_json::{Value, json};

use kgc_meta::time::format_time;

use kgc_runtime::{Context, run_by_name};

use crate::{Error, Result};

/// The name `--controllers` knows it by.
pub const NAME: &str = "namespace";
/// The `spec.finalizers` entry this controller owns.
pub const FINALIZER: &str = "kubernetes";
/// Upstream `finalizerEstimateSeconds`: how long content held by finalizers is given.
const FINALIZER_ESTIMATE_SECONDS: i64 = 15;
/// Upstream `--concurrent-namespace-syncs`.
const WORKERS: usize = 10;

/// What the controller keeps of a namespace: only those being deleted, so the cache holds
/// what there is to do.
#[derive(Debug, Clone, PartialEq)]
struct Terminating;

impl View for Terminating {
    fn view(obj: &Value) -> Option<Self> {
        obj["metadata"]["deletionTimestamp"]
            .is_string()
            .then_some(Terminating)
    }
}

/// Runs the controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let sync = async |ctx: Context<C>, namespaces: Arc<ResourceInfo>, name: String| {
        sync(&ctx, &namespaces, &name).await
    };
    run_by_name::<C, Terminating, _, _, _>(ctx, NAME, ("", "namespaces"), WORKERS, sync).await;
}

/// What deleting the content found.
#[derive(Debug, Default)]
struct Content {
    /// Seconds until the remaining content should be gone (0: nothing to wait for).
    estimate: i64,
    /// Remaining objects by resource (`configmaps`, `widgets.example.com`).
    remaining: BTreeMap<String, usize>,
    /// Remaining objects by finalizer.
    finalizers: BTreeMap<String, usize>,
}

/// One pass over a namespace (upstream `namespacedResourcesDeleter.Delete`); `Some(d)`: look
/// again after `d`.
async fn sync<C: Cluster>(
    ctx: &Context<C>,
    namespaces: &ResourceInfo,
    name: &str,
) -> Result<Option<Duration>> {
    // Read live, as upstream does: the cache may be behind a recreation.
    let Some(ns) = ctx.cluster().get_object(namespaces, "", name).await? else {
        return Ok(None);
    };
    let Some(deleted_at) = ns["metadata"]["deletionTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    else {
        return Ok(None);
    };
    if !spec_finalizers(&ns).iter().any(|f| f == FINALIZER) {
        return Ok(None);
    }
    let content = delete_content(ctx, name, deleted_at).await?;
    update_conditions(ctx, namespaces, &ns, &content).await?;
    if content.estimate > 0 {
        let secs = content.estimate / 2 + 1;
        tracing::debug!(controller = NAME, namespace = %name, estimate = content.estimate, "content remains; looking again in {secs} s");
        return Ok(Some(Duration::from_secs(secs.unsigned_abs())));
    }
    if !content.remaining.is_empty() {
        return Err(Error::Remaining(format!(
            "unexpected items still remain in namespace: {name}: {}",
            describe(&content.remaining, "has", "resource instances")
        )));
    }
    finalize(ctx, namespaces, ns).await
}

/// Upstream `deleteAllContent`: every namespaced resource that can be deleted and listed.
async fn delete_content<C: Cluster>(
    ctx: &Context<C>,
    namespace: &str,
    deleted_at: jiff::Timestamp,
) -> Result<Content> {
    let resources = ctx.cluster().resources().await?;
    let background = DeleteOptions {
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteOptions::default()
    };
    let now = ctx.clock.now();
    let mut content = Content::default();
    for r in resources
        .iter()
        .filter(|r| r.namespaced() && r.supports("delete") && r.supports("list"))
    {
        if r.supports("deletecollection") {
            match ctx
                .cluster()
                .delete_collection(r, namespace, &background)
                .await
            {
                Ok(()) => {}
                Err(e) if e.is(Reason::NotFound) || e.is(Reason::MethodNotAllowed) => {}
                Err(e) => return Err(e.into()),
            }
        } else {
            delete_each(ctx, r, namespace, &background).await?;
        }
        let left = ctx.cluster().list(r, namespace).await?;
        if left.is_empty() {
            continue;
        }
        *content
            .remaining
            .entry(r.group_resource().to_string())
            .or_default() += left.len();
        let mut estimate = grace_estimate(&left, now, deleted_at);
        for m in &left {
            for f in &m.finalizers {
                *content.finalizers.entry(f.clone()).or_default() += 1;
            }
        }
        if estimate == 0 && left.iter().any(|m| !m.finalizers.is_empty()) {
            estimate = FINALIZER_ESTIMATE_SECONDS;
        }
        content.estimate = content.estimate.max(estimate);
    }
    Ok(content)
}

/// Upstream `deleteEachItem`, for a resource without `deletecollection`.
async fn delete_each<C: Cluster>(
    ctx: &Context<C>,
    r: &ResourceInfo,
    namespace: &str,
    background: &DeleteOptions,
) -> Result<()> {
    for m in ctx.cluster().list(r, namespace).await? {
        if m.deletion_timestamp.is_some() {
            continue;
        }
        let mut opts = background.clone();
        opts.preconditions.uid = Some(m.uid.clone());
        match ctx.cluster().delete(r, namespace, &m.name, &opts).await {
            Ok(_) => {}
            Err(e)
                if e.is(Reason::NotFound)
                    || e.is(Reason::Conflict)
                    || e.is(Reason::MethodNotAllowed) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Upstream `estimateGracefulTermination`: the longest wait until content being gracefully
/// deleted is due to go (its deletionTimestamp, which a graceful DELETE sets to the end of the
/// grace period), and none once the namespace has been deleting for longer than that.
fn grace_estimate(left: &[ObjectMeta], now: jiff::Timestamp, deleted_at: jiff::Timestamp) -> i64 {
    let longest = left
        .iter()
        .filter_map(|m| {
            m.deletion_timestamp
                .as_deref()?
                .parse::<jiff::Timestamp>()
                .ok()
        })
        .map(|due| due.duration_since(now).as_secs())
        .max()
        .unwrap_or(0)
        .max(0);
    if now.duration_since(deleted_at).as_secs() >= longest {
        0
    } else {
        longest
    }
}

fn spec_finalizers(ns: &Value) -> Vec<String> {
    ns["spec"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect()
}

/// `configmaps has 1 resource instances, …` as upstream words the conditions.
fn describe(counts: &BTreeMap<String, usize>, verb: &str, what: &str) -> String {
    counts
        .iter()
        .map(|(k, n)| match verb {
            "" => format!("{k} in {n} {what}"),
            v => format!("{k} {v} {n} {what}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reports what remains in the namespace's conditions; writes only when they change.
async fn update_conditions<C: Cluster>(
    ctx: &Context<C>,
    namespaces: &ResourceInfo,
    ns: &Value,
    content: &Content,
) -> Result<()> {
    let mut conditions: Vec<Value> = ns["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let before = conditions.clone();
    let now = format_time(ctx.clock.now());
    if content.remaining.is_empty() {
        conditions.retain(|c| c["type"] != "NamespaceContentRemaining");
    } else {
        set_condition(
            &mut conditions,
            "NamespaceContentRemaining",
            "SomeResourcesRemain",
            &format!(
                "Some resources are remaining: {}",
                describe(&content.remaining, "has", "resource instances")
            ),
            &now,
        );
    }
    if content.finalizers.is_empty() {
        conditions.retain(|c| c["type"] != "NamespaceFinalizersRemaining");
    } else {
        set_condition(
            &mut conditions,
            "NamespaceFinalizersRemaining",
            "SomeFinalizersRemain",
            &format!(
                "Some content in the namespace has finalizers remaining: {}",
                describe(&content.finalizers, "", "resource instances")
            ),
            &now,
        );
    }
    if conditions == before {
        return Ok(());
    }
    let mut updated = ns.clone();
    updated["status"]["conditions"] = Value::from(conditions);
    let name = ns["metadata"]["name"].as_str().unwrap_or_default();
    match ctx
        .cluster()
        .replace_status(namespaces, "", name, updated)
        .await
    {
        // Changed meanwhile: the change queues the namespace again.
        Err(e) if e.is(Reason::NotFound) || e.is(Reason::Conflict) => Ok(()),
        other => other.map(|_| ()).map_err(Error::from),
    }
}

/// Sets a condition, keeping it (and its transition time) when only the time would change.
fn set_condition(conditions: &mut Vec<Value>, kind: &str, reason: &str, message: &str, now: &str) {
    let fresh = json!({"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now});
    match conditions.iter_mut().find(|c| c["type"] == kind) {
        Some(c) if c["message"] == message && c["status"] == "True" => {}
        Some(c) => *c = fresh,
        None => conditions.push(fresh),
    }
}

/// Upstream `finalizeNamespace`: `spec.finalizers` without ours, through `…/finalize`.
async fn finalize<C: Cluster>(
    ctx: &Context<C>,
    namespaces: &ResourceInfo,
    mut ns: Value,
) -> Result<Option<Duration>> {
    let kept: Vec<String> = spec_finalizers(&ns)
        .into_iter()
        .filter(|f| f != FINALIZER)
        .collect();
    ns["spec"]["finalizers"] = Value::from(kept);
    let name = ns["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    match ctx
        .cluster()
        .replace_subresource(namespaces, "", &name, "finalize", ns)
        .await
    {
        Ok(_) => {
            tracing::info!(controller = NAME, namespace = %name, "finalized");
            Ok(None)
        }
        // Gone already: done. Changed meanwhile (409): the change queues it again.
        Err(e) if e.is(Reason::NotFound) || e.is(Reason::Conflict) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    fn deleting(at: Option<&str>, finalizers: &[&str]) -> ObjectMeta {
        ObjectMeta {
            deletion_timestamp: at.map(str::to_owned),
            finalizers: finalizers.iter().map(|f| (*f).to_owned()).collect(),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn the_estimate_is_the_longest_grace_left_while_the_namespace_is_younger() {
        let now = t("2026-01-01T00:00:10Z");
        let left = [
            deleting(Some("2026-01-01T00:00:40Z"), &[]),
            deleting(Some("2026-01-01T00:00:20Z"), &[]),
        ];
        assert_eq!(grace_estimate(&left, now, t("2026-01-01T00:00:05Z")), 30);
        assert_eq!(
            grace_estimate(&left, now, t("2025-12-31T23:00:00Z")),
            0,
            "a namespace deleting for longer than the grace periods waits no more"
        );
        assert_eq!(grace_estimate(&[deleting(None, &["x"])], now, now), 0);
    }

    #[test]
    fn conditions_read_as_upstream_words_them() {
        let counts: BTreeMap<String, usize> = [
            ("configmaps".to_owned(), 1),
            ("widgets.example.com".to_owned(), 2),
        ]
        .into();
        assert_eq!(
            describe(&counts, "has", "resource instances"),
            "configmaps has 1 resource instances, widgets.example.com has 2 resource instances"
        );
        let fins: BTreeMap<String, usize> = [("example.com/hold".to_owned(), 1)].into();
        assert_eq!(
            describe(&fins, "", "resource instances"),
            "example.com/hold in 1 resource instances"
        );
    }

    #[test]
    fn an_unchanged_condition_keeps_its_transition_time() {
        let mut conditions = Vec::new();
        set_condition(&mut conditions, "A", "R", "m", "t1");
        set_condition(&mut conditions, "A", "R", "m", "t2");
        assert_eq!(conditions[0]["lastTransitionTime"], "t1");
        set_condition(&mut conditions, "A", "R", "other", "t3");
        assert_eq!(conditions[0]["lastTransitionTime"], "t3");
    }
}
