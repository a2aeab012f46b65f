//! The `kgc.io/host-path` provisioner: one directory per claim under the volumes root, and its
//! PersistentVolume (kubernetes-sigs/sig-storage-lib-external-provisioner `controller/
//! controller.go` `shouldProvision`, `provisionClaimOperation`; the directory and the volume as
//! rancher/local-path-provisioner makes them, `provisioner.go`).
//!
//! A claim is provisioned once the binder has handed it over (its `storage-provisioner`
//! annotation names `kgc.io/host-path`) and, for a `WaitForFirstConsumer` class, once the
//! scheduler has chosen a node (`volume.kubernetes.io/selected-node`), which the volume's node
//! affinity then names. The volume is `pvc-<claim uid>`, so a retried provisioning finds its own
//! volume; the directory has the volume's name and is made only inside the volumes root (the
//! root the `pv` collector's deleter is confined to, which removes it on reclaim `Delete`):
//! nothing a user writes becomes part of a path. A claim asking for more than the free space of
//! the root's file system is refused with `ProvisioningFailed` and nothing is created, and so
//! is a claim whose selected node names no Node.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kgc_client::Cluster;
use kgc_meta::quantity::Quantity;
use kgc_runtime::informer::{Cache, Key, describe};
use kgc_runtime::{Context, Controller, ObjectKey};
use kube::api::{Api, PostParams};

use crate::binder::{Claim, Class, Volume};
use crate::{Config, Error, PROVISIONER, Result, annotation, annotations, class};
use kgc_runtime::events::{Recorder, reference};
use kgc_runtime::informer::Typed;

/// The name `--controllers` knows it by.
pub const NAME: &str = "provisioner";
const MANAGER: &str = "kgc-provisioner";
const WORKERS: usize = 2;

struct Provisioner<C> {
    ctx: Context<C>,
    root: Option<PathBuf>,
    claims: Cache<Claim>,
    volumes: Cache<Volume>,
    classes: Cache<Class>,
    nodes: Cache<NodeExists>,
    /// The last failure told each claim (uid), so that retries do not repeat the same event.
    told: Mutex<HashMap<String, String>>,
}

/// That a Node exists, all the provisioner needs to know of one.
#[derive(Debug, Clone, Copy)]
struct NodeExists;

impl kgc_runtime::informer::View for NodeExists {
    fn view(_: &serde_json::Value) -> Option<Self> {
        Some(NodeExists)
    }
}

/// Creates the default class, then provisions claims until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config) {
    let mut backoff = kgc_runtime::backoff::Backoff::reflector();
    while let Err(e) = class::ensure_default(&ctx.client).await {
        tracing::warn!(controller = NAME, error = %e, "creating the default StorageClass failed; retrying");
        tokio::time::sleep(backoff.next_delay()).await;
    }
    let pvcs = ctx.informers.resource("", "persistentvolumeclaims").await;
    let pvs = ctx.informers.resource("", "persistentvolumes").await;
    let scs = ctx
        .informers
        .resource("storage.k8s.io", "storageclasses")
        .await;
    let node_resource = ctx.informers.resource("", "nodes").await;
    let claims = ctx.informers.cache::<Claim>(pvcs);
    let volumes = ctx.informers.cache::<Volume>(pvs);
    let classes = ctx.informers.cache::<Class>(scs);
    let nodes = ctx.informers.cache::<NodeExists>(node_resource);
    let declared = Controller::named(&ctx, NAME)
        .watches(&claims, |key: &Key, c: Option<&Claim>| {
            c.filter(|c| handed_over(&c.0))
                .map(|_| ObjectKey(key.clone()))
        })
        .reads(&volumes)
        .reads(&classes)
        .reads(&nodes);
    tracing::info!(controller = NAME, root = ?config.root, "volumes are provisioned under");
    let p = Arc::new(Provisioner {
        ctx,
        root: config.root,
        claims,
        volumes,
        classes,
        nodes,
        told: Mutex::default(),
    });
    declared
        .run_with(WORKERS, p, |p, key: ObjectKey| async move {
            p.sync(&key.0).await.map(|()| None::<Duration>)
        })
        .await;
}

