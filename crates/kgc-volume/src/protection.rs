//! Storage object in-use protection: the controllers that let a deleted claim or volume go once
//! nothing uses it (kubernetes `pkg/controller/volume/pvcprotection/
//! pvc_protection_controller.go`, `pkg/controller/volume/pvprotection/
//! pv_protection_controller.go`).
//!
//! The StorageObjectInUseProtection admission plugin gives every new claim
//! `kubernetes.io/pvc-protection` and every new volume `kubernetes.io/pv-protection`; these
//! controllers add them to objects created without it, and remove them from a deleted object:
//!
//! - a claim, once no scheduled pod (`spec.nodeName` set) names it in `spec.volumes[]` —
//!   whatever the pod's phase, as upstream: a pod that ran keeps its volume until it is deleted —
//!   or, for a generic ephemeral volume, once its pod is shut down; the cache is asked first,
//!   then a live list of the namespace's pods confirms, as upstream's `askAPIServer` does;
//! - a volume, once it is not `Bound` (the `pv` collector releases it when its claim goes).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kgc_client::Cluster;
use kgc_runtime::informer::{Cache, Key, View, describe};
use kgc_runtime::{Context, Controller, ObjectKey};
use kube::api::{Api, ListParams, PostParams};
use serde_json::Value;

use crate::binder::{Claim, Volume};
use crate::{PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER, Result, has_finalizer};
use kgc_runtime::informer::Typed;

/// The names `--controllers` knows them by.
pub const PVC_NAME: &str = "pvc-protection";
pub const PV_NAME: &str = "pv-protection";
const MANAGER: &str = "kgc-storage-protection";
const WORKERS: usize = 2;

fn pp() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    }
}

/// Whether the object needs the controller: deleted and still protected, or live and not yet
/// protected (`IsDeletionCandidate`, `NeedToAddFinalizer`).
fn needs_work(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    finalizer: &str,
) -> bool {
    meta.deletion_timestamp.is_some() == has_finalizer(meta, finalizer)
}

/// `meta` with `finalizer` added (live object) or removed (deleted object).
fn toggled(meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, finalizer: &str) {
    let list = meta.finalizers.get_or_insert_default();
    if meta.deletion_timestamp.is_some() {
        list.retain(|f| f != finalizer);
    } else if !list.iter().any(|f| f == finalizer) {
        list.push(finalizer.to_owned());
    }
}

/// What the PVC protection controller keeps of a pod: only pods with claims.
#[derive(Debug, Clone, PartialEq)]
struct PodClaims {
    scheduled: bool,
    /// The claims the pod uses: its `persistentVolumeClaim` volumes, and its generic ephemeral
    /// volumes' claims (`<pod>-<volume>`) until the pod is shut down.
    claims: Vec<String>,
}

impl View for PodClaims {
    fn view(obj: &Value) -> Option<Self> {
        let claims = pod_claims(obj);
        if claims.is_empty() {
            return None;
        }
        Some(PodClaims {
            scheduled: obj["spec"]["nodeName"]
                .as_str()
                .is_some_and(|n| !n.is_empty()),
            claims,
        })
    }
}

/// The claims a pod (JSON) uses, as upstream's `podUsesPVC` sees them.
fn pod_claims(pod: &Value) -> Vec<String> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    // `podIsShutDown`: finally deleted (grace period 0), or force-deleted.
    let shut_down = !pod["metadata"]["deletionTimestamp"].is_null()
        && pod["metadata"]["deletionGracePeriodSeconds"].as_i64() == Some(0);
    let mut claims = Vec::new();
    for v in pod["spec"]["volumes"].as_array().into_iter().flatten() {
        if let Some(c) = v["persistentVolumeClaim"]["claimName"].as_str() {
            claims.push(c.to_owned());
        } else if !v["ephemeral"].is_null() && !shut_down {
            claims.push(format!("{name}-{}", v["name"].as_str().unwrap_or_default()));
        }
    }
    claims
}

/// Runs the PVC protection controller until dropped.
pub async fn run_pvc<C: Cluster>(ctx: Context<C>) {
    let pvcs = ctx.informers.resource("", "persistentvolumeclaims").await;
    let pods = ctx.informers.resource("", "pods").await;
    let claims = ctx.informers.cache::<Claim>(pvcs);
    let users = ctx.informers.cache::<PodClaims>(pods);
    let claim_changed = |key: &Key, c: Option<&Claim>| {
        c.filter(|c| needs_work(&c.0.metadata, PVC_PROTECTION_FINALIZER))
            .map(|_| ObjectKey(key.clone()))
    };
    // A pod that goes takes its view with it: the mapper remembers which claims each pod
    // used, to queue them when it goes (upstream's handler gets the deleted pod).
    let used: Mutex<HashMap<Key, Vec<String>>> = Mutex::default();
    let pod_changed = move |key: &Key, p: Option<&PodClaims>| {
        let mut used = used.lock().unwrap_or_else(PoisonError::into_inner);
        let claims = match p {
            Some(p) => {
                used.insert(key.clone(), p.claims.clone());
                p.claims.clone()
            }
            None => used.remove(key).unwrap_or_default(),
        };
        claims
            .into_iter()
            .map(|c| ObjectKey((key.0.clone(), c)))
            .collect::<Vec<_>>()
    };
    Controller::named(&ctx, PVC_NAME)
        .watches(&claims, claim_changed)
        .watches(&users, pod_changed)
        .run_with(
            WORKERS,
            (ctx.clone(), claims.clone(), users.clone()),
            |(ctx, claims, users), key: ObjectKey| async move {
                sync_claim(&ctx, &claims, &users, &key.0)
                    .await
                    .map(|()| None::<Duration>)
            },
        )
        .await;
}

