//! Volume reclaim (upstream `pkg/controller/volume/persistentvolume/pv_controller.go`,
//! `isVolumeReleased`, `reclaimVolume`, `deleteVolumeOperation`): a PersistentVolume bound to a
//! claim (`spec.claimRef` with a uid) whose claim is gone, was replaced (another uid) or is bound
//! to another volume becomes `Released`; then its reclaim policy decides:
//!
//! - `Retain`: it stays Released;
//! - `Recycle`: deprecated upstream; kgc treats it as Retain and records a Warning event;
//! - `Delete`: the backing volume is removed through a [`Deleter`] and the PV is deleted (uid
//!   precondition); a volume no deleter handles is left to its external provisioner; a failed
//!   delete marks the PV `Failed` with a `VolumeFailedDelete` event and is retried every pass;
//! - anything else: `Failed` with a `VolumeUnknownReclaimPolicy` event.
//!
//! A volume annotated `pv.kubernetes.io/migrated-to` belongs to a CSI driver and is left alone.
//! A claim missing from the cache is confirmed missing by a live GET before its volume is
//! released.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kgc_client::Cluster;
use kgc_meta::{ObjectRef, ResourceInfo};
use serde_json::Value;
use tokio::sync::Notify;

use crate::{Metrics, Result, Target};
use kgc_runtime::Context;
use kgc_runtime::events::{Collector, Recorder, WARNING, object_reference};
use kgc_runtime::informer::{Cache, Key, View, describe};

const COLLECTOR: &str = "pv";
/// The in-tree controller's finalizer (KEP-2644, HonorPVReclaimPolicy).
const PV_CONTROLLER_FINALIZER: &str = "kubernetes.io/pv-controller";

/// Settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Resync period (upstream's PV controller resyncs every 15 s); changes trigger a pass at
    /// once.
    pub period: Duration,
    /// The only directory under which the host-path deleter removes volumes; `None`: none.
    pub host_path_root: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            period: Duration::from_secs(15),
            host_path_root: None,
        }
    }
}

/// Removes the storage behind a PersistentVolume whose policy is `Delete`.
pub trait Deleter: Send + Sync + 'static {
    /// `Ok(false)`: this deleter does not handle the volume (another provisioner does).
    /// Blocking is allowed: it runs on a blocking thread.
    fn delete(&self, pv: &Value) -> Result<bool, String>;
}

/// Deletes `spec.hostPath.path` volumes, only inside one root directory.
#[derive(Debug, Clone)]
pub struct HostPathDeleter {
    root: Option<PathBuf>,
}

impl HostPathDeleter {
    pub fn new(root: Option<PathBuf>) -> Self {
        Self { root }
    }

    /// Removes `path` (a directory tree or a file) if, and only if, it lies strictly inside
    /// the root once every symbolic link is resolved, and is not itself a symbolic link. A path
    /// already gone is done.
    pub fn delete_path(&self, path: &str) -> Result<(), String> {
        let root = self
            .root
            .as_ref()
            .ok_or("no --pv-host-path-root is configured, so kgc deletes no host-path volume")?;
        let root = root
            .canonicalize()
            .map_err(|e| format!("the host-path root {}: {e}", root.display()))?;
        let p = Path::new(path);
        if !p.is_absolute() || p.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(format!("{path:?} is not an absolute path without '..'"));
        }
        let outside = || format!("{path:?} is outside the host-path root {}", root.display());
        match std::fs::symlink_metadata(p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Gone already; still refuse to call a path outside the root done.
                let parent = p.parent().and_then(|d| d.canonicalize().ok());
                match parent {
                    Some(d) if d.starts_with(&root) => Ok(()),
                    None if p.starts_with(&root) => Ok(()),
                    _ => Err(outside()),
                }
            }
            Err(e) => Err(format!("{path:?}: {e}")),
            Ok(m) if m.file_type().is_symlink() => Err(format!(
                "{path:?} is a symbolic link; kgc does not follow it"
            )),
            Ok(m) => {
                let real = p.canonicalize().map_err(|e| format!("{path:?}: {e}"))?;
                if real == root || !real.starts_with(&root) {
                    return Err(outside());
                }
                let removed = if m.is_dir() {
                    std::fs::remove_dir_all(&real)
                } else {
                    std::fs::remove_file(&real)
                };
                removed.map_err(|e| format!("removing {}: {e}", real.display()))
            }
        }
    }
}