/// The binder handed the claim to this provisioner, and it has no volume yet.
fn handed_over(claim: &PersistentVolumeClaim) -> bool {
    let ours = [
        annotations::STORAGE_PROVISIONER,
        annotations::BETA_STORAGE_PROVISIONER,
    ]
    .iter()
    .any(|a| annotation(&claim.metadata, a) == Some(PROVISIONER));
    let unbound = claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .is_none_or(str::is_empty);
    ours && unbound && claim.metadata.deletion_timestamp.is_none()
}

/// The volume's name for a claim (`getProvisionedVolumeNameForClaim`): `pvc-<uid>`, when the uid
/// is the API server's (lower-case letters, digits and dashes), so that it is also a safe
/// directory name.
pub fn volume_name(claim: &PersistentVolumeClaim) -> Option<String> {
    let uid = claim.metadata.uid.as_deref()?;
    let safe = !uid.is_empty()
        && uid.len() <= 64
        && uid
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    safe.then(|| format!("pvc-{uid}"))
}

impl<C: Cluster> Provisioner<C> {
    async fn sync(&self, key: &Key) -> Result<()> {
        let Some(Typed(claim)) = self.claims.get(key) else {
            return Ok(());
        };
        if !handed_over(&claim) {
            return Ok(());
        }
        let class_name = crate::matching::claim_class(&claim).to_owned();
        let Some(class) = class::get(&self.classes, &self.ctx.client, &class_name).await? else {
            return self
                .fail(
                    &claim,
                    &class_name,
                    format!("storageclass.storage.k8s.io {class_name:?} not found"),
                )
                .await;
        };
        let node = crate::binder::selected_node(&claim).map(str::to_owned);
        if class::waits_for_first_consumer(&class) && node.is_none() {
            return Ok(());
        }
        if let Some(n) = &node
            && self.nodes.get(&(String::new(), n.clone())).is_none()
        {
            // sig-storage-lib-external-provisioner `provisionClaimOperation`: the selected
            // node is read first, and a claim naming no Node gets no volume.
            let msg = format!("failed to get target node: node {n:?} not found");
            return self.report_failure(&claim, msg).await;
        }
        let Some(name) = volume_name(&claim) else {
            let msg = format!(
                "claim {} has a uid {:?} that is not usable as a volume name",
                describe(key),
                claim.metadata.uid.as_deref().unwrap_or_default()
            );
            return self.fail(&claim, &class_name, msg).await;
        };
        if self.volumes.get(&(String::new(), name.clone())).is_some() {
            return Ok(());
        }
        if self.first_attempt(&claim) {
            let msg = format!(
                "External provisioner is provisioning volume for claim \"{}\"",
                describe(key)
            );
            self.event(&claim, false, "Provisioning", &msg).await;
        }
        let request = match check_claim(&claim) {
            Ok(r) => r,
            Err(why) => return self.fail(&claim, &class_name, why).await,
        };
        let root = self.root.clone();
        let (dir_name, claim_desc, req) = (name.clone(), describe(key), request.clone());
        let made = tokio::task::spawn_blocking(move || {
            make_dir(root.as_deref(), &dir_name, &claim_desc, &req)
        })
        .await
        .unwrap_or_else(|e| Err(format!("making the directory panicked: {e}")));
        let dir = match made {
            Ok(d) => d,
            Err(why) => return self.fail(&claim, &class_name, why).await,
        };
        let pv = volume(&claim, &class, &name, &dir, node.as_deref(), request);
        let volumes: Api<PersistentVolume> = Api::all(self.ctx.client.clone());
        let pp = PostParams {
            field_manager: Some(MANAGER.to_owned()),
            ..PostParams::default()
        };
        match volumes.create(&pp, &pv).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
            Err(e) => {
                if let Err(rm) = std::fs::remove_dir(&dir) {
                    tracing::warn!(controller = NAME, dir = %dir.display(), error = %rm, "removing the directory of a volume not created failed");
                }
                let why = format!("creating the PersistentVolume {name}: {e}");
                return self.fail(&claim, &class_name, why).await;
            }
        }
        self.told
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(claim.metadata.uid.as_deref().unwrap_or_default());
        tracing::info!(controller = NAME, claim = %describe(key), volume = %name, dir = %dir.display(), "provisioned");
        let msg = format!("Successfully provisioned volume {name}");
        self.event(&claim, false, "ProvisioningSucceeded", &msg)
            .await;
        Ok(())
    }

    /// Whether this is the first attempt at the claim since the last success or failure
    /// reported.
    fn first_attempt(&self, claim: &PersistentVolumeClaim) -> bool {
        !self
            .told
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(claim.metadata.uid.as_deref().unwrap_or_default())
    }

    /// `ProvisioningFailed` (once per distinct reason), and a retry with back-off.
    async fn fail(&self, claim: &PersistentVolumeClaim, class: &str, why: String) -> Result<()> {
        let msg = format!("failed to provision volume with StorageClass {class:?}: {why}");
        self.report_failure(claim, msg).await
    }

    /// `ProvisioningFailed` with `msg` (once per distinct message), and a retry with back-off.
    async fn report_failure(&self, claim: &PersistentVolumeClaim, msg: String) -> Result<()> {
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        let live: HashSet<String> = self.claims.read(|m| {
            m.values()
                .filter_map(|c| c.0.metadata.uid.clone())
                .collect()
        });
        let new = {
            let mut told = self.told.lock().unwrap_or_else(PoisonError::into_inner);
            // Forget the claims that went while failing.
            told.retain(|u, _| live.contains(u));
            told.insert(uid, msg.clone())
                .is_none_or(|before| before != msg)
        };
        if new {
            self.event(claim, true, "ProvisioningFailed", &msg).await;
        }
        Err(Error::Invalid(msg))
    }

    async fn event(&self, claim: &PersistentVolumeClaim, warning: bool, reason: &str, msg: &str) {
        let recorder = Recorder::new(self.ctx.client.clone(), PROVISIONER, self.ctx.clock);
        if warning {
            recorder.warning(reference(claim), reason, msg.to_owned());
        } else {
            recorder.normal(reference(claim), reason, msg.to_owned());
        }
    }
}

