//! The storage admission plugins, both on by default as in kube-apiserver:
//!
//! - **DefaultStorageClass** (kubernetes/kubernetes `plugin/pkg/admission/storage/storageclass/
//!   setdefault/admission.go`): a new PersistentVolumeClaim that names no class (neither
//!   `spec.storageClassName` nor the beta annotation; an explicit `""` is a choice and is kept)
//!   gets the default class. With several classes marked default the newest wins, then the first
//!   by name (`pkg/volume/util/storageclass.go` `GetDefaultClass`); with none, the claim is left
//!   as it is.
//! - **StorageObjectInUseProtection** (`plugin/pkg/admission/storage/storageobjectinuseprotection/
//!   admission.go`): a new claim gets the finalizer `kubernetes.io/pvc-protection`, a new volume
//!   `kubernetes.io/pv-protection`, which the protection controllers remove once nothing uses
//!   the object.
//!
//! Both act on creation only, of the main resource (not a subresource).

use kgc_meta::{GroupResource, ResourceInfo, Status};
use serde_json::Value;

use crate::request::RequestInfo;

/// The plugins' names, as `--disable-admission-plugins` takes them.
pub const DEFAULT_STORAGE_CLASS: &str = "DefaultStorageClass";
pub const STORAGE_OBJECT_IN_USE_PROTECTION: &str = "StorageObjectInUseProtection";

const IS_DEFAULT_CLASS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];
const BETA_CLAIM_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// Which of the plugins run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoragePlugins {
    pub default_class: bool,
    pub in_use_protection: bool,
}

impl Default for StoragePlugins {
    fn default() -> Self {
        Self {
            default_class: true,
            in_use_protection: true,
        }
    }
}

impl crate::ApiServer {
    /// Turns off a storage admission plugin by name; other names are not this module's.
    pub fn without_storage_admission_plugin(mut self, name: &str) -> Self {
        match name {
            DEFAULT_STORAGE_CLASS => self.storage_plugins.default_class = false,
            STORAGE_OBJECT_IN_USE_PROTECTION => self.storage_plugins.in_use_protection = false,
            _ => {}
        }
        self
    }

    /// Runs the storage plugins on an object about to be created.
    pub(crate) fn admit_storage_create(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
        obj: &mut Value,
    ) -> Result<(), Status> {
        if !info.group.is_empty() || req.subresource.is_some() || info.custom {
            return Ok(());
        }
        let plugins = self.storage_plugins;
        match info.plural.as_str() {
            "persistentvolumeclaims" => {
                if plugins.default_class && !has_class(obj) {
                    let classes = self.default_classes()?;
                    if let Some(name) = default_class(&classes) {
                        obj["spec"]["storageClassName"] = Value::from(name);
                    }
                }
                if plugins.in_use_protection {
                    add_finalizer(obj, "kubernetes.io/pvc-protection");
                }
            }
            "persistentvolumes" if plugins.in_use_protection => {
                add_finalizer(obj, "kubernetes.io/pv-protection");
            }
            _ => {}
        }
        Ok(())
    }

    /// Every StorageClass, as stored.
    fn default_classes(&self) -> Result<Vec<Value>, Status> {
        let gr = GroupResource::new("storage.k8s.io", "storageclasses");
        let list = self
            .store
            .list(&gr, &kgc_store::ListOptions::default())
            .map_err(|e| Status::internal(format!("listing StorageClasses: {e}")))?;
        Ok(list.items.iter().map(|o| o.value()).collect())
    }
}

/// `PersistentVolumeClaimHasClass`: the beta annotation or `spec.storageClassName`, even `""`.
fn has_class(claim: &Value) -> bool {
    !claim["metadata"]["annotations"][BETA_CLAIM_CLASS].is_null()
        || !claim["spec"]["storageClassName"].is_null()
}

/// `GetDefaultClass`: among the classes marked default, the newest, then the first by name.
fn default_class(classes: &[Value]) -> Option<&str> {
    classes
        .iter()
        .filter(|c| {
            IS_DEFAULT_CLASS
                .iter()
                .any(|a| c["metadata"]["annotations"][a].as_str() == Some("true"))
        })
        .map(|c| {
            let created = c["metadata"]["creationTimestamp"]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .unwrap_or_default();
            (created, c["metadata"]["name"].as_str().unwrap_or_default())
        })
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, name)| name)
}

fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let meta = &mut obj["metadata"];
    if !meta["finalizers"].is_array() {
        meta["finalizers"] = Value::Array(Vec::new());
    }
    if let Some(list) = meta["finalizers"].as_array_mut()
        && !list.iter().any(|f| f == finalizer)
    {
        list.push(Value::from(finalizer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(name: &str, created: &str, default: Option<&str>) -> Value {
        let mut c = json!({"metadata": {"name": name, "creationTimestamp": created}});
        if let Some(d) = default {
            c["metadata"]["annotations"] = json!({IS_DEFAULT_CLASS[0]: d});
        }
        c
    }

    #[test]
    fn the_newest_default_wins_then_the_first_name() {
        let t1 = "2026-01-01T00:00:00Z";
        let t2 = "2026-02-01T00:00:00Z";
        assert_eq!(default_class(&[]), None);
        assert_eq!(default_class(&[class("a", t1, None)]), None);
        assert_eq!(default_class(&[class("a", t1, Some("True"))]), None);
        let classes = [
            class("old", t1, Some("true")),
            class("zeta", t2, Some("true")),
            class("beta", t2, Some("true")),
            class("newest-not-default", "2026-03-01T00:00:00Z", None),
        ];
        assert_eq!(default_class(&classes), Some("beta"));
        let mut beta = class("b", t2, None);
        beta["metadata"]["annotations"] = json!({IS_DEFAULT_CLASS[1]: "true"});
        assert_eq!(
            default_class(&[class("old", t1, Some("true")), beta]),
            Some("b")
        );
    }

    #[test]
    fn a_claim_naming_a_class_or_empty_keeps_it() {
        assert!(!has_class(&json!({"spec": {}})));
        assert!(has_class(&json!({"spec": {"storageClassName": ""}})));
        assert!(has_class(
            &json!({"metadata": {"annotations": {BETA_CLAIM_CLASS: "x"}}, "spec": {}})
        ));
    }

    #[test]
    fn finalizers_are_added_once() {
        let mut o = json!({"metadata": {"finalizers": ["a"]}});
        add_finalizer(&mut o, "kubernetes.io/pvc-protection");
        add_finalizer(&mut o, "kubernetes.io/pvc-protection");
        assert_eq!(
            o["metadata"]["finalizers"],
            json!(["a", "kubernetes.io/pvc-protection"])
        );
        let mut o = json!({"metadata": {}});
        add_finalizer(&mut o, "kubernetes.io/pv-protection");
        assert_eq!(
            o["metadata"]["finalizers"],
            json!(["kubernetes.io/pv-protection"])
        );
    }
}
