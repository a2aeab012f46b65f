//! The CRD finalizer (apiextensions-apiserver `pkg/controller/finalizer/crd_finalizer.go`): a
//! deleted CustomResourceDefinition keeps the `customresourcecleanup.apiextensions.k8s.io`
//! finalizer until every one of its custom resources is gone. The controller deletes them (one
//! collection DELETE across namespaces; their watchers see them go, so the owner-reference GC
//! cascades), reports progress in the CRD's `Terminating` condition, and removes the finalizer
//! once none remain.

use std::sync::Arc;
use std::time::Duration;

use kgc_client::Cluster;
use kgc_meta::crd::{self, CLEANUP_FINALIZER};
use kgc_meta::{DeleteOptions, PropagationPolicy, Reason, ResourceInfo};
use kgc_runtime::informer::View;
use serde_json::Value;

use kgc_meta::time::format_time;

use kgc_runtime::{Context, run_by_name};

use crate::{Error, Result};

/// The name `--controllers` knows it by.
pub const NAME: &str = "crd-cleanup";
/// Upstream runs five workers.
const WORKERS: usize = 5;

/// What the controller keeps of a CRD: only those waiting for their cleanup.
#[derive(Debug, Clone, PartialEq)]
struct Cleanup;

impl View for Cleanup {
    fn view(obj: &Value) -> Option<Self> {
        let m = &obj["metadata"];
        let pending = m["finalizers"]
            .as_array()
            .is_some_and(|fs| fs.iter().any(|f| f == CLEANUP_FINALIZER));
        (m["deletionTimestamp"].is_string() && pending).then_some(Cleanup)
    }
}

/// Runs the controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let sync = async |ctx: Context<C>, crds: Arc<ResourceInfo>, name: String| {
        sync(&ctx, &crds, &name).await
    };
    let crds = ("apiextensions.k8s.io", "customresourcedefinitions");
    run_by_name::<C, Cleanup, _, _, _>(ctx, NAME, crds, WORKERS, sync).await;
}

/// One pass over a deleted CRD (upstream `CRDFinalizer.sync`).
async fn sync<C: Cluster>(
    ctx: &Context<C>,
    crds: &ResourceInfo,
    name: &str,
) -> Result<Option<Duration>> {
    let Some(mut live) = ctx.cluster().get_object(crds, "", name).await? else {
        return Ok(None);
    };
    if Cleanup::view(&live).is_none() {
        return Ok(None);
    }
    let uid = live["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let gr = crd::group_resource(&live);
    let served = ctx
        .cluster()
        .resources()
        .await?
        .into_iter()
        .find(|r| r.custom && r.group_resource() == gr);
    let remaining = match served {
        // Never served (not established): it has no objects.
        None => 0,
        Some(info) => {
            let background = DeleteOptions {
                propagation_policy: Some(PropagationPolicy::Background),
                ..DeleteOptions::default()
            };
            ctx.cluster()
                .delete_collection(&info, "", &background)
                .await?;
            ctx.cluster().list(&info, "").await?.len()
        }
    };
    let now = format_time(ctx.clock.now());
    if remaining > 0 {
        crd::set_terminating(
            &mut live,
            "InstanceDeletionCheck",
            &format!("could not confirm zero CustomResources remaining: {remaining} remain"),
            &now,
        );
        write_status(ctx, crds, name, live).await?;
        return Err(Error::Remaining(format!(
            "{remaining} objects of {gr} remain after their deletion"
        )));
    }
    crd::set_terminating(
        &mut live,
        "InstanceDeletionCompleted",
        "removed all instances",
        &now,
    );
    write_status(ctx, crds, name, live).await?;
    match ctx
        .cluster()
        .remove_finalizer(crds, "", name, &uid, CLEANUP_FINALIZER)
        .await
    {
        Ok(()) => {
            tracing::info!(controller = NAME, crd = %name, "instances removed; finalizer released");
            Ok(None)
        }
        Err(e) if e.is(Reason::NotFound) || e.is(Reason::Conflict) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Writes the CRD's status; a CRD gone or changed meanwhile is left to the next pass.
async fn write_status<C: Cluster>(
    ctx: &Context<C>,
    crds: &ResourceInfo,
    name: &str,
    crd: Value,
) -> Result<()> {
    match ctx.cluster().replace_status(crds, "", name, crd).await {
        Err(e) if e.is(Reason::NotFound) || e.is(Reason::Conflict) => Ok(()),
        other => other.map(|_| ()).map_err(Error::from),
    }
}