/// `processPVC`.
async fn sync_claim<C: Cluster>(
    ctx: &Context<C>,
    claims: &Cache<Claim>,
    users: &Cache<PodClaims>,
    key: &Key,
) -> Result<()> {
    let Some(Typed(mut claim)) = claims.get(key) else {
        return Ok(());
    };
    if !needs_work(&claim.metadata, PVC_PROTECTION_FINALIZER) {
        return Ok(());
    }
    let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &key.0);
    if claim.metadata.deletion_timestamp.is_some() && in_use(&ctx.client, users, key).await? {
        tracing::debug!(controller = PVC_NAME, claim = %describe(key), "kept: a pod uses it");
        return Ok(());
    }
    toggled(&mut claim.metadata, PVC_PROTECTION_FINALIZER);
    api.replace(&key.1, &pp(), &claim).await?;
    Ok(())
}

/// `isBeingUsed`: a scheduled pod in the cache names the claim, or, the cache saying no, one in
/// a live list of the namespace's pods does.
async fn in_use(client: &kube::Client, users: &Cache<PodClaims>, key: &Key) -> Result<bool> {
    let cached = users.read(|m| {
        m.iter()
            .any(|(k, p)| k.0 == key.0 && p.scheduled && p.claims.contains(&key.1))
    });
    if cached {
        return Ok(true);
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), &key.0);
    let live = pods.list(&ListParams::default()).await?;
    Ok(live.items.iter().any(|pod| {
        let v = serde_json::to_value(pod).unwrap_or_default();
        PodClaims::view(&v).is_some_and(|p| p.scheduled && p.claims.contains(&key.1))
    }))
}

/// Runs the PV protection controller until dropped.
pub async fn run_pv<C: Cluster>(ctx: Context<C>) {
    let pvs = ctx.informers.resource("", "persistentvolumes").await;
    let volumes = ctx.informers.cache::<Volume>(pvs);
    let volume_changed = |key: &Key, v: Option<&Volume>| {
        v.filter(|v| needs_work(&v.0.metadata, PV_PROTECTION_FINALIZER))
            .map(|_| key.1.clone())
    };
    Controller::named(&ctx, PV_NAME)
        .watches(&volumes, volume_changed)
        .run_with(
            WORKERS,
            (ctx.clone(), volumes.clone()),
            |(ctx, volumes), name: String| async move {
                sync_volume(&ctx, &volumes, &name)
                    .await
                    .map(|()| None::<Duration>)
            },
        )
        .await;
}

/// `processPV`: a deleted volume goes once it is not Bound (`isBeingUsed`).
async fn sync_volume<C: Cluster>(
    ctx: &Context<C>,
    volumes: &Cache<Volume>,
    name: &str,
) -> Result<()> {
    let Some(Typed(mut pv)) = volumes.get(&(String::new(), name.to_owned())) else {
        return Ok(());
    };
    if !needs_work(&pv.metadata, PV_PROTECTION_FINALIZER) {
        return Ok(());
    }
    let bound = pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
    if pv.metadata.deletion_timestamp.is_some() && bound {
        return Ok(());
    }
    toggled(&mut pv.metadata, PV_PROTECTION_FINALIZER);
    let api: Api<PersistentVolume> = Api::all(ctx.client.clone());
    api.replace(name, &pp(), &pv).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_uses_its_claims_and_ephemeral_claims_until_shut_down() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n", "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "c1"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
            {"name": "cfg", "configMap": {"name": "x"}}]}});
        let v = PodClaims::view(&pod).unwrap();
        assert!(v.scheduled);
        assert_eq!(v.claims, ["c1", "p-scratch"]);
        pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        pod["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        assert_eq!(PodClaims::view(&pod).unwrap().claims, ["c1"]);
        pod["spec"]["nodeName"] = json!(null);
        assert!(!PodClaims::view(&pod).unwrap().scheduled);
        assert!(PodClaims::view(&json!({"spec": {"volumes": []}})).is_none());
    }

    #[test]
    fn finalizers_are_added_to_live_objects_and_removed_from_deleted_ones() {
        let mut live = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta::default();
        assert!(needs_work(&live, PVC_PROTECTION_FINALIZER));
        toggled(&mut live, PVC_PROTECTION_FINALIZER);
        assert_eq!(
            live.finalizers.as_deref().unwrap(),
            [PVC_PROTECTION_FINALIZER]
        );
        assert!(!needs_work(&live, PVC_PROTECTION_FINALIZER));
        live.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ));
        assert!(needs_work(&live, PVC_PROTECTION_FINALIZER));
        toggled(&mut live, PVC_PROTECTION_FINALIZER);
        assert!(live.finalizers.as_deref().unwrap().is_empty());
        assert!(!needs_work(&live, PVC_PROTECTION_FINALIZER));
    }
}