impl Deleter for HostPathDeleter {
    fn delete(&self, pv: &Value) -> Result<bool, String> {
        match pv["spec"]["hostPath"]["path"].as_str() {
            Some(path) => self.delete_path(path).map(|()| true),
            None => Ok(false),
        }
    }
}

/// What the collector keeps of a claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub uid: String,
    pub volume_name: String,
}

impl View for Claim {
    fn view(obj: &Value) -> Option<Self> {
        Some(Claim {
            uid: obj["metadata"]["uid"].as_str()?.to_owned(),
            volume_name: obj["spec"]["volumeName"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        })
    }
}

/// The claim a volume is bound to: `(namespace, name)` and uid; `None` if unbound or only
/// pre-bound (no uid).
pub fn bound_claim(pv: &Value) -> Option<(Key, String)> {
    let r = &pv["spec"]["claimRef"];
    let uid = r["uid"].as_str().filter(|u| !u.is_empty())?;
    let key = (
        r["namespace"].as_str().unwrap_or_default().to_owned(),
        r["name"].as_str().unwrap_or_default().to_owned(),
    );
    Some((key, uid.to_owned()))
}

/// Upstream `isVolumeReleased`, given the claim as found (`None`: confirmed missing).
pub fn is_released(pv: &Value, claim: Option<&Claim>) -> bool {
    let Some((_, uid)) = bound_claim(pv) else {
        return false;
    };
    match claim {
        None => true,
        Some(c) if c.uid != uid => true,
        Some(c) => {
            let name = pv["metadata"]["name"].as_str().unwrap_or_default();
            !c.volume_name.is_empty() && c.volume_name != name
        }
    }
}

/// What to do with a released volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reclaim {
    /// A CSI driver owns it (`pv.kubernetes.io/migrated-to`).
    Migrated,
    Retain,
    /// Deprecated upstream; retained with a Warning event.
    Recycle,
    Delete,
    Unknown(String),
}

/// Upstream `reclaimVolume`'s choice.
pub fn reclaim(pv: &Value) -> Reclaim {
    if !pv["metadata"]["annotations"]["pv.kubernetes.io/migrated-to"].is_null() {
        return Reclaim::Migrated;
    }
    match pv["spec"]["persistentVolumeReclaimPolicy"].as_str() {
        Some("Retain") => Reclaim::Retain,
        Some("Recycle") => Reclaim::Recycle,
        Some("Delete") => Reclaim::Delete,
        other => Reclaim::Unknown(other.unwrap_or_default().to_owned()),
    }
}

struct Volumes<C> {
    ctx: Context<C>,
    metrics: Arc<Metrics>,
    pvs_resource: Arc<ResourceInfo>,
    pvcs_resource: Arc<ResourceInfo>,
    pvs: Cache<Value>,
    pvcs: Cache<Claim>,
    deleter: Arc<dyn Deleter>,
}

impl<C: Cluster> Volumes<C> {
    async fn pass(&self) {
        self.metrics.pass(COLLECTOR);
        let bound: Vec<Value> = self.pvs.read(|m| {
            m.values()
                .filter(|pv| bound_claim(pv).is_some())
                .cloned()
                .collect()
        });
        for pv in bound {
            if let Err(e) = self.sync(pv).await {
                tracing::warn!(collector = COLLECTOR, error = %e, "retrying next pass");
            }
        }
    }

