//! Volumes in `kgc serve`: what turns a PersistentVolumeClaim into a bound, backed volume, and
//! what keeps claims and volumes in use from going away:
//!
//! - [`class`]: the default StorageClass `standard` (provisioner `kgc.io/host-path`), created at
//!   start-up when absent;
//! - [`matching`]: which pre-created volume a claim binds to (kubernetes
//!   `staging/src/k8s.io/component-helpers/storage/volume/pv_helpers.go` `FindMatchingVolume`);
//! - [`binder`]: the PV controller's binding (`pkg/controller/volume/persistentvolume/
//!   pv_controller.go` `syncClaim`, `syncVolume`), controller `persistentvolume-binder`;
//! - [`provisioner`]: the `kgc.io/host-path` provisioner, one directory per claim under the
//!   volumes root (sig-storage-lib-external-provisioner `controller/controller.go`), controller
//!   `provisioner`;
//! - [`protection`]: the `pvc-protection` and `pv-protection` controllers
//!   (`pkg/controller/volume/pvcprotection`, `pvprotection`).
//!
//! Releasing a volume whose claim is gone and reclaiming it (`Delete`, `Retain`) is the `pv`
//! collector's (kgc-lifecycle `volume`), confined to the same volumes root; the binder leaves
//! those volumes to it.
#![forbid(unsafe_code)]

pub mod binder;
pub mod class;
pub mod matching;
pub mod protection;
pub mod provisioner;

use std::path::PathBuf;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The provisioner name of kgc's host-path volumes.
pub const PROVISIONER: &str = "kgc.io/host-path";

/// The annotations of binding and provisioning (kubernetes
/// `staging/src/k8s.io/component-helpers/storage/volume/pv_helpers.go`).
pub mod annotations {
    pub const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
    pub const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
    pub const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
    pub const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
    pub const STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
    pub const BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
    pub const IS_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
    pub const BETA_IS_DEFAULT_CLASS: &str = "storageclass.beta.kubernetes.io/is-default-class";
}

/// The finalizers of storage object in-use protection (kubernetes `pkg/volume/util/
/// finalizer.go`).
pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

/// Errors of a sync; the key is retried with back-off.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Settings.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Where the provisioner creates volumes (`kgc serve`: `DATA_DIR/volumes`); `None`: it
    /// provisions nothing and says so on each claim.
    pub root: Option<PathBuf>,
}

/// An annotation of `meta`, if set.
pub(crate) fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

pub(crate) fn has_finalizer(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}
