//! The prune policy at delete time: deletes in reverse dependency order, each with its
//! preconditions, and the rules that keep an object only discoverable then (a CRD whose custom
//! resources remain, a namespace with content the set does not own).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{DeleteParams, ListParams, Preconditions, PropagationPolicy};
use serde_json::Value;

use crate::Error;
use crate::desired::{self, ObjectKey};
use crate::gvk::GroupKind;
use crate::inventory::Inventory;
use crate::listing::Resource;
use crate::ownership::Identity;
use crate::plan::Candidate;
use crate::str_at;

use super::client::{ApiServer, display, kube_err};
use super::{CONCURRENCY, Execution, Options, Prepared, Progress, READY_TIMEOUT, Report, prepare};

/// What happened to one deletion.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeleteOutcome {
    Deleted,
    /// Deleted, and seen gone (`--wait`).
    Gone,
    /// Still there after `--wait`'s deadline, held by these finalizers.
    Waiting {
        finalizers: Vec<String>,
    },
    /// Already gone.
    NotFound,
    /// Replaced or changed since it was listed (the precondition failed): not deleted.
    Changed,
    /// Kept by a rule discovered at delete time.
    Kept {
        reason: String,
    },
    Failed {
        error: String,
    },
    /// Dry run: would be deleted.
    WouldDelete,
}

fn candidate_resource(c: &Candidate) -> Resource {
    Resource {
        gk: c.key.gk.clone(),
        version: c.version.clone(),
        plural: c.plural.clone(),
        namespaced: c.namespaced,
    }
}