    async fn sync(&self, mut pv: Value) -> Result<()> {
        let Some((claim_key, _)) = bound_claim(&pv) else {
            return Ok(());
        };
        let mut claim = self.pvcs.get(&claim_key);
        if claim.is_none() {
            // Not in the cache: ask the cluster before releasing anything.
            claim = self
                .ctx
                .cluster()
                .get_object(&self.pvcs_resource, &claim_key.0, &claim_key.1)
                .await?
                .and_then(|o| Claim::view(&o));
        }
        if !is_released(&pv, claim.as_ref()) {
            return Ok(());
        }
        let name = pv["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let uid = pv["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let phase = pv["status"]["phase"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let newly_released = phase != "Released" && phase != "Failed";
        if newly_released {
            pv = self.set_phase(pv, "Released", "").await?;
            tracing::info!(collector = COLLECTOR, pv = %name, claim = %describe(&claim_key), "released: its claim is gone");
        }
        match reclaim(&pv) {
            Reclaim::Migrated | Reclaim::Retain => Ok(()),
            Reclaim::Recycle => {
                if newly_released {
                    self.event(&pv, "VolumeRecycleUnsupported",
                        "Recycle is deprecated and kgc does not scrub volumes: the volume is retained").await;
                }
                Ok(())
            }
            Reclaim::Unknown(policy) => {
                if phase != "Failed" {
                    let msg =
                        format!("Volume has unrecognized PersistentVolumeReclaimPolicy {policy:?}");
                    self.set_phase(pv.clone(), "Failed", &msg).await?;
                    self.event(&pv, "VolumeUnknownReclaimPolicy", &msg).await;
                }
                Ok(())
            }
            Reclaim::Delete => self.delete(pv, &name, &uid, &phase).await,
        }
    }

    async fn delete(&self, pv: Value, name: &str, uid: &str, phase: &str) -> Result<()> {
        let deleter = Arc::clone(&self.deleter);
        let copy = pv.clone();
        let outcome = tokio::task::spawn_blocking(move || deleter.delete(&copy))
            .await
            .unwrap_or_else(|e| Err(format!("the deleter panicked: {e}")));
        match outcome {
            Ok(false) => {
                tracing::debug!(collector = COLLECTOR, pv = %name, "no deleter for this volume; left to its provisioner");
                Ok(())
            }
            Ok(true) => {
                if pv["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|f| f.iter().any(|x| x == PV_CONTROLLER_FINALIZER))
                {
                    self.ctx
                        .cluster()
                        .remove_finalizer(
                            &self.pvs_resource,
                            "",
                            name,
                            uid,
                            PV_CONTROLLER_FINALIZER,
                        )
                        .await?;
                }
                let target = Target::cluster(&self.pvs_resource, name, uid);
                let options = kgc_meta::DeleteOptions::default();
                let reason = (COLLECTOR, "reclaimed");
                crate::delete(&self.ctx, &self.metrics, reason, target, options).await?;
                Ok(())
            }
            Err(reason) => {
                self.metrics.error(COLLECTOR, "delete-volume");
                tracing::warn!(collector = COLLECTOR, pv = %name, error = %reason, "deleting the volume failed");
                if phase != "Failed" {
                    self.set_phase(pv.clone(), "Failed", &reason).await?;
                    self.event(&pv, "VolumeFailedDelete", &reason).await;
                }
                Ok(())
            }
        }
    }

    async fn set_phase(&self, mut pv: Value, phase: &str, message: &str) -> Result<Value> {
        let name = pv["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if !pv["status"].is_object() {
            pv["status"] = serde_json::json!({});
        }
        pv["status"]["phase"] = phase.into();
        if message.is_empty() {
            if let Some(s) = pv["status"].as_object_mut() {
                s.remove("message");
            }
        } else {
            pv["status"]["message"] = message.into();
        }
        Ok(self
            .ctx
            .cluster()
            .replace_status(&self.pvs_resource, "", &name, pv)
            .await?)
    }

    async fn event(&self, pv: &Value, reason: &str, message: &str) {
        let involved = ObjectRef {
            api_version: "v1".into(),
            kind: "PersistentVolume".into(),
            namespace: String::new(),
            name: pv["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            uid: pv["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        };
        let recorder = Recorder::new(
            Collector(self.ctx.cluster().clone()),
            "persistentvolume-controller",
            self.ctx.clock,
        );
        let written = recorder
            .write(
                object_reference(&involved),
                WARNING,
                reason,
                message.to_owned(),
            )
            .await;
        if let Err(e) = written {
            tracing::debug!(collector = COLLECTOR, error = %e, "recording an event failed");
        }
    }
}

/// Runs volume reclaim until dropped: a pass on every PV or claim change, and every period.
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config, metrics: Arc<Metrics>) {
    let deleter: Arc<dyn Deleter> = Arc::new(HostPathDeleter::new(config.host_path_root.clone()));
    run_with(ctx, config, metrics, deleter).await;
}

/// [`run`] with another [`Deleter`].
pub async fn run_with<C: Cluster>(
    ctx: Context<C>,
    config: Config,
    metrics: Arc<Metrics>,
    deleter: Arc<dyn Deleter>,
) {
    let pvs_resource = ctx.informers.resource("", "persistentvolumes").await;
    let pvcs_resource = ctx.informers.resource("", "persistentvolumeclaims").await;
    let changed = Arc::new(Notify::new());
    let (a, b) = (Arc::clone(&changed), Arc::clone(&changed));
    let pvs = ctx.informers.cache::<Value>(Arc::clone(&pvs_resource));
    pvs.on_change(Arc::new(move |_: &Key, _: Option<&Value>| a.notify_one()));
    let pvcs = ctx.informers.cache::<Claim>(Arc::clone(&pvcs_resource));
    pvcs.on_change(Arc::new(move |_: &Key, _: Option<&Claim>| b.notify_one()));
    pvs.synced().await;
    pvcs.synced().await;
    tracing::info!(collector = COLLECTOR, root = ?config.host_path_root, "started");
    let v = Volumes {
        ctx,
        metrics,
        pvs_resource,
        pvcs_resource,
        pvs,
        pvcs,
        deleter,
    };
    loop {
        v.pass().await;
        tokio::select! {
            _ = changed.notified() => {}
            _ = tokio::time::sleep(config.period) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(claim_uid: &str) -> Value {
        json!({"metadata": {"name": "pv1", "uid": "pvu"},
               "spec": {"claimRef": {"namespace": "ns", "name": "claim", "uid": claim_uid},
                        "persistentVolumeReclaimPolicy": "Delete", "hostPath": {"path": "/x"}},
               "status": {"phase": "Bound"}})
    }

    #[test]
    fn released_when_the_claim_is_gone_replaced_or_bound_elsewhere() {
        let c = |uid: &str, vol: &str| Claim {
            uid: uid.into(),
            volume_name: vol.into(),
        };
        assert!(is_released(&pv("u1"), None));
        assert!(is_released(&pv("u1"), Some(&c("u2", "pv1"))));
        assert!(is_released(&pv("u1"), Some(&c("u1", "other"))));
        assert!(!is_released(&pv("u1"), Some(&c("u1", "pv1"))));
        assert!(!is_released(&pv("u1"), Some(&c("u1", ""))));
        // Pre-bound (no uid) or unbound volumes are never released.
        assert!(!is_released(&pv(""), None));
        assert!(!is_released(&json!({"metadata": {"name": "pv"}}), None));
    }

    #[test]
    fn the_reclaim_policy_decides() {
        let mut v = pv("u");
        assert_eq!(reclaim(&v), Reclaim::Delete);
        v["spec"]["persistentVolumeReclaimPolicy"] = json!("Recycle");
        assert_eq!(reclaim(&v), Reclaim::Recycle);
        v["spec"]["persistentVolumeReclaimPolicy"] = json!("Shred");
        assert_eq!(reclaim(&v), Reclaim::Unknown("Shred".into()));
        v["metadata"]["annotations"] = json!({"pv.kubernetes.io/migrated-to": "csi.example.com"});
        assert_eq!(reclaim(&v), Reclaim::Migrated);
    }

    #[test]
    fn the_host_path_deleter_stays_inside_its_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("vol/sub")).unwrap();
        std::fs::write(root.join("vol/sub/data"), "x").unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("precious"), "x").unwrap();
        let d = HostPathDeleter::new(Some(root.clone()));
        let s = |p: &Path| p.to_str().unwrap().to_owned();

        // Outside, the root itself, '..', relative: refused, nothing removed.
        assert!(d.delete_path(&s(&outside)).unwrap_err().contains("outside"));
        assert!(d.delete_path(&s(&root)).unwrap_err().contains("outside"));
        assert!(d.delete_path(&format!("{}/../outside", s(&root))).is_err());
        assert!(d.delete_path("relative/vol").is_err());
        // A symbolic link in the root pointing out, as the volume or as an ancestor.
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        assert!(
            d.delete_path(&s(&root.join("link")))
                .unwrap_err()
                .contains("symbolic link")
        );
        assert!(
            d.delete_path(&s(&root.join("link/precious")))
                .unwrap_err()
                .contains("outside")
        );
        assert!(outside.join("precious").exists());
        // No root configured: nothing is deleted.
        assert!(
            HostPathDeleter::new(None)
                .delete_path(&s(&root.join("vol")))
                .is_err()
        );
        // Inside: removed; removing again is done.
        d.delete_path(&s(&root.join("vol"))).unwrap();
        assert!(!root.join("vol").exists());
        d.delete_path(&s(&root.join("vol"))).unwrap();
        assert!(root.exists());
        // A volume without hostPath is not this deleter's.
        assert_eq!(d.delete(&json!({"spec": {"csi": {}}})), Ok(false));
    }
}