/// What a host-path volume cannot give (rancher/local-path-provisioner refuses the same): a
/// selector, or access from several nodes. The requested size otherwise.
fn check_claim(claim: &PersistentVolumeClaim) -> Result<Quantity, String> {
    let spec = claim.spec.clone().unwrap_or_default();
    if spec.selector.is_some() {
        return Err("claim.Spec.Selector is not supported".into());
    }
    for mode in spec.access_modes.iter().flatten() {
        if mode != "ReadWriteOnce" && mode != "ReadWriteOncePod" {
            return Err(format!(
                "spec.accessModes: {mode} is not supported: a host-path volume is on one node (ReadWriteOnce, ReadWriteOncePod)"
            ));
        }
    }
    crate::matching::requested(claim)
}

/// Makes the volume's directory `name` directly under `root` (created if missing), after
/// checking the file system has room for `request`; an existing directory of that name (an
/// earlier attempt's) is reused, anything else there is refused. Returns the directory, symbolic
/// links of the root resolved.
pub fn make_dir(
    root: Option<&Path>,
    name: &str,
    claim: &str,
    request: &Quantity,
) -> Result<PathBuf, String> {
    let root = root.ok_or("no volumes root is configured (--pv-host-path-root), so kgc provisions no host-path volume")?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(format!("{name:?} is not a safe directory name"));
    }
    std::fs::create_dir_all(root)
        .map_err(|e| format!("the volumes root {}: {e}", root.display()))?;
    let root = root
        .canonicalize()
        .map_err(|e| format!("the volumes root {}: {e}", root.display()))?;
    let st = rustix::fs::statvfs(&root)
        .map_err(|e| format!("the volumes root {}: {e}", root.display()))?;
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    let free_q = Quantity::parse(&free.to_string()).map_err(|e| e.to_string())?;
    if *request > free_q {
        return Err(format!(
            "claim {claim} requests {request} of storage, more than the {} free in the volumes root {}",
            human(free),
            root.display()
        ));
    }
    let dir = root.join(name);
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => return Ok(dir),
        Ok(_) => return Err(format!("{} exists and is not a directory", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    std::fs::create_dir(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // As local-path-provisioner's `mkdir -m 0777`: any pod's user may write its volume.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// Bytes in the binary unit a person reads (`37.2Gi`).
fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes}")
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

/// The PersistentVolume of a provisioned claim: the directory as a `hostPath`, the claim's
/// request as capacity, its access and volume modes, the class's reclaim policy and mount
/// options, the claim as `claimRef` (with its uid, so the binder binds exactly this claim), and
/// the selected node as required node affinity.
fn volume(
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    name: &str,
    dir: &Path,
    node: Option<&str>,
    request: Quantity,
) -> PersistentVolume {
    let spec = claim.spec.clone().unwrap_or_default();
    let node_affinity = node.map(|n| VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: "kubernetes.io/hostname".into(),
                    operator: "In".into(),
                    values: Some(vec![n.to_owned()]),
                }]),
                match_fields: None,
            }],
        }),
    });
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            annotations: Some(BTreeMap::from([(
                annotations::PROVISIONED_BY.to_owned(),
                PROVISIONER.to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(BTreeMap::from([(
                "storage".to_owned(),
                Q(request.to_string()),
            )])),
            access_modes: spec.access_modes,
            volume_mode: spec.volume_mode,
            persistent_volume_reclaim_policy: Some(class::reclaim_policy(class)),
            storage_class_name: class.metadata.name.clone(),
            mount_options: class.mount_options.clone(),
            claim_ref: Some(reference(claim)),
            host_path: Some(HostPathVolumeSource {
                path: dir.to_string_lossy().into_owned(),
                type_: Some("DirectoryOrCreate".into()),
            }),
            node_affinity,
            ..PersistentVolumeSpec::default()
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(uid: &str) -> PersistentVolumeClaim {
        let mut c = PersistentVolumeClaim::default();
        c.metadata.uid = Some(uid.into());
        c
    }

    #[test]
    fn volume_names_come_from_the_uid_only_when_it_is_safe() {
        let uid = "0b5c3a4e-9f1d-4e7a-8c2b-1d2e3f4a5b6c";
        assert_eq!(volume_name(&claim(uid)).unwrap(), format!("pvc-{uid}"));
        assert_eq!(volume_name(&claim("../../etc")), None);
        assert_eq!(volume_name(&claim("a/b")), None);
        assert_eq!(volume_name(&claim("")), None);
        assert_eq!(volume_name(&PersistentVolumeClaim::default()), None);
    }

    #[test]
    fn directories_are_made_inside_the_root_only_when_there_is_room() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("volumes");
        let small = Quantity::parse("1Mi").unwrap();
        let d = make_dir(Some(&root), "pvc-1", "ns/c", &small).unwrap();
        assert_eq!(d, root.canonicalize().unwrap().join("pvc-1"));
        assert!(d.is_dir());
        // Again: the same directory.
        assert_eq!(make_dir(Some(&root), "pvc-1", "ns/c", &small).unwrap(), d);
        let huge = Quantity::parse("1Ei").unwrap();
        let e = make_dir(Some(&root), "pvc-2", "ns/big", &huge).unwrap_err();
        assert!(
            e.contains("claim ns/big requests 1Ei of storage, more than the"),
            "{e}"
        );
        assert!(!root.join("pvc-2").exists());
        assert!(make_dir(Some(&root), "../x", "ns/c", &small).is_err());
        assert!(
            make_dir(None, "pvc-3", "ns/c", &small)
                .unwrap_err()
                .contains("no volumes root")
        );
        std::fs::write(root.join("pvc-4"), "x").unwrap();
        assert!(
            make_dir(Some(&root), "pvc-4", "ns/c", &small)
                .unwrap_err()
                .contains("not a directory")
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(512), "512");
        assert_eq!(human(3 << 30), "3.0Gi");
        assert_eq!(human(1536 << 20), "1.5Gi");
    }
}