/// Deletes in reverse apply order, a rank at a time, in parallel within a rank. CRDs go only
/// after the set's custom resources are gone and none of anyone else's remain; a namespace
/// only when it holds nothing but the set's `parent`.
pub(super) async fn prune(
    cluster: &ApiServer,
    deletes: &[&Candidate],
    parent: &ObjectKey,
    how: Execution,
    progress: &dyn Progress,
    report: &mut Report,
) {
    let mut by_rank: BTreeMap<std::cmp::Reverse<u8>, Vec<&Candidate>> = BTreeMap::new();
    for c in deletes {
        by_rank
            .entry(std::cmp::Reverse(c.rank))
            .or_default()
            .push(c);
    }
    progress.phase("prune", deletes.len());
    for batch in by_rank.into_values() {
        if how.dry_run {
            for c in batch {
                report
                    .deleted
                    .push((c.key.clone(), DeleteOutcome::WouldDelete));
            }
            continue;
        }
        let results: Vec<_> = futures::stream::iter(batch)
            .map(|c| async move {
                let outcome = delete_one(cluster, c, parent, how.exact, how.wait).await;
                progress.step();
                (c.key.clone(), outcome)
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        report.deleted.extend(results);
    }
    report.deleted.sort_by(|a, b| a.0.cmp(&b.0));
}

async fn delete_one(
    cluster: &ApiServer,
    c: &Candidate,
    parent: &ObjectKey,
    exact: bool,
    wait: Option<Duration>,
) -> DeleteOutcome {
    let r = candidate_resource(c);
    if c.key.gk.is_crd()
        && let Some(outcome) = crd_blocked(cluster, c).await
    {
        return outcome;
    }
    if c.key.gk.is_namespace()
        && let Some(outcome) = namespace_blocked(cluster, &c.key.name, parent).await
    {
        return outcome;
    }
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        preconditions: Some(Preconditions {
            uid: Some(c.uid.clone()),
            resource_version: exact.then(|| c.resource_version.clone()),
        }),
        ..DeleteParams::default()
    };
    match cluster
        .api(&r, &c.key.namespace)
        .delete(&c.key.name, &dp)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return DeleteOutcome::NotFound,
        Err(kube::Error::Api(s)) if s.code == 409 => return DeleteOutcome::Changed,
        Err(e) => {
            return DeleteOutcome::Failed {
                error: e.to_string(),
            };
        }
    }
    let Some(timeout) = wait else {
        return DeleteOutcome::Deleted;
    };
    let deadline = Instant::now() + timeout;
    loop {
        match cluster.get(&r, &c.key.namespace, &c.key.name).await {
            Ok(None) => return DeleteOutcome::Gone,
            Ok(Some(live)) if str_at(&live, "/metadata/uid") != c.uid => {
                return DeleteOutcome::Gone;
            }
            Ok(Some(live)) if Instant::now() > deadline => {
                let finalizers = live
                    .pointer("/metadata/finalizers")
                    .and_then(Value::as_array)
                    .map(|f| {
                        f.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                return DeleteOutcome::Waiting { finalizers };
            }
            Ok(Some(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => {
                return DeleteOutcome::Failed {
                    error: e.to_string(),
                };
            }
        }
    }
}

/// A CRD is kept while any custom resource of it remains (the set's own were deleted in an
/// earlier rank; deleting the CRD would take everyone else's with it).
async fn crd_blocked(cluster: &ApiServer, c: &Candidate) -> Option<DeleteOutcome> {
    let r = candidate_resource(c);
    let live = match cluster.get(&r, "", &c.key.name).await {
        Ok(Some(l)) => l,
        Ok(None) => return Some(DeleteOutcome::NotFound),
        Err(e) => {
            return Some(DeleteOutcome::Failed {
                error: e.to_string(),
            });
        }
    };
    let defined = desired::crd_resources(&live);
    let resource = defined.first()?;
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let list = cluster
            .api(resource, "")
            .list_metadata(&ListParams::default().limit(1))
            .await;
        match list {
            Ok(l) if l.items.is_empty() => return None,
            // Only objects already being deleted (the set's own, a rank earlier) are waited for.
            Ok(l)
                if Instant::now() < deadline
                    && l.items
                        .iter()
                        .all(|i| i.metadata.deletion_timestamp.is_some()) =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(l) => {
                let first = &l.items[0].metadata;
                return Some(DeleteOutcome::Kept {
                    reason: format!(
                        "{} objects remain, such as {}",
                        resource.gk,
                        display(
                            first.namespace.as_deref().unwrap_or(""),
                            first.name.as_deref().unwrap_or("")
                        )
                    ),
                });
            }
            Err(kube::Error::Api(s)) if s.code == 404 => return None,
            Err(e) => {
                return Some(DeleteOutcome::Failed {
                    error: e.to_string(),
                });
            }
        }
    }
}

/// Kinds whose objects a namespace holds without anyone having put them there (events,
/// metrics, endpoints that services make).
fn incidental(gk: &GroupKind) -> bool {
    matches!(
        (gk.group.as_str(), gk.kind.as_str()),
        ("" | "events.k8s.io", "Event") | ("", "Endpoints") | ("discovery.k8s.io", "EndpointSlice")
    ) || gk.group == "metrics.k8s.io"
}

/// A Namespace is kept while it holds anything that is not being deleted, not made by a
/// controller and not one of the objects every namespace gets (the `default` ServiceAccount,
/// the `kube-root-ca.crt` ConfigMap): deleting it would take others' objects with it (the gap
/// behind argoproj/argo-cd#22607 and kubernetes-sigs/cli-utils#274). The set's own members
/// were deleted a rank earlier, and its `parent` never keeps the namespace: the plan only lets
/// the parent's namespace go when the set is being deleted, and the parent goes with it (it is
/// deleted while the parent still records the set, so a run that fails here leaves the
/// inventory for the next one). A kind that cannot be listed keeps the namespace.
async fn namespace_blocked(
    cluster: &ApiServer,
    namespace: &str,
    parent: &ObjectKey,
) -> Option<DeleteOutcome> {
    let resources: Vec<&Resource> = cluster
        .catalog
        .preferred
        .values()
        .filter(|r| r.namespaced && !incidental(&r.gk))
        .collect();
    let found: Vec<Option<String>> = futures::stream::iter(resources)
        .map(|r| async move {
            let list = cluster
                .api(r, namespace)
                .list_metadata(&ListParams::default().limit(100))
                .await;
            match list {
                Ok(l) => l
                    .items
                    .iter()
                    .find(|o| {
                        let m = &o.metadata;
                        let name = m.name.as_deref().unwrap_or("");
                        let is_parent = r.gk == parent.gk
                            && namespace == parent.namespace
                            && name == parent.name;
                        !is_parent
                            && m.deletion_timestamp.is_none()
                            && !m
                                .owner_references
                                .iter()
                                .flatten()
                                .any(|r| r.controller == Some(true))
                            && !matches!(
                                (r.gk.group.as_str(), r.gk.kind.as_str(), name),
                                ("", "ServiceAccount", "default")
                                    | ("", "ConfigMap", "kube-root-ca.crt")
                            )
                    })
                    .map(|o| format!("{} {}", r.gk, o.metadata.name.as_deref().unwrap_or(""))),
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 405 => None,
                Err(e) => Some(format!("{} (which could not be listed: {e})", r.gk)),
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let mut found: Vec<String> = found.into_iter().flatten().collect();
    found.sort();
    let first = found.first()?;
    Some(DeleteOutcome::Kept {
        reason: format!("it still holds objects, such as {first}"),
    })
}

/// The set's live parent and members, for `kgc delete`: a prepared run with an empty source.
pub async fn prepare_delete(
    cluster: &ApiServer,
    identity: &Identity,
    namespace: &str,
    options: &Options,
) -> Result<Prepared, Error> {
    let mut options = options.clone();
    options.guards.allow_empty = true;
    prepare(cluster, Vec::new(), identity, namespace, &options).await
}

/// Deletes the set's parent, last, once `kgc delete` left no member (in a dry run: says it
/// would). When the set had the parent's namespace, `report` says that namespace was deleted
/// just before, with the parent still in it: the parent goes with it (the namespace
/// controller deletes what a terminating namespace holds), so it is not deleted twice.
pub async fn delete_parent(
    cluster: &ApiServer,
    prepared: &Prepared,
    report: &Report,
    dry_run: bool,
) -> Result<DeleteOutcome, Error> {
    let with_namespace = report
        .deleted
        .iter()
        .find_map(|(k, o)| (k.gk.is_namespace() && k.name == prepared.namespace).then_some(o));
    match with_namespace {
        Some(o @ (DeleteOutcome::Gone | DeleteOutcome::WouldDelete)) => return Ok(o.clone()),
        Some(DeleteOutcome::Deleted | DeleteOutcome::Waiting { .. }) => {
            return Ok(DeleteOutcome::Deleted);
        }
        _ => {}
    }
    let cm = Resource {
        gk: GroupKind::new("", "ConfigMap"),
        version: "v1".into(),
        plural: "configmaps".into(),
        namespaced: true,
    };
    let name = prepared.identity.parent_name();
    let Some(parent) = cluster.get(&cm, &prepared.namespace, &name).await? else {
        return Ok(DeleteOutcome::NotFound);
    };
    // Only the parent that was read, and only while it is still kgc's.
    Inventory::from_parent(&parent, &prepared.set_id)?;
    if dry_run {
        return Ok(DeleteOutcome::WouldDelete);
    }
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(str_at(&parent, "/metadata/uid").to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match cluster
        .api(&cm, &prepared.namespace)
        .delete(&name, &dp)
        .await
    {
        Ok(_) => Ok(DeleteOutcome::Deleted),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(DeleteOutcome::NotFound),
        Err(e) => Err(kube_err("deleting the set's parent")(e)),
    }
}
